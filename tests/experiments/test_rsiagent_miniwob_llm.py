"""RSIAgent's model actor on MiniWoB++ (:mod:`rsi_workbench.domains.gui.rsiagent.miniwob_llm`) with a
scripted model test double: the action program's validation (reasons), the page as text, the config's
wiring (text workspaces, no refusal), and in one real headless browser a garbage answer recorded as a
failed attempt with its reason, then a correct program that solves the page and is distilled into
memory; the model's prompts never hold the page's reward."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from test_rsiagent import el as element_fields

from rsi_workbench.domains.gui import GuiElement, GuiObservation
from rsi_workbench.domains.gui.rsiagent.miniwob_llm import (
    ACTION_PROGRAM_SCHEMA,
    EVENT_KIND,
    InvalidProgram,
    MiniwobTextEnvironment,
    observation_text,
    parse_program,
    program_summary,
    reason_kind,
)
from rsi_workbench.memory import EMPTY, Project
from rsi_workbench.models import ChatResult

ROOT = Path(__file__).resolve().parents[2]
SOLVE = '```json\n[{"op": "check_labels", "words": {"fields_prefix": "target"}}, {"op": "submit"}]\n```'


def el(*args: Any, **kw: Any) -> GuiElement:
    """A page element as test_rsiagent's ``el`` describes it, 10x10 at the origin."""
    return GuiElement(left=0, top=0, width=10, height=10, **element_fields(*args, **kw))


class ScriptedModelDouble:
    """Test double for ``models.LLM``: answers from a fixed script in order, keeping every prompt."""

    identity = "double:scripted"
    name = "scripted"

    def __init__(self, answers: Sequence[str] = ()) -> None:
        self.answers = list(answers)
        self.prompts: list[str] = []

    def chat(self, messages: Sequence[Any], *, n: int = 1, **_: Any) -> ChatResult:
        self.prompts.append(messages[-1]["content"])
        texts = [self.answers.pop(0) if self.answers else "no idea" for _ in range(n)]
        return ChatResult(texts, ["stop"] * n, 10, 10 * n, 0.0, self.identity, self.name)


def test_parse_program_accepts_the_language_and_names_what_is_wrong() -> None:
    steps = parse_program(SOLVE)
    assert [s["op"] for s in steps] == ["check_labels", "submit"]
    assert parse_program('{"steps": [{"op": "submit"}]}') == [{"op": "submit"}]
    assert parse_program('Sure. {"op": "key", "key": "<Enter>"}') == [{"op": "key", "key": "<Enter>"}]
    bad = {
        "click the button": "no JSON list of steps",
        "[]": "no steps",
        '[{"op": "hover", "target": {"id": "x"}}]': "unknown op 'hover'",
        '[{"op": "click"}]': "missing keys ['target']",
        '[{"op": "click", "target": {"xpath": "//a"}}]': "unknown target keys ['xpath']",
        '[{"op": "type", "target": {"id": "tt"}, "value": "Bob"}]': "a value is an object",
        '[{"op": "key", "key": "<F5>"}]': "not allowed",
        "[" + ", ".join(['{"op": "submit"}'] * 13) + "]": "at most 12",
        '[{"op": "key_until", "key": "<Tab>", "until": {"target": {"id": "a"}}}]': "a condition is",
        '{"verdict": "PASS"}': "not a list of steps",
    }
    for answer, reason in bad.items():
        with pytest.raises(InvalidProgram, match=re.escape(reason)):
            parse_program(answer)
    assert (
        reason_kind("step 3.target: unknown target keys ['xpath'] (allowed: id)")
        == "step: unknown target keys"
    )
    assert reason_kind("the answer's first JSON is not a list of steps: {}") == (
        "the answer's first JSON is not a list of steps"
    )


def schema_ok(doc: Any, sch: dict[str, Any], root: dict[str, Any] = ACTION_PROGRAM_SCHEMA) -> bool:
    """The JSON Schema subset ACTION_PROGRAM_SCHEMA uses, checked here (importing jsonschema costs
    seconds: its format grammars)."""
    if "$ref" in sch:
        return schema_ok(doc, root["$defs"][sch["$ref"].rsplit("/", 1)[1]], root)
    if "anyOf" in sch:
        return any(schema_ok(doc, s, root) for s in sch["anyOf"])
    if "enum" in sch and doc not in sch["enum"]:
        return False
    kind = {"array": list, "object": dict, "string": str, "integer": int}.get(sch.get("type", ""), object)
    if not isinstance(doc, kind) or (kind is int and isinstance(doc, bool)):
        return False
    size = len(doc) if isinstance(doc, list | dict | str) else doc
    lo = sch.get("minItems", sch.get("minProperties", sch.get("minLength", sch.get("minimum"))))
    hi = sch.get("maxItems", sch.get("maxLength", sch.get("maximum")))
    if (lo is not None and size < lo) or (hi is not None and size > hi):
        return False
    if isinstance(doc, list):
        return all(schema_ok(x, sch["items"], root) for x in doc)
    if isinstance(doc, dict):
        props = sch.get("properties", {})
        if set(sch.get("required", ())) - set(doc) or (
            sch.get("additionalProperties") is False and set(doc) - set(props)
        ):
            return False
        return all(schema_ok(v, props[k], root) for k, v in doc.items())
    return True


