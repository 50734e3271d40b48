"""One copy of every prediction-quality metric: Brier, NLL, ECE, ranking accuracy, regression reliability.

World models, the protocol's decisions, reports and dashboards all call these functions, so a
number in a table and the verdict it explains come from the same code. Functions are pure numpy
and return NaN where a metric is undefined (no units, no comparable pair); callers that record
"no value" as ``None`` convert at their edge (:mod:`rsi_workbench.protocol.metrics`).

**Metrics versions.** Two rules used to differ between copies; the decision taken for version 2:

* **ECE bins** are the equal-width intervals ``(i/n, (i+1)/n]``, the first one closed at 0
  (``[0, 1/n]``). A confidence exactly on an edge belongs to the bin that edge closes: 0.5 for a
  two-way split lands in ``(0.4, 0.5]``, 1.0 lands in the last bin with no clamp. This is the
  upper-edge-inclusive convention of Guo et al. (2017) that the reliability diagrams already drew,
  so the ECE in a reliability verdict is the ECE of the diagram shown for it. Edges are ``i / n``
  (the double nearest the real edge), so a confidence written as ``0.3`` equals the edge ``0.3``
  instead of missing it by one ulp as ``floor(0.3 * 10)`` or ``linspace`` edges can.
* **Ranking ties**: two utilities are tied when ``math.isclose(a, b, rel_tol=1e-9,
  abs_tol=1e-12)``: a difference that is summation-order rounding is no ranking. Pairs tied in the
  observed utility are not comparable (excluded); a comparable pair tied in the prediction counts
  one half. The same tolerance applies on both sides.

Version 1 reproduces the rules every protocol verdict was recorded with before this module:
bins ``floor(conf · n)`` (lower edge inclusive, 1.0 clamped into the last bin) and ties by
``math.isclose`` with no absolute tolerance. A run records the version its decisions used
(``metrics_version`` in its protocol settings; a run without it was made with version 1), and
every recomputation passes that version back (:func:`metrics_version_of`). Brier, NLL and the
regression metrics are identical in both versions.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal, NamedTuple

import numpy as np

MetricsVersion = Literal[1, 2]
METRICS_VERSION: MetricsVersion = 2
"""The version new runs record and use."""
LEGACY_METRICS_VERSION: MetricsVersion = 1
"""The version of runs recorded before metrics were versioned (no ``metrics_version`` field)."""
METRICS_VERSIONS: tuple[MetricsVersion, ...] = (1, 2)

_TIE_REL = 1e-9
_TIE_ABS = {1: 0.0, 2: 1e-12}


def check_version(version: int) -> int:
    """``version`` itself, or a ValueError naming the allowed versions."""
    if version not in METRICS_VERSIONS:
        raise ValueError(f"metrics_version {version!r} is unknown; allowed: {list(METRICS_VERSIONS)}")
    return int(version)


def metrics_version_of(settings: Mapping[str, Any] | None) -> int:
    """The metrics version a run's recorded settings (or config section) declare; none means 1."""
    v = (settings or {}).get("metrics_version")
    return check_version(LEGACY_METRICS_VERSION if v is None else int(v))


# -- class readouts: one unit = a class-probability vector and the observed class -------------------
def _check(probs: Any, labels: Any) -> tuple[np.ndarray, np.ndarray]:
    p = np.asarray(probs, dtype=np.float64)
    y = np.asarray(labels, dtype=np.int64)
    if p.size == 0 and y.size == 0:
        return p.reshape(0, max(p.shape[-1] if p.ndim == 2 else 0, 1)), y.reshape(0)
    if p.ndim != 2 or y.shape != (p.shape[0],):
        raise ValueError(f"probs must be [N, C] and labels [N]; got {p.shape} and {y.shape}")
    if y.size and (y.min() < 0 or y.max() >= p.shape[1]):
        raise ValueError(f"labels must be in [0, {p.shape[1]}); got range [{y.min()}, {y.max()}]")
    return p, y


