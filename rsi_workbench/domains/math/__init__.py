"""Discovery tasks with exact evaluators and a built-in SciPy discovery agent (Dream-RSI's domains).

``CirclePacking(n)`` (sum of radii in the unit square, containment + non-overlap with an explicit
tolerance) and ``FirstAutocorrelation(m)`` (upper bound on the first autocorrelation constant C1 via
non-negative step functions), ``ThirdAutocorrelation(m)`` (upper bound on the third constant C3,
step heights of either sign). Each task's ``attempt(parent_state, seed)`` is one real attempt:
perturbation or restart from the parent's saved state, then local optimisation with SciPy.
"""

from __future__ import annotations

from rsi_workbench.domains.math.autocorrelation import (
    FirstAutocorrelation,
    ThirdAutocorrelation,
    c1_of_steps,
    c3_of_steps,
)
from rsi_workbench.domains.math.circle_packing import BEST_KNOWN, CirclePacking, evaluate_packing
from rsi_workbench.domains.math.task import AttemptResult, DiscoveryTask, Evaluation, run_attempt

__all__ = [
    "BEST_KNOWN",
    "AttemptResult",
    "CirclePacking",
    "DiscoveryTask",
    "Evaluation",
    "FirstAutocorrelation",
    "ThirdAutocorrelation",
    "c1_of_steps",
    "c3_of_steps",
    "evaluate_packing",
    "run_attempt",
]
