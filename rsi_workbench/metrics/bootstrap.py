"""One bootstrap for every reported interval: plain, paired and clustered (by task), all percentile.

Resampling is :func:`scipy.stats.bootstrap` throughout, with a fixed seed so a report prints the
same interval every time. The interval is the percentile interval (the 2.5th and 97.5th
percentiles of the bootstrap distribution for 95%), which is what the reports printed before this
module; resamples whose statistic is undefined (NaN, e.g. an AUC on a one-class resample) are left
out of the percentiles instead of making the whole interval NaN.

The clustered bootstrap resamples whole clusters (tasks) with replacement and recomputes the
pooled mean over every unit of the drawn clusters (a ratio of sums, so clusters of different
sizes weigh by their size, as the point estimate does); it is scipy's paired bootstrap of the
per-cluster (sum, count) pairs.

For a handful of units (seeds), where a bootstrap has too few distinct resamples, :func:`t_interval`
is the Student-t interval over the per-unit values.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np


def _percentiles(dist: np.ndarray, confidence: float) -> tuple[float, float]:
    d = np.asarray(dist, dtype=np.float64).ravel()
    d = d[np.isfinite(d)]
    if d.size == 0:
        return math.nan, math.nan
    a = 100 * (1 - confidence) / 2
    lo, hi = np.percentile(d, [a, 100 - a])
    return float(lo), float(hi)


def _distribution(
    data: Sequence[np.ndarray],
    statistic: Callable[..., Any],
    *,
    paired: bool,
    vectorized: bool,
    n_resamples: int,
    seed: int,
) -> np.ndarray:
    """scipy's bootstrap distribution of ``statistic`` (its own interval is not used: see the module doc)."""
    from scipy import stats

    kw: dict[str, Any] = {"n_resamples": n_resamples, "paired": paired, "vectorized": vectorized}
    gen = np.random.default_rng(seed)
    with warnings.catch_warnings():  # scipy warns when its own interval is NaN; ours skips NaN resamples
        warnings.simplefilter("ignore", getattr(stats, "DegenerateDataWarning", RuntimeWarning))
        try:  # scipy ≥ 1.15 names the generator ``rng``; older versions ``random_state`` (same stream)
            res = stats.bootstrap(tuple(data), statistic, method="percentile", rng=gen, **kw)
        except TypeError:
            res = stats.bootstrap(tuple(data), statistic, method="percentile", random_state=gen, **kw)
    return np.asarray(res.bootstrap_distribution)


def interval(
    values: Sequence[float] | np.ndarray,
    statistic: Callable[..., Any] = np.mean,
    *,
    n_resamples: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
    vectorized: bool | None = None,
) -> tuple[float, float]:
    """Percentile bootstrap interval of ``statistic(values)``; one value gives (v, v), none (NaN, NaN).

    ``statistic`` takes an ``axis`` keyword when ``vectorized`` (numpy reductions do; the default
    is vectorized for numpy's mean, median, sum and std)."""
    x = np.asarray(values, dtype=np.float64).ravel()
    if x.size == 0:
        return math.nan, math.nan
    if x.size == 1:
        v = float(statistic(x))
        return v, v
    vec = statistic in (np.mean, np.median, np.sum, np.std) if vectorized is None else vectorized
    dist = _distribution((x,), statistic, paired=False, vectorized=vec, n_resamples=n_resamples, seed=seed)
    return _percentiles(dist, confidence)


def paired_interval(
    arrays: Sequence[Sequence[float] | np.ndarray],
    statistic: Callable[..., float],
    *,
    n_resamples: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile bootstrap interval of ``statistic(*arrays)`` resampling rows jointly (paired data,
    e.g. labels with two models' predictions for the same patients). NaN statistics are skipped."""
    xs = [np.asarray(a) for a in arrays]
    n = {len(a) for a in xs}
    if len(n) != 1:
        raise ValueError(f"paired arrays must have equal lengths; got {[len(a) for a in xs]}")
    if n == {0}:
        return math.nan, math.nan
    if n == {1}:
        v = float(statistic(*xs))
        return v, v
    dist = _distribution(xs, statistic, paired=True, vectorized=False, n_resamples=n_resamples, seed=seed)
    return _percentiles(dist, confidence)


def _ratio_of_sums(sums: np.ndarray, counts: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.sum(sums, axis=axis) / np.sum(counts, axis=axis)


def cluster_interval(
    clusters: Mapping[Any, Sequence[float]],
    *,
    n_resamples: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[float, float, float]:
    """Pooled mean over every unit of every cluster, and its interval resampling whole clusters.

    ``clusters`` maps a cluster key (a task) to its units (e.g. paired differences over seeds).
    Returns (mean, lo, hi); (NaN, NaN, NaN) without units. Clusters are taken in sorted key order,
    so the interval does not depend on the mapping's insertion order."""
    keys = sorted((k for k in clusters if len(clusters[k])), key=str)
    if not keys:
        return math.nan, math.nan, math.nan
    sums = np.array([float(np.sum(clusters[k])) for k in keys])
    counts = np.array([float(len(clusters[k])) for k in keys])
    mean = float(sums.sum() / counts.sum())
    if len(keys) == 1:
        return mean, mean, mean
    dist = _distribution(
        (sums, counts), _ratio_of_sums, paired=True, vectorized=True, n_resamples=n_resamples, seed=seed
    )
    lo, hi = _percentiles(dist, confidence)
    return mean, lo, hi


__all__ = ["cluster_interval", "interval", "paired_interval"]


def t_interval(values: Sequence[float]) -> tuple[float, float, float, int]:
    """(mean, lo, hi, n): a Student-t 95% interval over units (NaN ends with fewer than 2 units).

    ```python
    t_interval([0.1, 0.3, 0.2])  # (0.2, -0.048..., 0.448..., 3)
    ```
    """
    import statistics

    n = len(values)
    if n == 0:
        return math.nan, math.nan, math.nan, 0
    mean = statistics.mean(values)
    if n < 2:
        return mean, math.nan, math.nan, n
    from scipy import stats

    half = float(stats.t.ppf(0.975, n - 1)) * statistics.stdev(values) / math.sqrt(n)
    return mean, mean - half, mean + half, n
