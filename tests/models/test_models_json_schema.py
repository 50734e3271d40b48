"""Schema-constrained decoding (``chat(..., json_schema=...)``): a tiny random model decoded under a
schema always writes JSON valid under it; the openai client sends ``response_format``; the schema is
part of the replay key; the RSIAgent roles ask for it only where the model offers it and when
``constrained`` is on. Servers here are test doubles (``FaultyServerDouble``), the model a random one."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest

from rsi_workbench.models import ChatResult, ModelConfig, RecordedLLM, ReplayMissing, Unsupported
from rsi_workbench.models.http import ModelRequestError, OpenAILM
from rsi_workbench.models.probe import probe_server
from rsi_workbench.records import Run

jsonschema = pytest.importorskip("jsonschema")
pytest.importorskip("llguidance")

HI = [{"role": "user", "content": "hi"}]
SMALL = {
    "type": "object",
    "additionalProperties": False,
    "required": ["verdict", "score", "tags"],
    "properties": {
        "verdict": {"type": "string", "enum": ["PASS", "FAIL"]},
        "score": {"type": "integer", "minimum": 0, "maximum": 9},
        "tags": {"type": "array", "maxItems": 2, "items": {"type": "string", "pattern": "^[a-z]{1,4}$"}},
    },
}


def test_a_random_model_under_a_schema_always_writes_valid_json(tiny_lm):
    assert "json_schema" in tiny_lm.capabilities
    texts = []
    for seed in range(3):
        r = tiny_lm.chat(HI, n=2, temperature=1.0, max_tokens=80, seed=seed, json_schema=SMALL)
        assert r.finish_reasons == ["stop", "stop"] and r.meta["json_schema"] == "llguidance"
        assert "constraint_errors" not in r.meta
        texts += r.texts
    batch = tiny_lm.chat_batch(
        [HI, [{"role": "user", "content": "hello there"}]], max_tokens=80, json_schema=SMALL
    )
    texts += [b.text for b in batch]
    for t in texts:
        jsonschema.validate(json.loads(t), SMALL)
        assert list(json.loads(t)) == ["verdict", "score", "tags"]  # the schema's property order
    assert len(set(texts)) > 1  # sampled, not one fixed string
    free = tiny_lm.chat(HI, max_tokens=40, seed=0)
    with pytest.raises(json.JSONDecodeError):
        json.loads(free.text)  # the same model unconstrained writes no JSON


def test_the_handoff_decoding_schema_yields_handoffs_the_engine_accepts(tiny_lm):
    from rsi_workbench.memory.handoff import HANDOFF_SCHEMA, parse_handoff
    from rsi_workbench.memory.llm_roles import (
        handoff_decoding_schema,
        parse_verdict,
        verdict_decoding_schema,
    )

    schema = handoff_decoding_schema(1, max_tokens=40)  # 20 characters a field: a byte-level model fits
    r = tiny_lm.chat(HI, n=2, temperature=1.0, max_tokens=300, seed=1, json_schema=schema)
    assert set(r.finish_reasons) == {"stop"}
    for t in r.texts:
        jsonschema.validate(json.loads(t), HANDOFF_SCHEMA)  # tightened: valid there too
        parse_handoff(t)  # the engine's validation, unchanged
    v = tiny_lm.chat(
        HI, n=2, temperature=1.0, max_tokens=300, seed=2, json_schema=verdict_decoding_schema(40)
    )
    assert all(parse_verdict(t).checks["parsed"] for t in v.texts)
    wide = handoff_decoding_schema(3, max_tokens=160)  # ids numbered by position: duplicates cannot decode
    twice = [{"id": "1-a", "instruction": "x"}, {"id": "1-a", "instruction": "y"}]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"decision": "WAVE", "rationale": "r", "projects": twice}, wide)
    with pytest.raises(jsonschema.ValidationError):  # projects only with WAVE
        jsonschema.validate({"decision": "STALLED", "rationale": "r", "projects": twice[:1]}, wide)


def test_a_schema_llguidance_cannot_compile_is_refused_by_name(tiny_lm):
    with pytest.raises(ValueError, match="propertyNames"):
        tiny_lm.chat(HI, max_tokens=4, json_schema={"type": "object", "propertyNames": {"pattern": "^a"}})
    with pytest.raises(ValueError, match="JSON Schema object"):
        tiny_lm.chat(HI, max_tokens=4, json_schema=["not", "a", "schema"])  # type: ignore[arg-type]


def test_the_openai_client_sends_response_format(faulty_server):
    srv = faulty_server([None, (400, {"error": {"message": "response_format is not supported"}})])
    lm = OpenAILM(ModelConfig(backend="openai", name="m1", base_url=srv.base_url), sleep=lambda s: None)
    assert "json_schema" in lm.capabilities
    lm.chat(HI, json_schema={**SMALL, "title": "small verdict"})
    assert srv.requests[0]["response_format"] == {
        "type": "json_schema",
        "json_schema": {
            "name": "small_verdict",
            "schema": {**SMALL, "title": "small verdict"},
            "strict": True,
        },
    }
    with pytest.raises(ModelRequestError, match=r"127\.0\.0\.1.*'m1'.*not supported.*constrained: false"):
        lm.chat(HI, json_schema=SMALL)
    lm.chat(HI)
    assert "response_format" not in srv.requests[-1] and len(srv.requests) == 3  # a 400 is not retried


def test_the_probe_says_whether_a_server_accepts_json_schema(faulty_server):
    cfg = ModelConfig(backend="openai", name="m1", base_url="http://127.0.0.1:1/v1")
    ok = faulty_server()
    p = probe_server(cfg.model_copy(update={"base_url": ok.base_url}), cache=False, json_schema=True)
    assert p.json_schema is True and "json_schema" in p.capabilities
    assert "response_format" in ok.requests[-1]
    # requests: completions (echo), chat, chat with response_format (refused)
    no = faulty_server([None, None, (400, {"error": {"message": "unknown field response_format"}})])
    p = probe_server(cfg.model_copy(update={"base_url": no.base_url}), cache=False, json_schema=True)
    assert p.json_schema is False and "json_schema" not in p.capabilities
    assert "unknown field response_format" in p.why["json_schema"] and "accepted no" in p.summary()
    assert probe_server(cfg.model_copy(update={"base_url": ok.base_url}), cache=False).json_schema is None


class ConstrainableDouble:
    """Test double for a backend with the ``json_schema`` capability: answers ``{"n": i}`` for its
    i-th call and keeps the ``json_schema`` of every call."""

    identity = "double:constrainable"
    name = "constrainable"
    capabilities = frozenset({"chat", "json_schema"})

    def __init__(self) -> None:
        self.schemas: list[Any] = []

    def chat(self, messages: Sequence[Any], *, n: int = 1, json_schema: Any = None, **_: Any) -> ChatResult:
        self.schemas.append(json_schema)
        return ChatResult(
            [json.dumps({"n": len(self.schemas)})] * n, ["stop"] * n, 3, 3 * n, 0.0, self.identity, self.name
        )


def test_replay_keys_differ_with_and_without_a_schema(tmp_path):
    run = Run.create(tmp_path / "run", {})
    double = ConstrainableDouble()
    lm = RecordedLLM.wrap(double, run=run)
    plain = lm.chat(HI, seed=1).text
    constrained = lm.chat(HI, seed=1, json_schema=SMALL).text
    assert (plain, constrained) == ('{"n": 1}', '{"n": 2}') and double.schemas == [None, SMALL]
    events = list(run.events("model_call"))
    assert events[0].payload["key"] != events[1].payload["key"]
    assert "json_schema" not in events[0].payload and events[1].payload["json_schema"] is True
    again = RecordedLLM.wrap(double, run=run, replay=True)
    assert again.chat(HI, seed=1, json_schema=SMALL).text == constrained  # never the plain answer
    assert again.chat(HI, seed=1).text == plain
    other = {**SMALL, "required": ["verdict"]}
    with pytest.raises(ReplayMissing, match="constrained by a json_schema"):
        again.chat(HI, seed=1, json_schema=other)
    reordered = {**SMALL, "properties": dict(reversed(list(SMALL["properties"].items())))}
    with pytest.raises(ReplayMissing):  # property order is what the decoder writes: a different key
        again.chat(HI, seed=1, json_schema=reordered)
    assert double.schemas == [None, SMALL]  # nothing live
    no_cap = RecordedLLM.wrap(double, capabilities=frozenset({"chat"}))
    with pytest.raises(Unsupported, match="json_schema"):
        no_cap.chat(HI, json_schema=SMALL)
    run.close()


def test_rsiagent_roles_constrain_where_the_model_can_and_when_asked():
    from rsi_workbench.memory import Evidence, Project
    from rsi_workbench.memory.llm_roles import LLMVerifier, RoleModel, verdict_decoding_schema

    ev = Evidence("print 1", {"out": "1"}, {"ok": True})
    role = RoleModel(model=ModelConfig(), max_tokens=96)
    double = ConstrainableDouble()
    LLMVerifier(double, role).verify(Project("p", "print 1"), ev)
    LLMVerifier(double, role.model_copy(update={"constrained": False})).verify(Project("p", "print 1"), ev)
    assert double.schemas == [verdict_decoding_schema(96), None]


def test_a_verdict_whose_evidence_only_copies_the_prompts_example_is_unverified():
    from rsi_workbench.memory import Evidence, Project
    from rsi_workbench.memory.llm_roles import (
        PACKAGE,
        VERIFIER_EXAMPLE_EVIDENCE,
        LLMVerifier,
        parse_verdict,
    )
    from rsi_workbench.models.prompts import load_prompt

    assert VERIFIER_EXAMPLE_EVIDENCE in load_prompt(PACKAGE, "rsiagent_verifier").text
    copied = json.dumps(
        {"verdict": "PASS", "evidence": [VERIFIER_EXAMPLE_EVIDENCE] * 2}
    )  # SmolLM2-135M's answer
    assert parse_verdict(copied).verdict == "PASS"  # without placeholders: as before
    report = LLMVerifier(ScriptedAnswer(copied)).verify(Project("p", "x"), Evidence("x", {}, {}))
    assert report.verdict == "UNVERIFIED" and "repeat the prompt's example" in report.evidence[0]
    real = json.dumps({"verdict": "FAIL", "evidence": [VERIFIER_EXAMPLE_EVIDENCE, "3 of 8 tests failed"]})
    assert LLMVerifier(ScriptedAnswer(real)).verify(Project("p", "x"), Evidence("x", {}, {})).evidence == (
        "3 of 8 tests failed",
    )


class ScriptedAnswer:
    """Test double for a model: always answers ``text``."""

    def __init__(self, text: str) -> None:
        self.text = text

    def chat(self, messages: Sequence[Any], *, n: int = 1, **_: Any) -> ChatResult:
        return ChatResult([self.text] * n, ["stop"] * n, 1, 1, 0.0, "double:answer", "answer")
