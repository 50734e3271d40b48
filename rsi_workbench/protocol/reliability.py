"""Tri-state reliability of the current predictor, Reliability(W; H_k, K_k) ∈ {reliable, unreliable,
insufficient} (eq. 10), for class readouts (Brier, ECE), binary readouts (Brier and binned
calibration of one predicted probability against its observed 0/1 outcome) and Gaussian readouts
(MAE, mean |z|).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

from pydantic import Field, field_validator

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
    criteria: ReliabilityCriteria | RegressionReliabilityCriteria | BinaryReliabilityCriteria,
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


class BinaryReliabilityCriteria(StrictModel):
    """Declared criteria of Reliability(W; H_k, K_k) for a binary readout (``readout: binary``): a
    unit is one executed candidate's predicted probability p of the utility term ``term`` (code
    repair: P(all public tests pass)) with its observed 0/1 outcome y. The paper gives no bins or
    thresholds; these are declared here (all overridable)."""

    term: str = Field(default="p_all_pass", description="the predicted probability and observed 0/1 term")
    min_predictions: int = Field(
        default=20, ge=1, description="below this many evaluated units in scope: insufficient"
    )
    min_groups: int = Field(
        default=3, ge=1, description="below this many distinct tasks covered: insufficient"
    )
    bins: list[float] = Field(
        default_factory=lambda: [0.0, 0.05, 0.15, 0.3, 0.5, 1.0],
        description="edges of the calibration bins on p (from 0 to 1, increasing; a bin is [lo, hi), "
        "the last [lo, 1])",
    )
    max_brier: float = Field(default=0.25, description="binary Brier mean (p − y)² above this: unreliable")
    max_ece: float = Field(
        default=0.1,
        description="binned calibration error Σ_b n_b/n |mean p_b − mean y_b| above this: unreliable",
    )

    @field_validator("bins")
    @classmethod
    def _edges(cls, v: list[float]) -> list[float]:
        if len(v) < 2 or v[0] != 0.0 or v[-1] != 1.0 or any(b <= a for a, b in zip(v, v[1:], strict=False)):
            raise ValueError(f"bins must increase from 0.0 to 1.0 with at least one bin, got {v}")
        return v


def binary_calibration(
    pairs: Sequence[tuple[float, float]], bins: Sequence[float]
) -> tuple[float | None, list[dict[str, float]]]:
    """The binned calibration error of (p, y) pairs over the declared edges, and the bins it saw
    (lo, hi, n, mean p, mean y); None without pairs."""
    if not pairs:
        return None, []
    rows: list[dict[str, float]] = []
    err = 0.0
    for i, (lo, hi) in enumerate(zip(bins, bins[1:], strict=False)):
        last = i == len(bins) - 2
        mine = [(p, y) for p, y in pairs if lo <= p < hi or (last and p == hi)]
        if not mine:
            continue
        mp = sum(p for p, _ in mine) / len(mine)
        my = sum(y for _, y in mine) / len(mine)
        err += len(mine) / len(pairs) * abs(mp - my)
        rows.append({"lo": lo, "hi": hi, "n": float(len(mine)), "mean_p": mp, "mean_y": my})
    return err, rows


def binary_reliability(
    units: Sequence[tuple[str, str, Sequence[float], int]],
    version: str,
    criteria: BinaryReliabilityCriteria,
) -> ReliabilityVerdict:
    """ρ_k^W (eq. 10) for a binary readout from (task, version, [p, 1 − p], label) units, label 0
    meaning the outcome happened (y = 1): the binary Brier and the binned calibration error over
    ``criteria.bins``. As :func:`reliability`, only ``version``'s units count and too few is
    *insufficient*; a readout that predicts only this one probability can be *reliable*."""
    mine = [u for u in units if u[1] == version]
    n, groups = len(mine), len({u[0] for u in mine})
    pairs = [(float(u[2][0]), float(int(u[3]) == 0)) for u in mine]
    err, bins = binary_calibration(pairs, criteria.bins)
    m: dict[str, Any] = {
        "brier": sum((p - y) ** 2 for p, y in pairs) / n if n else None,
        "ece": err,
        "base_rate": sum(y for _, y in pairs) / n if n else None,
        "mean_p": sum(p for p, _ in pairs) / n if n else None,
    }
    v = _verdict(
        m,
        {"brier": criteria.max_brier, "ece": criteria.max_ece},
        n,
        groups,
        len(units) - n,
        version,
        criteria,
    )
    v.metrics["bins"] = bins  # type: ignore[assignment]
    return v


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