def brier(probs: Any, labels: Any) -> float:
    """Multi-class Brier score: mean over units of Σ_c (p_c − 1[y = c])²; 0 is perfect, 2 the worst."""
    p, y = _check(probs, labels)
    if len(y) == 0:
        return math.nan
    return float(((p - np.eye(p.shape[1])[y]) ** 2).sum(1).mean())


def nll(probs: Any, labels: Any, eps: float = 1e-12) -> float:
    """Mean negative log-probability of the observed class (probabilities clipped at ``eps``)."""
    p, y = _check(probs, labels)
    if len(y) == 0:
        return math.nan
    return float(-np.log(np.clip(p[np.arange(len(y)), y], eps, 1.0)).mean())


class ReliabilityBin(NamedTuple):
    lo: float
    hi: float
    n: int  # units in the bin
    confidence: float  # mean top-label probability of those units
    accuracy: float  # fraction of those units whose argmax is the observed class


class ECEResult(NamedTuple):
    ece: float
    bins: list[ReliabilityBin]


def confidence_bins(conf: Any, n_bins: int = 10, *, version: int = METRICS_VERSION) -> np.ndarray:
    """The bin index of each confidence under ``version``'s edge rule (see the module docstring)."""
    c = np.asarray(conf, dtype=np.float64)
    if check_version(version) == 1:
        return np.minimum((c * n_bins).astype(int), n_bins - 1)
    edges = np.arange(n_bins + 1) / n_bins
    return np.clip(np.searchsorted(edges, c, side="left") - 1, 0, n_bins - 1)


def reliability_diagram(
    probs: Any, labels: Any, n_bins: int = 10, *, version: int = METRICS_VERSION
) -> ECEResult:
    """Top-label expected calibration error over equal-width confidence bins, with the bins."""
    p, y = _check(probs, labels)
    if len(y) == 0:
        return ECEResult(math.nan, [])
    conf = p.max(1)
    correct = (p.argmax(1) == y).astype(np.float64)
    idx = confidence_bins(conf, n_bins, version=version)
    bins: list[ReliabilityBin] = []
    total = 0.0
    for b in range(n_bins):
        m = idx == b
        n = int(m.sum())
        c = float(conf[m].mean()) if n else math.nan
        a = float(correct[m].mean()) if n else math.nan
        bins.append(ReliabilityBin(b / n_bins, (b + 1) / n_bins, n, c, a))
        if n:
            total += n / len(y) * abs(a - c)
    return ECEResult(float(total), bins)


def ece(probs: Any, labels: Any, n_bins: int = 10, *, version: int = METRICS_VERSION) -> float:
    """Top-label expected calibration error (:func:`reliability_diagram` without the bins)."""
    return reliability_diagram(probs, labels, n_bins, version=version).ece


# -- ranking: groups of (predicted utility, observed utility) of candidates at one state ----------
def _tied(a: np.ndarray, b: np.ndarray, version: int) -> np.ndarray:
    """Elementwise ``math.isclose(a, b, rel_tol=1e-9, abs_tol=…)`` (symmetric, unlike ``np.isclose``)."""
    with np.errstate(invalid="ignore"):
        tol = np.maximum(_TIE_REL * np.maximum(np.abs(a), np.abs(b)), _TIE_ABS[version])
        return (a == b) | (np.abs(a - b) <= tol)


def ranking_accuracy(
    groups: Iterable[Sequence[tuple[float, float]]], *, version: int = METRICS_VERSION
) -> float:
    """Within each group: the share of candidate pairs with different observed utility that the
    prediction orders the same way (a prediction tie counts ½); NaN when no group has such a pair."""
    check_version(version)
    score, pairs = 0.0, 0
    for g in groups:
        if len(g) < 2:
            continue
        a = np.asarray(g, dtype=np.float64)
        pu, ou = a[:, 0], a[:, 1]
        i, j = np.triu_indices(len(a), 1)
        comparable = ~_tied(ou[i], ou[j], version)
        ptie = _tied(pu[i], pu[j], version) & comparable
        agree = ((pu[i] > pu[j]) == (ou[i] > ou[j])) & comparable & ~ptie
        pairs += int(comparable.sum())
        score += float(agree.sum()) + 0.5 * float(ptie.sum())
    return score / pairs if pairs else math.nan


