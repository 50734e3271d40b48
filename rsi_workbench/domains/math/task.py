"""Shared types for discovery tasks: an exact evaluation, one attempt's result, the task protocol."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np


@dataclass(frozen=True)
class Evaluation:
    """An exact evaluator's verdict: ``score`` is higher-is-better, ``value`` the task's own objective."""

    score: float | None
    value: float | None
    valid: bool
    reason: str = ""


@dataclass(frozen=True)
class AttemptResult:
    """One generate-and-evaluate attempt: the candidate ``state`` and its evaluation or error.

    ``fail_class`` is the raw outcome label: ``None`` (valid), ``"invalid"`` (ran cleanly but the
    candidate failed validity — a weak result, not a failure), ``"optimizer_failure"``,
    ``"timeout"`` or ``"exception"`` (real failures, with ``error`` set).
    """

    state: Any
    evaluation: Evaluation | None
    error: str = ""
    fail_class: str | None = None
    move: str = ""
    seconds: float = 0.0
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def valid(self) -> bool:
        return self.evaluation is not None and self.evaluation.valid and not self.error

    @property
    def score(self) -> float | None:
        return None if self.evaluation is None else self.evaluation.score


@runtime_checkable
class DiscoveryTask(Protocol):
    """A discovery task: an exact evaluator plus the built-in agent's one-attempt move."""

    @property
    def name(self) -> str: ...

    @property
    def direction(self) -> str:
        """``"max"`` or ``"min"`` for ``value``; ``score`` is always higher-is-better."""
        ...

    @property
    def best_known(self) -> float | None: ...

    def evaluate(self, solution: Any) -> Evaluation: ...

    def attempt(self, parent_state: Any, seed: int) -> AttemptResult: ...


def run_attempt(task: DiscoveryTask, parent_state: Any, seed: int) -> AttemptResult:
    """Module-level entry point so process-pool workers can run one attempt (picklable).

    BLAS is limited to one thread: the optimisers' small dense solves run 4-10x faster that way,
    and W attempts already run in parallel.
    """
    from threadpoolctl import threadpool_limits

    if parent_state is not None and not isinstance(parent_state, str):  # a program's state is its text
        parent_state = np.asarray(parent_state, dtype=float)
    with threadpool_limits(limits=1, user_api="blas"):
        return task.attempt(parent_state, seed)
