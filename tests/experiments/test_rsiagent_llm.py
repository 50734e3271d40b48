"""RSIAgent's model roles with a scripted model test double: bounded memory in the actor's prompt,
validated memory edits, the verifier's fail-closed parsing, the curriculum's handoff text, transport
errors as InfraFailure, and calls recorded on a run."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from rsi_workbench.config import ConfigError, validate_config
from rsi_workbench.memory import (
    CurriculumRequest,
    Evidence,
    InfraFailure,
    MemoryTree,
    OutcomeSummary,
    Project,
    VerifierReport,
)
from rsi_workbench.memory.handoff import HandoffError, parse_handoff
from rsi_workbench.memory.llm_roles import (
    LLMActor,
    LLMCurriculum,
    LLMRoles,
    LLMVerifier,
    open_llm_roles,
    parse_edits,
    parse_verdict,
    select_memory,
)
from rsi_workbench.models import ChatResult, ModelError


class ScriptedModelDouble:
    """Test double for ``models.LLM``: answers from a fixed script in order (or raises ``error``),
    keeping every prompt it was sent."""

    identity = "double:scripted"
    name = "scripted"

    def __init__(self, answers: Sequence[str] = (), error: Exception | None = None):
        self.answers, self.error = list(answers), error
        self.prompts: list[str] = []

    def chat(self, messages: Sequence[Any], *, n: int = 1, **_: Any) -> ChatResult:
        if self.error is not None:
            raise self.error
        self.prompts.append(messages[-1]["content"])
        texts = [self.answers.pop(0) if self.answers else "no idea" for _ in range(n)]
        return ChatResult(texts, ["stop"] * n, 10, 10 * n, 0.0, self.identity, self.name)


class TextWorkspaceDouble:
    """Test double for a text workspace: records the answer it was asked to run."""

    answer_format = "Answer with one line."

    def __init__(self) -> None:
        self.answers: list[str] = []

    def observe(self) -> str:
        return "a page with a button OK"

    def act(self, answer: str) -> tuple[Evidence, dict[str, Any]]:
        self.answers.append(answer)
        return Evidence("click OK", {"clicked": "OK"}, {"actions": [answer]}), {"ran": answer}

    def close(self) -> None:
        pass


MEMORY = MemoryTree(
    {
        "procedures/click-ok.md": "to click OK: click(ok)",
        "facts/page.md": "the page has one button",
        "lessons/old.md": "x" * 5000,
    }
)
PROJECT = Project("click-ok", "click the OK button")


def test_actor_prompt_holds_a_bounded_memory_and_the_transcript_names_the_files_shown() -> None:
    model = ScriptedModelDouble(["click(ok)"])
    actor = LLMActor(model, memory_files=2, memory_chars=2000, file_chars=100)
    ws = TextWorkspaceDouble()
    att = actor.attempt(PROJECT, ws, MEMORY, VerifierReport("FAIL", ("OK not clicked",)))
    assert ws.answers == ["click(ok)"] and att.calls == 1
    assert att.private["memory_shown"] == [
        "facts/page.md",
        "procedures/click-ok.md",
    ]  # most shared words first
    prompt = model.prompts[0]
    assert "click the OK button" in prompt and "to click OK" in prompt and "OK not clicked" in prompt
    assert "xxxxx" not in prompt and "2 of 3 files shown" in prompt
    text, shown, _ = select_memory(MEMORY, "button", files=5, chars=50, file_chars=40)
    assert len(text) <= 50 and len(shown) == 1
    assert select_memory(None, "q")[0] == "(no access)"


def test_memory_edits_are_validated_entry_by_entry() -> None:
    answer = (
        'Sure: {"write": {"procedures/a.md": "do A", "../escape.md": "x", "/abs.md": "y", "b.md": 3},'
        ' "delete": ["facts/page.md", "missing.md"], "extra": 1}'
    )
    e = parse_edits(answer, MEMORY)
    assert e.writes == {"procedures/a.md": "do A"} and e.deletes == ("facts/page.md",)
    assert len(e.errors) == 5  # unknown key, two bad paths, non-text content, missing delete
    assert parse_edits("no json here", MEMORY).errors == ("no JSON object in the answer",)
    big = parse_edits('{"write": {"a.md": "' + "z" * 50 + '"}}', MEMORY, max_bytes=10)
    assert big.writes == {} and "more than 10 bytes" in big.errors[0]


def test_distil_then_reconcile_and_unverified_writes_nothing() -> None:
    model = ScriptedModelDouble(
        [
            "click(ok)",
            '{"write": {"procedures/ok.md": "click(ok) works"}, "delete": []}',
            '{"delete": ["lessons/old.md"]}',
        ]
    )
    actor = LLMActor(model)
    att = actor.attempt(PROJECT, TextWorkspaceDouble(), MEMORY, None)
    out = actor.distil(att, VerifierReport("PASS", ("OK clicked",)), MEMORY)
    assert out.read_text("procedures/ok.md") == "click(ok) works" and "lessons/old.md" not in out
    assert [s["step"] for s in actor.edit_log] == ["rsiagent_distil", "rsiagent_reconcile"]
    assert "OK clicked" in model.prompts[1] and "click(ok)" in model.prompts[1]
    n = len(model.prompts)
    assert actor.distil(att, VerifierReport("UNVERIFIED", ("no DOM",)), MEMORY) is MEMORY
    assert len(model.prompts) == n  # no model call: nothing evidence-backed to write


def test_verifier_sees_evidence_only_and_fails_closed() -> None:
    ev = Evidence("click OK", {"clicked": "OK"}, {"actions": ["click(ok)"]})
    model = ScriptedModelDouble(
        [
            '{"verdict": "PASS", "evidence": ["clicked is OK"]}',
            "Looks good to me, PASS!",
            '{"verdict": "PASS", "evidence": []}',
            '{"verdict": "MAYBE", "evidence": ["?"]}',
            '```json\n{"verdict": "fail", "evidence": "button not clicked"}\n```',
        ]
    )
    ver = LLMVerifier(model)
    got = [ver.verify(PROJECT, ev) for _ in range(5)]
    assert [r.verdict for r in got] == ["PASS", "UNVERIFIED", "UNVERIFIED", "UNVERIFIED", "FAIL"]
    assert "unparseable" in got[1].evidence[0] and "without evidence" in got[2].evidence[0]
    assert got[4].evidence == ("button not clicked",)
    assert "click OK" in model.prompts[0] and "procedures/" not in model.prompts[0]
    assert parse_verdict("").verdict == "UNVERIFIED"


def test_curriculum_answer_goes_to_the_engine_as_json_or_raw_text() -> None:
    req = CurriculumRequest(
        "broad",
        1,
        (Project("t1", "click the OK button", True),),
        None,
        (OutcomeSummary("p1", "click a button", "PASS", "broad", 0),),
    )
    good = 'Plan:\n{"decision": "WAVE", "rationale": "basics", "projects": [{"id": "p2", "instruction": "click Cancel"}]}'
    model = ScriptedModelDouble([good, "I think we should practise clicking."])
    cur = LLMCurriculum(model, accepts="click tasks")
    h = parse_handoff(cur.author(req))
    assert h.decision == "WAVE" and h.projects[0].id == "p2"
    with pytest.raises(HandoffError):
        parse_handoff(cur.author(req))
    assert '"additionalProperties"' in model.prompts[0] and "(no access)" in model.prompts[0]
    assert "p1 (broad wave 0): PASS" in model.prompts[0]


def test_transport_errors_are_infra_failures_for_every_role() -> None:
    broken = ScriptedModelDouble(error=ModelError("server 503"))
    ev = Evidence("r", {}, {})
    with pytest.raises(InfraFailure, match="503"):
        LLMVerifier(broken).verify(PROJECT, ev)
    with pytest.raises(InfraFailure):
        LLMActor(broken).attempt(PROJECT, TextWorkspaceDouble(), MEMORY, None)
    with pytest.raises(InfraFailure):
        LLMCurriculum(broken).author(CurriculumRequest("deep", 2, (), MEMORY, ()))


def test_roles_from_config_record_their_calls_on_the_run(tmp_path) -> None:
    from rsi_workbench.records import Run

    block = {"model": {"name": "default"}, "temperature": 0.0, "max_tokens": 32}
    roles = validate_config(
        {"actor": block, "verifier": block, "memory_files": 3}, LLMRoles, source="cfg.yaml"
    )
    assert sorted(roles.active()) == ["actor", "verifier"]
    with pytest.raises(ConfigError):
        validate_config({"critic": block}, LLMRoles, source="cfg.yaml")
    run = Run.create(tmp_path / "run", {"t": 1}, kind="test")
    model = ScriptedModelDouble(["click(ok)", '{"verdict": "PASS", "evidence": ["ok"]}'])
    opened = open_llm_roles(roles, run, backend=model)
    assert "curriculum" not in opened
    actor = opened["actor_factory"]()
    assert actor.memory_files == 3 and actor is not opened["actor_factory"]()
    att = actor.attempt(PROJECT, TextWorkspaceDouble(), MEMORY, None)
    assert opened["verifier"].verify(PROJECT, att.evidence).verdict == "PASS"
    calls = run.events("model_call")
    assert [e.payload["role"] for e in calls] == ["actor", "verifier"]
    run.close()


def test_apply_llm_roles_keeps_builtin_roles_and_refuses_an_actor_without_a_text_workspace() -> None:
    from rsi_workbench.memory.llm_roles import apply_llm_roles

    class EnvDouble:
        """Test double: an environment whose workspaces have no observe/act."""

        name = "pages"
        accepts = "click tasks"

    block = {"model": {"name": "default"}}
    builtin = (EnvDouble(), "actor-factory", "verifier", "curriculum")
    with pytest.raises(ValueError, match="no text interface"):
        apply_llm_roles(
            LLMRoles.model_validate({"actor": block}), builtin, None, backend=ScriptedModelDouble()
        )
    roles = LLMRoles.model_validate({"curriculum": block})
    env, factory, verifier, cur = apply_llm_roles(roles, builtin, None, backend=ScriptedModelDouble())
    assert (factory, verifier) == ("actor-factory", "verifier")
    assert isinstance(cur, LLMCurriculum) and cur.accepts == "click tasks"