def test_the_schema_and_the_validator_accept_every_builtin_candidate() -> None:
    from rsi_workbench.domains.gui.rsiagent.search import candidates

    page = (
        el(1, None, "body"),
        el(2, 1, "label"),
        el(3, 2, "input_checkbox", "", False, id="ch0"),
        el(-1, 2, "t", "ab"),
        el(4, 1, "input_text", "", "", id="datepicker", classes="hasDatepicker"),
        el(5, 1, "input_text", "", "", id="tags", classes="ui-autocomplete-input"),
        el(6, 1, "button", "Submit", id="subbtn"),
    )
    fields = (
        ("target 0", "ab"),
        ("month", "3"),
        ("day", "4"),
        ("year", "2010"),
        ("start", "a"),
        ("end", "b"),
    )
    found = candidates(GuiObservation("t", 0, "u", fields, page))
    assert {c.skill for c in found} >= {"checkboxes", "fill", "datepicker", "autocomplete"}
    for c in found:
        steps = [dict(s) for s in c.steps]
        assert schema_ok(steps, ACTION_PROGRAM_SCHEMA), c.id
        assert parse_program(json.dumps(steps)) == steps
    for bad in (
        [{"op": "click", "target": {}}],
        [{"op": "key", "key": "<F5>"}],
        [],
        [{"op": "submit", "x": 1}],
    ):
        assert not schema_ok(bad, ACTION_PROGRAM_SCHEMA), bad


def test_observation_text_shows_fields_and_the_element_tree() -> None:
    obs = GuiObservation(
        task="click-checkboxes",
        step=0,
        utterance="Select ab and click Submit.",
        fields=(("target 0", "ab"), ("button", "submit")),
        elements=(
            el(1, None, "body"),
            el(2, 1, "label"),
            el(3, 2, "input_checkbox", "", True, id="ch0"),
            el(-1, 2, "t", "ab"),
            el(4, 1, "input_text", "", "typed", id="tt"),
            el(5, 1, "button", "Submit", id="subbtn"),
        ),
    )
    text = observation_text(obs)
    assert 'Fields (name = value): "target 0" = "ab"; "button" = "submit"' in text
    assert '    [3] input_checkbox#ch0 [x]\n    "ab"' in text
    assert '  [4] input_text#tt value="typed"' in text and '[5] button#subbtn "Submit"' in text
    assert "reward" not in text.lower()
    assert "more elements not shown" in observation_text(obs, max_elements=2)


class SchemaModelDouble(ScriptedModelDouble):
    """Test double of a model with the ``json_schema`` capability: keeps the schema of each call."""

    capabilities = frozenset({"chat", "json_schema"})

    def __init__(self, answers: Sequence[str] = ()) -> None:
        super().__init__(answers)
        self.schemas: list[Any] = []

    def chat(self, messages: Sequence[Any], *, n: int = 1, **kw: Any) -> ChatResult:
        self.schemas.append(kw.get("json_schema"))
        return super().chat(messages, n=n)


class ProgramWorkspaceDouble:
    """Test double of a text workspace offering the action language's schema."""

    answer_format = "Answer with a JSON list of steps."
    answer_schema = ACTION_PROGRAM_SCHEMA

    def observe(self) -> str:
        return "Page: click-button"

    def act(self, answer: str) -> tuple[Any, dict[str, Any]]:
        from rsi_workbench.memory import Evidence

        return Evidence("click", {}, {"program": parse_program(answer)}), {}


def test_the_actor_decodes_its_program_under_the_action_schema_where_the_model_can() -> None:
    from rsi_workbench.memory.llm_roles import LLMActor, RoleModel

    answer = '[{"op": "submit"}]'
    model = SchemaModelDouble([answer, answer])
    LLMActor(model).attempt(Project("p", "page: click-button"), ProgramWorkspaceDouble(), EMPTY, None)
    assert model.schemas == [ACTION_PROGRAM_SCHEMA]
    plain = RoleModel.model_validate({"model": {"name": "default"}, "constrained": False})
    LLMActor(model, plain).attempt(Project("p", "page: click-button"), ProgramWorkspaceDouble(), EMPTY, None)
    assert model.schemas[-1] is None  # constrained: false is plain generation


