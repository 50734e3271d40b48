"""Quality metrics of a predictor: pure numpy functions used by the protocol and the dashboards.

``brier_5class`` (multi-class Brier score), ``ece`` (expected calibration error with the
reliability-diagram bins), ``nll`` (negative log-likelihood), ``ranking_accuracy`` (within each
group, does predicted utility order candidates the way observed outcomes do) and
``runtime_error`` (mean absolute error in seconds).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


def _check(probs: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    p = np.asarray(probs, dtype=np.float64)
    y = np.asarray(labels, dtype=np.int64)
    if p.ndim != 2 or y.shape != (p.shape[0],):
        raise ValueError(f"probs must be [N, C] and labels [N]; got {p.shape} and {y.shape}")
    if y.size and (y.min() < 0 or y.max() >= p.shape[1]):
        raise ValueError(f"labels must be in [0, {p.shape[1]}); got range [{y.min()}, {y.max()}]")
    return p, y


def brier_5class(probs: np.ndarray, labels: np.ndarray) -> float:
    """Mean over rows of sum_c (p_c - 1[y = c])^2; 0 is perfect, 2 is the worst."""
    p, y = _check(probs, labels)
    if p.shape[0] == 0:
        return float("nan")
    onehot = np.eye(p.shape[1])[y]
    return float(((p - onehot) ** 2).sum(1).mean())


def nll(probs: np.ndarray, labels: np.ndarray, eps: float = 1e-12) -> float:
    """Mean negative log-probability of the observed class."""
    p, y = _check(probs, labels)
    if p.shape[0] == 0:
        return float("nan")
    return float(-np.log(np.clip(p[np.arange(len(y)), y], eps, 1.0)).mean())


class ReliabilityBin(NamedTuple):
    lo: float
    hi: float
    n: int  # rows in the bin
    confidence: float  # mean max-probability of the rows in the bin
    accuracy: float  # fraction of those rows whose argmax is the observed class


class ECEResult(NamedTuple):
    ece: float
    bins: list[ReliabilityBin]


def ece(probs: np.ndarray, labels: np.ndarray, n_bins: int = 10) -> ECEResult:
    """Top-label expected calibration error over equal-width confidence bins, with the bins."""
    p, y = _check(probs, labels)
    bins: list[ReliabilityBin] = []
    if p.shape[0] == 0:
        return ECEResult(float("nan"), bins)
    conf = p.max(1)
    correct = (p.argmax(1) == y).astype(np.float64)
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    total = 0.0
    for i in range(n_bins):
        lo, hi = edges[i], edges[i + 1]
        m = (conf > lo) & (conf <= hi) if i else (conf >= lo) & (conf <= hi)
        n = int(m.sum())
        c = float(conf[m].mean()) if n else float("nan")
        a = float(correct[m].mean()) if n else float("nan")
        bins.append(ReliabilityBin(float(lo), float(hi), n, c, a))
        if n:
            total += n / len(y) * abs(a - c)
    return ECEResult(float(total), bins)


def ranking_accuracy(predicted: np.ndarray, observed: np.ndarray, groups: np.ndarray) -> float:
    """Fraction of within-group pairs with different observed utility that predicted utility orders
    the same way (prediction ties count one half); NaN when no such pair exists."""
    pu = np.asarray(predicted, dtype=np.float64)
    ou = np.asarray(observed, dtype=np.float64)
    g = np.asarray(groups)
    if not (pu.shape == ou.shape == g.shape) or pu.ndim != 1:
        raise ValueError(
            f"predicted, observed and groups must be equal-length 1-D; got {pu.shape}, {ou.shape}, {g.shape}"
        )
    score = 0.0
    pairs = 0
    for key in np.unique(g):
        idx = np.flatnonzero(g == key)
        if len(idx) < 2:
            continue
        dp = np.sign(pu[idx, None] - pu[None, idx])
        do = np.sign(ou[idx, None] - ou[None, idx])
        upper = np.triu(np.ones((len(idx), len(idx)), bool), 1) & (do != 0)
        pairs += int(upper.sum())
        score += float(((dp == do) & upper).sum()) + 0.5 * float(((dp == 0) & upper).sum())
    return score / pairs if pairs else float("nan")


def runtime_error(predicted: np.ndarray, observed: np.ndarray) -> float:
    """Mean absolute error of predicted runtime, in seconds (rows with a NaN on either side skipped)."""
    p = np.asarray(predicted, dtype=np.float64)
    o = np.asarray(observed, dtype=np.float64)
    if p.shape != o.shape:
        raise ValueError(f"predicted and observed runtimes differ in shape: {p.shape} vs {o.shape}")
    ok = np.isfinite(p) & np.isfinite(o)
    return float(np.abs(p[ok] - o[ok]).mean()) if ok.any() else float("nan")
