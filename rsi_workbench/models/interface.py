"""The one interface every language model stands behind: chat (n samples) and log-probability scoring.

``agents.LLM`` is this :class:`LLM` Protocol. A backend (``TransformersLM``, ``OpenAILM``) or a test
double implements ``chat`` and, where it can, ``score``; :class:`~rsi_workbench.models.record.RecordedLLM`
wraps any of them so that every call is an event, replayable and charged to the run's budgets.

The sampling settings of a request (``n, temperature, top_p, max_tokens, stop, seed, json_schema``)
are one :class:`Sampling`: the keyword arguments of ``chat``/``chat_batch``/``complete`` are turned
into one at the entry (:class:`BatchedChat`), and the backends, the recorder, the request flights
and the cache keys take that object.
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
    see :func:`check_json_schema`). The keyword arguments of ``chat`` are the fields of
    :class:`Sampling`, with its defaults."""

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
    """The keyword entry points of the backends and the recorder: ``chat``, ``chat_batch`` and
    ``complete`` each build one :class:`Sampling` from their keyword arguments and hand it to the
    class's ``_chat_batch(conversations, sampling)`` / ``_complete(prompt, sampling)``; ``chat`` is
    one conversation of ``chat_batch``."""

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
        """``n`` samples answering ``messages`` (the :class:`LLM` interface)."""
        sampling = Sampling(n, temperature, top_p, max_tokens, stop or (), seed, json_schema)
        return self._chat_batch([messages], sampling)[0]

    def chat_batch(
        self,
        conversations: Sequence[Sequence[MessageLike]],
        *,
        n: int = 1,
        temperature: float = 0.0,
        top_p: float = 1.0,
        max_tokens: int = 512,
        stop: Sequence[str] | None = None,
        seed: int | None = None,
        json_schema: Mapping[str, Any] | None = None,
    ) -> list[ChatResult]:
        """One request per conversation, each sampled alike (batched where the class batches)."""
        sampling = Sampling(n, temperature, top_p, max_tokens, stop or (), seed, json_schema)
        return self._chat_batch(conversations, sampling)

    def complete(
        self,
        prompt: str,
        *,
        n: int = 1,
        temperature: float = 0.0,
        top_p: float = 1.0,
        max_tokens: int = 512,
        stop: Sequence[str] | None = None,
        seed: int | None = None,
    ) -> ChatResult:
        """Plain completion of a raw prompt (no chat template, no JSON Schema)."""
        return self._complete(prompt, Sampling(n, temperature, top_p, max_tokens, stop or (), seed))

    def _chat_batch(
        self, conversations: Sequence[Sequence[MessageLike]], sampling: Sampling
    ) -> list[ChatResult]:
        raise NotImplementedError

    def _complete(self, prompt: str, sampling: Sampling) -> ChatResult:
        raise Unsupported(f"{type(self).__name__} has no plain completion")


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


@dataclass(frozen=True)
class Sampling:
    """How one request is sampled: the settings every backend, the recorder and the cache keys take
    as one object (validated when built: a ``ValueError`` names the bad field).

    The keyword arguments of ``LLM.chat`` are these fields with these defaults; a caller holding a
    ``Sampling`` passes ``llm.chat(messages, **sampling.kwargs())``, and derives a variant with
    :func:`dataclasses.replace`. The replay and cache key of a request is built from :meth:`params`,
    :attr:`seed` and the schema text (:meth:`key_body`), exactly as the keyword arguments always
    were, so recorded runs and caches keep answering.
    """

    n: int = 1
    """How many samples (texts) the request returns; at least 1."""
    temperature: float = 0.0
    """Softmax temperature, at least 0; 0 is greedy decoding (the ``n`` samples are then one text)."""
    top_p: float = 1.0
    """Nucleus sampling: sample from the most likely tokens whose probabilities add up to ``top_p``;
    in (0, 1], 1 keeps every token."""
    max_tokens: int = 512
    """The most tokens a sample may have; at least 1 (a sample cut there finishes with ``length``)."""
    stop: Sequence[str] = ()
    """Strings that end a sample (not included in its text); kept as a tuple, ``None`` is ``()``."""
    seed: int | None = None
    """The sampling seed (``None``: unseeded); part of the replay key."""
    json_schema: Mapping[str, Any] | None = None
    """A JSON Schema every sample is decoded under (``chat`` only, on a backend with the
    ``json_schema`` capability); ``None``: free text."""

    def __post_init__(self) -> None:
        if self.n < 1:
            raise ValueError(f"n must be >= 1, got {self.n}")
        if self.temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p}")
        if self.max_tokens < 1:
            raise ValueError(f"max_tokens must be >= 1, got {self.max_tokens}")
        if isinstance(self.stop, str):
            raise ValueError(f"stop must be a sequence of strings, got the string {self.stop!r}")
        object.__setattr__(self, "n", int(self.n))
        object.__setattr__(self, "temperature", float(self.temperature))
        object.__setattr__(self, "top_p", float(self.top_p))
        object.__setattr__(self, "max_tokens", int(self.max_tokens))
        object.__setattr__(self, "stop", tuple(self.stop or ()))
        if self.json_schema is not None:
            check_json_schema(self.json_schema)

    def params(self) -> dict[str, Any]:
        """The sampling parameters of the request body (part of its replay key; seed and schema apart)."""
        return {
            "n": self.n,
            "temperature": self.temperature,
            "top_p": self.top_p,
            "max_tokens": self.max_tokens,
            "stop": list(self.stop),
        }

    def schema_text(self) -> str | None:
        """The JSON Schema as compact JSON text (property order kept), or None without one."""
        if self.json_schema is None:
            return None
        return json.dumps(check_json_schema(self.json_schema), separators=(",", ":"))

    def key_body(self, **content: Any) -> dict[str, Any]:
        """The request body of the replay key (:func:`request_key`, with :attr:`seed`): ``content``
        (``messages=`` or ``prompt=``), ``params`` and, when given, the schema text."""
        body: dict[str, Any] = {**content, "params": self.params()}
        schema = self.schema_text()
        if schema is not None:
            body["json_schema"] = schema
        return body

    def kwargs(self) -> dict[str, Any]:
        """The keyword arguments of ``LLM.chat`` (``json_schema`` only when given; ``stop`` a list,
        or None when empty) — what the recorder hands a backend."""
        kw: dict[str, Any] = dict(
            n=self.n,
            temperature=self.temperature,
            top_p=self.top_p,
            max_tokens=self.max_tokens,
            stop=list(self.stop) or None,
            seed=self.seed,
        )
        if self.json_schema is not None:
            kw["json_schema"] = self.json_schema
        return kw


def sampling_params(
    n: int, temperature: float, top_p: float, max_tokens: int, stop: Sequence[str] | None
) -> dict[str, Any]:
    """The validated sampling parameters of a request: ``Sampling(...).params()``."""
    return Sampling(n, temperature, top_p, max_tokens, stop or ()).params()


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
