"""Generic prediction-quality metrics M_d over prediction/observation units (pure functions).

A unit is one class-probability vector with its observed class (for code repair: one
candidate–test pair over the five statuses AC/WA/TLE/RE/CE). Ranking accuracy works on groups of
candidates proposed at the same state.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from rsi_workbench.world.metrics import brier_5class
from rsi_workbench.world.metrics import nll as _world_nll


def _stack(probs: Sequence[Sequence[float]], labels: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    p = np.asarray(probs, dtype=float)
    y = np.asarray(labels, dtype=int)
    if p.ndim != 2 or len(p) != len(y):
        raise ValueError(f"probs must be (n, classes) aligned with labels; got {p.shape} and {y.shape}")
    return p, y


def brier(probs: Sequence[Sequence[float]], labels: Sequence[int]) -> float | None:
    """Multi-class Brier score (:func:`rsi_workbench.world.metrics.brier_5class`); None without units."""
    if len(labels) == 0:
        return None
    return brier_5class(*_stack(probs, labels))


def ece(probs: Sequence[Sequence[float]], labels: Sequence[int], n_bins: int = 10) -> float | None:
    """Top-label expected calibration error with equal-width confidence bins; None without units.

    Bins are ``floor(conf · n_bins)`` (a confidence on an edge goes to the upper bin), as in every
    recorded reliability verdict; :func:`rsi_workbench.world.metrics.ece` uses (lo, hi] bins for the
    reliability diagram, so the two can differ for confidences exactly on a bin edge."""
    if len(labels) == 0:
        return None
    p, y = _stack(probs, labels)
    conf = p.max(axis=1)
    correct = (p.argmax(axis=1) == y).astype(float)
    bins = np.minimum((conf * n_bins).astype(int), n_bins - 1)
    total = 0.0
    for b in range(n_bins):
        m = bins == b
        if m.any():
            total += m.sum() / len(y) * abs(correct[m].mean() - conf[m].mean())
    return float(total)


def nll(probs: Sequence[Sequence[float]], labels: Sequence[int], eps: float = 1e-12) -> float | None:
    """Mean negative log-likelihood (:func:`rsi_workbench.world.metrics.nll`); None without units."""
    if len(labels) == 0:
        return None
    return _world_nll(*_stack(probs, labels), eps=eps)


def ranking_accuracy(groups: Sequence[Sequence[tuple[float, float]]]) -> float | None:
    """Within each group of (predicted utility, observed utility): fraction of candidate pairs with
    different observed utility that the prediction orders the same way (ties in prediction count ½).
    None when no group has such a pair."""
    num = 0.0
    den = 0
    for g in groups:
        for i in range(len(g)):
            for j in range(i + 1, len(g)):
                (pi, oi), (pj, oj) = g[i], g[j]
                if math.isclose(oi, oj):
                    continue
                den += 1
                if math.isclose(pi, pj):
                    num += 0.5
                elif (pi > pj) == (oi > oj):
                    num += 1.0
    return num / den if den else None


# -- regression (Gaussian) readouts: one unit = (predicted mean, predicted std, observed value) ----
def gaussian_nll(units: Sequence[tuple[float, float, float]], min_std: float = 1e-6) -> float | None:
    """Mean negative log-likelihood of observed values under N(mean, std²); None without units."""
    if len(units) == 0:
        return None
    a = np.asarray(units, dtype=float)
    mu, sd, y = a[:, 0], np.maximum(a[:, 1], min_std), a[:, 2]
    return float(np.mean(0.5 * np.log(2 * math.pi * sd**2) + 0.5 * ((y - mu) / sd) ** 2))


def mean_absolute_error(units: Sequence[tuple[float, float, float]]) -> float | None:
    """Mean |y − ŷ| over (mean, std, y) units; None without units."""
    if len(units) == 0:
        return None
    a = np.asarray(units, dtype=float)
    return float(np.mean(np.abs(a[:, 2] - a[:, 0])))


def mean_abs_z(units: Sequence[tuple[float, float, float]], min_std: float = 1e-9) -> float | None:
    """Mean |y − ŷ| / σ̂ (≈ 0.8 for a calibrated Gaussian; larger means overconfident); None without units."""
    if len(units) == 0:
        return None
    a = np.asarray(units, dtype=float)
    return float(np.mean(np.abs(a[:, 2] - a[:, 0]) / np.maximum(a[:, 1], min_std)))