def test_config_gives_a_model_actor_text_workspaces() -> None:
    pytest.importorskip("miniwob")
    from rsi_workbench.cli import load_experiment_config
    from rsi_workbench.experiments.rsiagent.experiment import build_arm
    from rsi_workbench.memory.llm_roles import LLMActor, apply_llm_roles

    cfg = load_experiment_config(ROOT / "configs/rsiagent/llm_miniwob.yaml")
    arm = build_arm(cfg, 0)
    assert isinstance(arm[0], MiniwobTextEnvironment) and len(arm[0].targets()) == 2
    assert not isinstance(cfg.roles, str)
    env, factory, verifier, cur = apply_llm_roles(cfg.roles, arm, None, backend=ScriptedModelDouble())
    actor = factory()
    assert isinstance(actor, LLMActor) and (actor.memory_files, actor.memory_chars) == (4, 1500)
    assert (verifier, cur) == arm[2:]  # verifier and curriculum stay built-in
    builtin = load_experiment_config(ROOT / "configs/rsiagent/smoke.yaml")
    assert not isinstance(build_arm(builtin, 0)[0], MiniwobTextEnvironment)


@pytest.mark.ui
def test_garbage_then_a_correct_program_in_a_real_browser(tmp_path: Path) -> None:
    pytest.importorskip("miniwob")
    pytest.importorskip("selenium")
    from rsi_workbench.domains.gui.browser import CHROMEDRIVER, CHROMIUM

    if not (shutil.which(CHROMIUM) and shutil.which(CHROMEDRIVER)):
        pytest.skip("Debian chromium + chromium-driver are not installed (make sysdeps)")
    from rsi_workbench.domains.gui.rsiagent.miniwob import MiniwobEnvironment
    from rsi_workbench.domains.gui.rsiagent.verifier import MiniwobVerifier
    from rsi_workbench.memory.llm_roles import LLMRoles, open_llm_roles
    from rsi_workbench.records import Run

    run = Run.create(tmp_path / "arm", {"t": 1}, kind="test")
    env = MiniwobTextEnvironment(MiniwobEnvironment([("click-checkboxes", 1)], max_actions=10))
    env.attach_run(run)
    model = ScriptedModelDouble(
        [
            "I would tick the boxes and press the button.",  # garbage: not a program
            SOLVE,
            '{"write": {"procedures/click-checkboxes.md": "check_labels with fields_prefix target, then submit"}}',
            '{"write": {}, "delete": []}',
        ]
    )
    roles = LLMRoles.model_validate({"actor": {"model": {"name": "default"}}})
    actor = open_llm_roles(roles, run, backend=model)["actor_factory"]()
    project = Project("cb-practice", "page: click-checkboxes; seed: 41")
    ws = env.open(project, seed=1, purpose="practice")
    try:
        first = actor.attempt(project, ws, EMPTY, None)
        rep1 = MiniwobVerifier().verify(project, first.evidence)
        second = actor.attempt(project, ws, EMPTY, rep1)
        rep2 = MiniwobVerifier().verify(project, second.evidence)
        score = env.official_score(ws)  # host side only
    finally:
        ws.close()
    assert rep1.verdict == "FAIL"
    assert any("invalid action program: no JSON list of steps" in line for line in rep1.evidence)
    assert first.private["details"]["invalid"] and first.private["details"]["program"] is None
    assert rep2.verdict == "PASS" and score == 1.0
    assert second.evidence.execution["actions"][-1] == {"type": "submit"}
    assert "not a valid program: no JSON list" in model.prompts[1]  # its history within the task
    memory = actor.distil(second, rep2, EMPTY)
    assert memory.read_text("procedures/click-checkboxes.md").startswith("check_labels")
    for prompt in model.prompts:
        assert "reward" not in prompt.lower()
    recs = [e.payload for e in run.events(EVENT_KIND)]
    assert [r["valid"] for r in recs] == [False, True] and "no JSON list" in recs[0]["reason"]
    assert not any("reward" in k for r in recs for k in r)
    assert [e.payload["role"] for e in run.events("model_call")] == ["actor"] * 4
    summary = program_summary(run.events())
    assert summary["attempts"] == 2 and summary["valid"] == 1 and summary["ended_by_page"] == 1
    assert summary["invalid_by_reason"] == {"no JSON list of steps in the answer": 1}
    run.close()
