"""Agent protocols that domains and roles talk to, so real models swap in for built-in ones.

Every protocol has a built-in deterministic implementation in the domain or engine that needs it
(e.g. ``domains.code_repair.MutationCoder``). ``LLM`` is :class:`rsi_workbench.models.LLM`:
``chat(messages, *, n, temperature, top_p, max_tokens, stop, seed) -> ChatResult`` (texts, token
counts, finish reasons, latency, backend and model) and ``score(prompt, continuations, *, end)``
where the backend can; ``models.open_model(ModelConfig(...))`` gives a recorded local or HTTP model.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from rsi_workbench.models.interface import LLM, ChatResult, Message

Preference = Literal["a", "b", "tie", "abstain"]


@dataclass(frozen=True)
class Candidate:
    """One proposed action: for code repair the full candidate ``program`` and its unified ``diff``."""

    program: str
    diff: str = ""
    meta: dict[str, Any] = field(default_factory=dict)


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


__all__ = ["LLM", "Candidate", "ChatResult", "Coder", "Judge", "Message", "Preference", "Proposer"]
