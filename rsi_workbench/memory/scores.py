"""RSIAgent's target metrics, always reported together: Partial and Binary over N targets.

``Partial = 100 · Σ s_i / N`` and ``Binary = 100 · Σ 1{s_i = 1} / N`` with ``s_i ∈ [0, 1]``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import NamedTuple


class TargetScores(NamedTuple):
    partial: float
    binary: float
    n: int


def check_score(s: float, *, who: str = "score") -> float:
    s = float(s)
    if not math.isfinite(s) or s < 0.0 or s > 1.0:
        raise ValueError(f"{who} must lie in [0, 1], got {s}")
    return s


def partial_binary(scores: Sequence[float] | Mapping[str, float]) -> TargetScores:
    """Partial and Binary (percent) of per-target scores; both NaN when there are no targets."""
    vals = [check_score(s) for s in (scores.values() if isinstance(scores, Mapping) else scores)]
    if not vals:
        return TargetScores(math.nan, math.nan, 0)
    n = len(vals)
    return TargetScores(100.0 * sum(vals) / n, 100.0 * sum(1 for s in vals if s == 1.0) / n, n)
