"""Quality metrics of a predictor, in the world package's array form (one copy: :mod:`rsi_workbench.metrics`).

``brier_5class`` (multi-class Brier score), ``ece`` (expected calibration error with the
reliability-diagram bins), ``nll`` (negative log-likelihood), ``ranking_accuracy`` (within each
group, does predicted utility order candidates the way observed outcomes do) and
``runtime_error`` (mean absolute error in seconds). ECE bins and ranking ties follow the current
metrics version (:data:`rsi_workbench.metrics.METRICS_VERSION`; the decision is in that module's
docstring); pass ``version=1`` for the rules of runs recorded before metrics were versioned.
"""

from __future__ import annotations

import numpy as np

from rsi_workbench import metrics as M
from rsi_workbench.metrics import METRICS_VERSION, ECEResult, ReliabilityBin

__all__ = ["ECEResult", "ReliabilityBin", "brier_5class", "ece", "nll", "ranking_accuracy", "runtime_error"]


def brier_5class(probs: np.ndarray, labels: np.ndarray) -> float:
    """Mean over rows of sum_c (p_c - 1[y = c])^2; 0 is perfect, 2 is the worst (NaN without rows)."""
    return M.brier(probs, labels)


def nll(probs: np.ndarray, labels: np.ndarray, eps: float = 1e-12) -> float:
    """Mean negative log-probability of the observed class (NaN without rows)."""
    return M.nll(probs, labels, eps=eps)


def ece(
    probs: np.ndarray, labels: np.ndarray, n_bins: int = 10, *, version: int = METRICS_VERSION
) -> ECEResult:
    """Top-label expected calibration error over equal-width confidence bins, with the bins."""
    return M.reliability_diagram(probs, labels, n_bins, version=version)


def ranking_accuracy(
    predicted: np.ndarray, observed: np.ndarray, groups: np.ndarray, *, version: int = METRICS_VERSION
) -> float:
    """Fraction of within-group pairs with different observed utility that predicted utility orders
    the same way (prediction ties count one half); NaN when no such pair exists."""
    return M.ranking_accuracy_grouped(predicted, observed, groups, version=version)


def runtime_error(predicted: np.ndarray, observed: np.ndarray) -> float:
    """Mean absolute error of predicted runtime, in seconds (rows with a NaN on either side skipped)."""
    p = np.asarray(predicted, dtype=np.float64)
    o = np.asarray(observed, dtype=np.float64)
    if p.shape != o.shape:
        raise ValueError(f"predicted and observed runtimes differ in shape: {p.shape} vs {o.shape}")
    ok = np.isfinite(p) & np.isfinite(o)
    return M.mean_absolute_error(np.stack([p[ok], np.zeros(ok.sum()), o[ok]], axis=1))
