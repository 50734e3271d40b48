"""The one interface every language model stands behind: chat (n samples) and log-probability scoring.

``agents.LLM`` is this :class:`LLM` Protocol. A backend (``TransformersLM``, ``OpenAILM``) or a test
double implements ``chat`` and, where it can, ``score``; :class:`~rsi_workbench.models.record.RecordedLLM`
wraps any of them so that every call is an event, replayable and charged to the run's budgets.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

Role = Literal["system", "user", "assistant", "tool"]


@dataclass(frozen=True)
class Message:
    """A chat message (OpenAI-style); ``tool_call`` holds ``{"name": ..., "arguments": {...}}`` if any."""

    role: Role
    content: str
    tool_call: dict[str, Any] | None = None


MessageLike = Message | Mapping[str, Any]


@dataclass(frozen=True)
class ChatResult:
    """What one chat call returned: ``n`` texts, token counts (prompt once, completions summed),
    finish reasons (``stop`` or ``length``), latency, and which backend and model answered.

    ``truncated_tokens`` counts prompt tokens dropped by the backend's declared truncation rule;
    ``replayed`` is True when the answer came from a run's records instead of the model.
    """

    texts: list[str]
    finish_reasons: list[str]
    prompt_tokens: int
    completion_tokens: int
    latency_s: float
    backend: str
    model: str
    truncated_tokens: int = 0
    replayed: bool = False
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def text(self) -> str:
        """The first sample's text."""
        return self.texts[0]

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def message(self, i: int = 0) -> Message:
        """Sample ``i`` as an assistant :class:`Message`."""
        return Message("assistant", self.texts[i])

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class ModelError(RuntimeError):
    """A model call failed; the message names the backend (server redacted) and the model."""


class Unsupported(ModelError):
    """The backend cannot do this (e.g. scoring on a server without log-probabilities)."""


class ReplayMissing(ModelError):
    """``replay: true`` and the run has no recorded answer for this request (never a silent call)."""


@runtime_checkable
class LLM(Protocol):
    """A language model: chat messages in, ``n`` sampled texts out; ``score`` gives
    ``log p(continuation | prompt)`` (plus the end token when ``end``) where the backend can,
    and raises :class:`Unsupported` where it cannot. ``json_schema`` asks for schema-constrained
    decoding: only backends with ``json_schema`` in their ``capabilities`` take it (callers check;
    see :func:`check_json_schema`)."""

    def chat(
        self,
        messages: Sequence[MessageLike],
        *,
        n: int = 1,
        temperature: float = 0.0,
        top_p: float = 1.0,
        max_tokens: int = 512,
        stop: Sequence[str] | None = None,
        seed: int | None = None,
        json_schema: Mapping[str, Any] | None = None,
    ) -> ChatResult: ...

    def score(self, prompt: str, continuations: Sequence[str], *, end: bool = False) -> list[float]: ...


class BatchedChat:
    """``chat`` as one conversation of ``chat_batch``, for the classes that batch (the local backend,
    the recording wrapper); they define ``chat_batch`` with the same keyword parameters."""

    def chat(
        self,
        messages: Sequence[MessageLike],
        *,
        n: int = 1,
        temperature: float = 0.0,
        top_p: float = 1.0,
        max_tokens: int = 512,
        stop: Sequence[str] | None = None,
        seed: int | None = None,
        json_schema: Mapping[str, Any] | None = None,
    ) -> ChatResult:
        return self.chat_batch(  # type: ignore[attr-defined, no-any-return]
            [messages],
            n=n,
            temperature=temperature,
            top_p=top_p,
            max_tokens=max_tokens,
            stop=stop,
            seed=seed,
            json_schema=json_schema,
        )[0]


def as_message(m: MessageLike) -> Message:
    """A :class:`Message` from a Message or an OpenAI-style dict."""
    if isinstance(m, Message):
        return m
    role = m.get("role")
    if role not in ("system", "user", "assistant", "tool"):
        raise ValueError(f"message role must be system, user, assistant or tool, got {role!r}")
    return Message(role, str(m.get("content") or ""), m.get("tool_call"))


def message_dict(m: MessageLike) -> dict[str, str]:
    """The plain ``{"role", "content"}`` form sent to a chat template or server; a tool call is
    rendered into the content as JSON so that every backend sees the same text."""
    msg = as_message(m)
    content = msg.content
    if msg.tool_call is not None:
        call = json.dumps({"tool_call": msg.tool_call}, sort_keys=True, default=str)
        content = f"{content}\n{call}" if content else call
    return {"role": msg.role, "content": content}


def sampling_params(
    n: int, temperature: float, top_p: float, max_tokens: int, stop: Sequence[str] | None
) -> dict[str, Any]:
    """The validated sampling parameters of a request (part of its replay key)."""
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    if temperature < 0:
        raise ValueError(f"temperature must be >= 0, got {temperature}")
    if not 0 < top_p <= 1:
        raise ValueError(f"top_p must be in (0, 1], got {top_p}")
    if max_tokens < 1:
        raise ValueError(f"max_tokens must be >= 1, got {max_tokens}")
    return {
        "n": int(n),
        "temperature": float(temperature),
        "top_p": float(top_p),
        "max_tokens": int(max_tokens),
        "stop": list(stop or []),
    }


def request_key(kind: str, backend: str, model: str, body: Mapping[str, Any], seed: int | None) -> str:
    """sha256 of (call kind, backend identity, model, request body, seed): identical requests share it;
    the recorder adds the ordinal of the request among identical ones within the run."""
    canon = json.dumps(
        {"kind": kind, "backend": backend, "model": model, "body": body, "seed": seed},
        sort_keys=True,
        separators=(",", ":"),
        default=str,
    )
    return hashlib.sha256(canon.encode()).hexdigest()


JSON_SCHEMA = "json_schema"  # the capability: chat(..., json_schema=...) decodes under the schema


def check_json_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """``schema`` as a plain JSON object (a copy; part of the replay key), or a ValueError when it is
    not a JSON-serialisable mapping. Whether its keywords are supported is the backend's to say."""
    if not isinstance(schema, Mapping):
        raise ValueError(f"json_schema must be a JSON Schema object, got {type(schema).__name__}")
    try:
        out: dict[str, Any] = json.loads(json.dumps(dict(schema), allow_nan=False))
    except (TypeError, ValueError) as e:
        raise ValueError(f"json_schema must be JSON-serialisable: {e}") from e
    return out
