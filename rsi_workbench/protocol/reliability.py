"""Tri-state reliability of the current predictor, Reliability(W; H_k, K_k) ∈ {reliable, unreliable,
insufficient} (eq. 10), for class readouts (Brier, ECE) and Gaussian readouts (MAE, mean |z|).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

from pydantic import Field

from rsi_workbench.config import StrictModel
from rsi_workbench.protocol.metrics import (
    METRICS_VERSION,
    brier,
    ece,
    gaussian_nll,
    mean_abs_z,
    mean_absolute_error,
)

Reliability = Literal["reliable", "unreliable", "insufficient"]


class ReliabilityCriteria(StrictModel):
    """Declared criteria of Reliability(W; H_k, K_k) with shipped defaults (all overridable)."""

    min_predictions: int = Field(
        default=20, ge=1, description="below this many evaluated units in scope: insufficient"
    )
    min_groups: int = Field(
        default=3, ge=1, description="below this many distinct tasks covered: insufficient"
    )
    max_brier: float = Field(default=0.25, description="5-class Brier above this: unreliable")
    max_ece: float = Field(default=0.1, description="ECE above this: unreliable")


@dataclass(frozen=True)
class ReliabilityVerdict:
    verdict: Reliability
    version: str
    n_predictions: int
    n_groups: int
    n_excluded_other_versions: int
    metrics: dict[str, float | None]
    criteria: dict[str, Any]
    reasons: list[str]

    def to_event(self) -> dict[str, Any]:
        return asdict(self)


def reliability(
    units: Sequence[tuple[str, str, Sequence[float], int]],
    version: str,
    criteria: ReliabilityCriteria,
    *,
    metrics_version: int = METRICS_VERSION,
) -> ReliabilityVerdict:
    """ρ_k^W ∈ {reliable, unreliable, insufficient} (eq. 10) from (task, version, probs, label) units.

    Only units predicted by ``version`` are attributable to the current predictor; others are
    counted as excluded. Coverage below the declared minimum is *insufficient*, never reliable.
    ECE bins follow ``metrics_version`` (the run's; :mod:`rsi_workbench.metrics`).
    """
    mine = [u for u in units if u[1] == version]
    n, groups = len(mine), len({u[0] for u in mine})
    probs = [list(u[2]) for u in mine]
    labels = [int(u[3]) for u in mine]
    m = {"brier": brier(probs, labels), "ece": ece(probs, labels, version=metrics_version)}
    limits = {"brier": criteria.max_brier, "ece": criteria.max_ece}
    return _verdict(m, limits, n, groups, len(units) - n, version, criteria)


def _verdict(
    metrics: dict[str, float | None],
    limits: Mapping[str, float],
    n: int,
    groups: int,
    excluded: int,
    version: str,
    criteria: ReliabilityCriteria | RegressionReliabilityCriteria,
) -> ReliabilityVerdict:
    """Coverage first (too few units or tasks: insufficient), then each metric against its max."""
    reasons: list[str] = []
    if n < criteria.min_predictions:
        reasons.append(f"{n} evaluated predictions < min_predictions {criteria.min_predictions}")
    if groups < criteria.min_groups:
        reasons.append(f"{groups} tasks covered < min_groups {criteria.min_groups}")
    verdict: Reliability
    if reasons:
        verdict = "insufficient"
    else:
        for name, limit in limits.items():
            v = metrics[name] or 0.0
            if v > limit:
                reasons.append(f"{name} {v:.4f} > max_{name} {limit}")
        verdict = "unreliable" if reasons else "reliable"
    return ReliabilityVerdict(verdict, version, n, groups, excluded, metrics, criteria.model_dump(), reasons)


class RegressionReliabilityCriteria(StrictModel):
    """Declared criteria of Reliability(W; H_k, K_k) for a Gaussian (mean, std) readout."""

    min_predictions: int = Field(
        default=2,
        ge=1,
        description="below this many observed predictions of the current version: insufficient",
    )
    min_groups: int = Field(
        default=1, ge=1, description="below this many distinct tasks covered: insufficient"
    )
    max_mae: float = Field(default=10.0, gt=0, description="mean |y − ŷ| above this: unreliable")
    max_mean_abs_z: float = Field(
        default=2.0, gt=0, description="mean |y − ŷ|/σ̂ above this (overconfident): unreliable"
    )


def regression_reliability(
    units: Sequence[tuple[str, str, float, float, float]],
    version: str,
    criteria: RegressionReliabilityCriteria,
) -> ReliabilityVerdict:
    """ρ_k^W (eq. 10) for a Gaussian readout from (task, version, ŷ, σ̂, y) units.

    As :func:`reliability`: only units predicted by ``version`` count, too few is *insufficient*
    (never reliable); unreliable when the mean absolute error or the mean |z| exceeds its threshold.
    """
    mine = [u for u in units if u[1] == version]
    n, groups = len(mine), len({u[0] for u in mine})
    triples = [(float(u[2]), float(u[3]), float(u[4])) for u in mine]
    m = {
        "mae": mean_absolute_error(triples),
        "mean_abs_z": mean_abs_z(triples),
        "gaussian_nll": gaussian_nll(triples),
    }
    limits = {"mae": criteria.max_mae, "mean_abs_z": criteria.max_mean_abs_z}
    return _verdict(m, limits, n, groups, len(units) - n, version, criteria)