def ranking_accuracy_grouped(
    predicted: Any, observed: Any, groups: Any, *, version: int = METRICS_VERSION
) -> float:
    """:func:`ranking_accuracy` from flat arrays: predicted and observed utility, and a group key per row."""
    pu = np.asarray(predicted, dtype=np.float64)
    ou = np.asarray(observed, dtype=np.float64)
    g = np.asarray(groups)
    if not (pu.shape == ou.shape == g.shape) or pu.ndim != 1:
        raise ValueError(
            f"predicted, observed and groups must be equal-length 1-D; got {pu.shape}, {ou.shape}, {g.shape}"
        )
    rows = [np.flatnonzero(g == key) for key in np.unique(g)]
    return ranking_accuracy([list(zip(pu[r], ou[r], strict=True)) for r in rows], version=version)


# -- regression (Gaussian) readouts: one unit = (predicted mean, predicted std, observed value) ----
Triples = Sequence[tuple[float, float, float]] | np.ndarray
"""(mean, std, observed) units: a sequence of triples or an [N, 3] array."""


def _triples(units: Triples) -> np.ndarray:
    a = np.asarray(units, dtype=np.float64)
    if a.size == 0:
        return a.reshape(0, 3)
    if a.ndim != 2 or a.shape[1] != 3:
        raise ValueError(f"units must be (mean, std, observed) triples; got shape {a.shape}")
    return a


def gaussian_nll(units: Triples, min_std: float = 1e-6) -> float:
    """Mean negative log-likelihood of observed values under N(mean, std²) (std floored at ``min_std``)."""
    a = _triples(units)
    if len(a) == 0:
        return math.nan
    mu, sd, y = a[:, 0], np.maximum(a[:, 1], min_std), a[:, 2]
    return float(np.mean(0.5 * np.log(2 * math.pi * sd**2) + 0.5 * ((y - mu) / sd) ** 2))


def mean_absolute_error(units: Triples) -> float:
    """Mean |y − ŷ| over (mean, std, y) units."""
    a = _triples(units)
    return float(np.mean(np.abs(a[:, 2] - a[:, 0]))) if len(a) else math.nan


def mean_abs_z(units: Triples, min_std: float = 1e-9) -> float:
    """Mean |y − ŷ| / σ̂ (≈ 0.8 for a calibrated Gaussian; larger means overconfident)."""
    a = _triples(units)
    if len(a) == 0:
        return math.nan
    return float(np.mean(np.abs(a[:, 2] - a[:, 0]) / np.maximum(a[:, 1], min_std)))


def regression_metrics(units: Triples) -> dict[str, float]:
    """What a Gaussian readout's reliability verdict reads: MAE, mean |z| and Gaussian NLL."""
    return {
        "mae": mean_absolute_error(units),
        "mean_abs_z": mean_abs_z(units),
        "gaussian_nll": gaussian_nll(units),
    }


__all__ = [
    "LEGACY_METRICS_VERSION",
    "METRICS_VERSION",
    "METRICS_VERSIONS",
    "MetricsVersion",
    "Triples",
    "ECEResult",
    "ReliabilityBin",
    "brier",
    "check_version",
    "confidence_bins",
    "ece",
    "gaussian_nll",
    "mean_abs_z",
    "mean_absolute_error",
    "metrics_version_of",
    "nll",
    "ranking_accuracy",
    "ranking_accuracy_grouped",
    "regression_metrics",
    "reliability_diagram",
]
