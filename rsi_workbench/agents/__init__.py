"""Agent protocols that domains and roles talk to, so real models swap in for built-in ones.

Every protocol has a built-in deterministic implementation in the domain or engine that needs it
(e.g. ``domains.code_repair.MutationCoder``). ``LLM`` is the seam a language model will stand
behind; no model backend implements it yet (only test doubles do), so no agent is model-driven today.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

Preference = Literal["a", "b", "tie", "abstain"]


@dataclass(frozen=True)
class Candidate:
    """One proposed action: for code repair the full candidate ``program`` and its unified ``diff``."""

    program: str
    diff: str = ""
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Message:
    """A chat message (OpenAI-style); ``tool_call`` holds ``{"name": ..., "arguments": {...}}`` if any."""

    role: Literal["system", "user", "assistant", "tool"]
    content: str
    tool_call: dict[str, Any] | None = None


@runtime_checkable
class Coder(Protocol):
    """Proposes ``k`` distinct candidate programs for a task, given the kept program and feedback."""

    def propose(
        self, task: Any, program: str, feedback: Any, k: int, rng: random.Random
    ) -> list[Candidate]: ...


@runtime_checkable
class Proposer(Protocol):
    """Proposes ``k`` candidates of any kind (policy revisions, hypotheses, conditions) from a context."""

    def propose(self, context: Any, k: int, rng: random.Random) -> list[Any]: ...


@runtime_checkable
class Judge(Protocol):
    """Pairwise judgement: which of ``a`` and ``b`` is better, a tie, or abstain."""

    def compare(self, a: Any, b: Any, context: Any = None) -> Preference: ...


@runtime_checkable
class LLM(Protocol):
    """A chat model: messages in, one assistant message (possibly a tool call) out."""

    def complete(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int = 512,
        temperature: float = 0.0,
        seed: int | None = None,
    ) -> Message: ...


__all__ = ["LLM", "Candidate", "Coder", "Judge", "Message", "Preference", "Proposer"]
