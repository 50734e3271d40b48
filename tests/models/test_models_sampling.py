"""One sampling object (``models.Sampling``): its defaults are ``LLM.chat``'s, it validates, and the
replay/cache key of a request built through it is the key the keyword-argument code computed
(the keys below were computed before ``Sampling`` existed), so recorded runs and caches still answer."""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any

import pytest

import rsi_workbench as rw
from rsi_workbench.models import ChatResult, RecordedLLM, Sampling
from rsi_workbench.models.interface import LLM, BatchedChat, request_key, sampling_params
from rsi_workbench.models.parallel import ChatFlight, ChatRequest
from rsi_workbench.records import Run

IDENTITY, MODEL = "double:1", "m-1"
MESSAGES = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]
PROMPT = "def f(x):\n    return"
SCHEMA = {
    "type": "object",
    "properties": {"b": {"type": "integer"}, "a": {"type": "string"}},
    "required": ["b"],
}
# (call, keyword arguments, the replay key the keyword-argument recorder wrote for them)
KNOWN_KEYS: list[tuple[str, dict[str, Any], str]] = [
    ("chat", {}, "049bd3dcb05e9a21b906be654cfe16298ec7935526c4ddba406e9a8ae7235c95"),
    (
        "chat",
        dict(n=3, temperature=0.7, top_p=0.9, max_tokens=64, stop=["\n", "END"], seed=7),
        "e33621f5fd1c7d05b089f746e207b7295995539d26ecacb6b212271c920c2bf4",
    ),
    (
        "chat",
        dict(temperature=1, max_tokens=16, stop=("x",), seed=0),
        "0dd771436db5aec30b7535b27fe7162a142e1bd874e0f8d3ad3308e02b271fc9",
    ),
    (
        "chat",
        dict(seed=11, json_schema=SCHEMA),
        "f8da76e5f654ce15d30f342ec7a64e359efbfbe542b94227c21c886ab09abcf6",
    ),
    ("complete", {}, "01f02e61f7d5fec1f0265e808be369c048303992ecf3bd4f8984d8ae93c1051c"),
    (
        "complete",
        dict(n=2, temperature=0.5, top_p=0.95, max_tokens=32, stop=["\n\n"], seed=123),
        "42943f00b44d483c7959021caa0cb6c86a8f806b9d53b60c5ba37a47f1562135",
    ),
]


class _Double:
    """A backend answering every request; it records the keyword arguments it was handed."""

    identity, name = IDENTITY, MODEL
    capabilities = frozenset({"chat", "complete", "json_schema"})

    def __init__(self) -> None:
        self.kwargs: list[dict[str, Any]] = []

    def chat(self, messages: Any, **kw: Any) -> ChatResult:
        self.kwargs.append(kw)
        n = kw.get("n", 1)
        return ChatResult(["x"] * n, ["stop"] * n, 1, 1, 0.0, "d", "m")

    def complete(self, prompt: str, **kw: Any) -> ChatResult:
        return self.chat([], **kw)


@pytest.mark.parametrize(("call", "kw", "key"), KNOWN_KEYS)
def test_the_key_through_sampling_is_the_keyword_key(call: str, kw: dict[str, Any], key: str) -> None:
    sampling = Sampling(**kw)
    content: dict[str, Any] = {"messages": MESSAGES} if call == "chat" else {"prompt": PROMPT}
    assert request_key(call, IDENTITY, MODEL, sampling.key_body(**content), sampling.seed) == key


def test_the_recorder_writes_the_known_keys(tmp_path) -> None:
    run = Run.create(tmp_path / "r", {"t": 1})
    llm = RecordedLLM.wrap(_Double(), run=run)
    for call, kw, _ in KNOWN_KEYS:
        if call == "chat":
            llm.chat(MESSAGES, **kw)
        else:
            llm.complete(PROMPT, **kw)
    run.close()
    assert [e.payload["key"] for e in Run.open(tmp_path / "r").events("model_call")] == [
        k for *_, k in KNOWN_KEYS
    ]


def test_a_flight_sees_the_same_keys_and_hands_the_same_arguments(tmp_path) -> None:
    """A flight's look-ahead keys are the recorder's; a recorded flight replays without the model."""
    chats = [(kw, key) for call, kw, key in KNOWN_KEYS if call == "chat"]
    run = Run.create(tmp_path / "r", {"t": 1})
    first = _Double()
    llm = RecordedLLM.wrap(first, run=run)
    requests = [ChatRequest(MESSAGES, Sampling(**kw)) for kw, _ in chats]
    flight = ChatFlight(llm, requests)
    assert flight._needing_model(llm) == list(range(len(chats)))
    with flight:
        list(flight)
    run.close()
    assert [e.payload["key"] for e in Run.open(tmp_path / "r").events("model_call")] == [k for _, k in chats]
    again = _Double()
    replayed = RecordedLLM.wrap(again, run=Run.open(tmp_path / "r"), replay=True)
    assert ChatFlight(replayed, requests)._needing_model(replayed) == []
    assert all(replayed.chat(r.messages, **r.kwargs()).replayed for r in requests) and again.kwargs == []
    assert first.kwargs[0] == dict(n=1, temperature=0.0, top_p=1.0, max_tokens=512, stop=None, seed=None)
    assert first.kwargs[-1]["json_schema"] is SCHEMA and "json_schema" not in first.kwargs[0]


def test_defaults_are_the_chat_signature_and_the_object_is_frozen() -> None:
    params = inspect.signature(LLM.chat).parameters
    fields = {f.name: f.default for f in dataclasses.fields(Sampling)}
    assert list(fields) == [p for p in params if p not in ("self", "messages")]
    for name, default in fields.items():
        assert params[name].default == (default or None if name == "stop" else default)
    for entry in (BatchedChat.chat, BatchedChat.chat_batch):
        assert list(inspect.signature(entry).parameters)[2:] == list(fields)
    s = Sampling(stop=["\n"], temperature=1)
    assert s.stop == ("\n",) and isinstance(s.temperature, float)
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.n = 2  # type: ignore[misc]
    assert dataclasses.replace(s, seed=5).kwargs()["seed"] == 5
    assert Sampling(**s.kwargs()) == s
    assert rw.Sampling is Sampling


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        (dict(n=0), "n must be"),
        (dict(temperature=-0.1), "temperature"),
        (dict(top_p=0.0), "top_p"),
        (dict(max_tokens=0), "max_tokens"),
        (dict(stop="\n"), "stop"),
        (dict(json_schema=["not", "an", "object"]), "json_schema"),
    ],
)
def test_bad_settings_are_refused_when_built(kw: dict[str, Any], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        Sampling(**kw)


def test_sampling_params_is_the_objects_params() -> None:
    assert sampling_params(2, 0.7, 0.9, 5, ["\n"]) == Sampling(2, 0.7, 0.9, 5, ["\n"]).params()
