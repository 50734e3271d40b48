"""Prediction-quality metrics M_d over prediction/observation units, as the protocol records them.

A unit is one class-probability vector with its observed class (for code repair: one
candidate–test pair over the five statuses AC/WA/TLE/RE/CE). Ranking accuracy works on groups of
candidates proposed at the same state. Every function is :mod:`rsi_workbench.metrics` (the one
copy; its docstring records the ECE-bin and tie decisions and the metrics versions) with the
protocol's convention that "no units" is ``None`` rather than NaN. ``version`` is the run's
``metrics_version``; the default is the current one.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from rsi_workbench import metrics as M
from rsi_workbench.metrics import METRICS_VERSION, metrics_version_of

__all__ = [
    "METRICS_VERSION",
    "brier",
    "ece",
    "gaussian_nll",
    "mean_abs_z",
    "mean_absolute_error",
    "metrics_version_of",
    "nll",
    "ranking_accuracy",
]


def _none(x: float) -> float | None:
    return None if math.isnan(x) else x


def brier(probs: Sequence[Sequence[float]], labels: Sequence[int]) -> float | None:
    """Multi-class Brier score (:func:`rsi_workbench.metrics.brier`); None without units."""
    return None if len(labels) == 0 else M.brier(probs, labels)


def ece(
    probs: Sequence[Sequence[float]],
    labels: Sequence[int],
    n_bins: int = 10,
    *,
    version: int = METRICS_VERSION,
) -> float | None:
    """Top-label expected calibration error (:func:`rsi_workbench.metrics.ece`, bins by ``version``);
    None without units."""
    return None if len(labels) == 0 else M.ece(probs, labels, n_bins, version=version)


def nll(probs: Sequence[Sequence[float]], labels: Sequence[int], eps: float = 1e-12) -> float | None:
    """Mean negative log-likelihood (:func:`rsi_workbench.metrics.nll`); None without units."""
    return None if len(labels) == 0 else M.nll(probs, labels, eps=eps)


def ranking_accuracy(
    groups: Sequence[Sequence[tuple[float, float]]], *, version: int = METRICS_VERSION
) -> float | None:
    """Within each group of (predicted utility, observed utility): the share of pairs with different
    observed utility ordered the same way, prediction ties ½ (:func:`rsi_workbench.metrics.ranking_accuracy`,
    ties by ``version``). None when no group has such a pair."""
    return _none(M.ranking_accuracy(groups, version=version))


def gaussian_nll(units: Sequence[tuple[float, float, float]], min_std: float = 1e-6) -> float | None:
    """Mean negative log-likelihood of observed values under N(mean, std²); None without units."""
    return None if len(units) == 0 else M.gaussian_nll(units, min_std)


def mean_absolute_error(units: Sequence[tuple[float, float, float]]) -> float | None:
    """Mean |y − ŷ| over (mean, std, y) units; None without units."""
    return None if len(units) == 0 else M.mean_absolute_error(units)


def mean_abs_z(units: Sequence[tuple[float, float, float]], min_std: float = 1e-9) -> float | None:
    """Mean |y − ŷ| / σ̂ (≈ 0.8 for a calibrated Gaussian; larger means overconfident); None without units."""
    return None if len(units) == 0 else M.mean_abs_z(units, min_std)
