"""Curriculum handoff validation: every malformed turn fails with its reason."""

from __future__ import annotations

import json

import pytest

from rsi_workbench.memory import HANDOFF_SCHEMA, PROJECT_ID_PATTERN, HandoffError, parse_handoff


def _h(**kw: object) -> str:
    obj = {
        "decision": "WAVE",
        "rationale": "cover login",
        "projects": [{"id": "login-1", "instruction": "log in"}],
    }
    obj.update(kw)
    return json.dumps(obj)


def test_valid_wave_and_terminal_decisions() -> None:
    h = parse_handoff(_h())
    assert h.decision == "WAVE" and [p.id for p in h.projects] == ["login-1"] and not h.projects[0].is_target
    for d in ("SATURATED", "STALLED"):
        assert parse_handoff(_h(decision=d, projects=[])).projects == ()
    assert parse_handoff(json.dumps({"decision": "STALLED", "rationale": ""})).decision == "STALLED"


def test_fenced_json_block_is_tolerated() -> None:
    assert parse_handoff("```json\n" + _h() + "\n```").decision == "WAVE"
    assert parse_handoff("```\n" + _h() + "```").decision == "WAVE"


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("not json", "not valid JSON"),
        ("", "empty"),
        ("[1, 2]", "must be a JSON object"),
        (_h(decision="DONE"), "decision 'DONE'"),
        (_h(projects=[]), "WAVE needs at least one project"),
        (_h(decision="SATURATED"), "must come with no projects"),
        (_h(projects=[{"id": "Bad_ID", "instruction": "x"}]), "does not match"),
        (_h(projects=[{"id": "-lead", "instruction": "x"}]), "does not match"),
        (_h(projects=[{"id": "a" * 65, "instruction": "x"}]), "does not match"),
        (_h(projects=[{"id": "a", "instruction": "x"}, {"id": "a", "instruction": "y"}]), "used twice"),
        (_h(projects=[{"id": "a", "instruction": "  "}]), "non-empty string instruction"),
        (_h(projects=[{"id": "a", "instruction": "x", "score": 1}]), "unknown keys"),
        (_h(approve=True), "unknown keys"),
        (_h(rationale=3), "rationale must be a string"),
        (_h(projects={"id": "a"}), "projects must be a list"),
    ],
)
def test_failed_turns_name_their_reason(text: str, reason: str) -> None:
    with pytest.raises(HandoffError) as e:
        parse_handoff(text)
    assert reason in e.value.reason


def test_schema_states_the_same_rules() -> None:
    # (jsonschema itself is not a dependency; the schema is checked against the parser's constants)
    props = HANDOFF_SCHEMA["properties"]
    assert props["decision"]["enum"] == ["WAVE", "SATURATED", "STALLED"]
    item = props["projects"]["items"]
    assert item["properties"]["id"]["pattern"] == f"^{PROJECT_ID_PATTERN}$"
    assert HANDOFF_SCHEMA["additionalProperties"] is False and item["additionalProperties"] is False
    assert sorted(HANDOFF_SCHEMA["required"]) == ["decision", "projects", "rationale"]
