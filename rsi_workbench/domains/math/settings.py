"""A math task's settings block (``task:`` of the ``dreaming`` and ``program_agent`` configs) and
the target score a report counts calls to."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from rsi_workbench.config import StrictModel
from rsi_workbench.domains.math.autocorrelation import FirstAutocorrelation, ThirdAutocorrelation
from rsi_workbench.domains.math.circle_packing import CirclePacking
from rsi_workbench.domains.math.task import DiscoveryTask


class TaskConfig(StrictModel):
    """Which discovery task, and how much local optimisation one attempt may do."""

    kind: Literal["circle_packing", "autocorrelation", "autocorrelation_c3"] = "circle_packing"
    n: int = Field(default=26, ge=2, le=200, description="circles (circle_packing)")
    m: int = Field(
        default=60, ge=2, le=2000, description="step heights (autocorrelation, autocorrelation_c3)"
    )
    maxiter: int = Field(default=150, ge=1, le=5000, description="local optimiser iterations per attempt")
    time_limit: float = Field(default=5.0, gt=0, description="seconds per attempt before a timeout failure")

    def make(self) -> DiscoveryTask:
        """The task this block names."""
        if self.kind == "circle_packing":
            return CirclePacking(n=self.n, maxiter=self.maxiter, time_limit=self.time_limit)
        if self.kind == "autocorrelation_c3":
            return ThirdAutocorrelation(m=self.m, maxiter=self.maxiter)
        return FirstAutocorrelation(m=self.m, maxiter=self.maxiter)


def target_score(task: DiscoveryTask, fraction: float) -> float | None:
    """The score (higher is better) at ``fraction`` of the best-known value."""
    if task.best_known is None:
        return None
    return fraction * task.best_known if task.direction == "max" else -task.best_known / fraction


__all__ = ["TaskConfig", "target_score"]
