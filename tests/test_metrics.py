"""The one copy of the metrics: decided ECE edges and tie rule, version selection, and the bootstrap."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rsi_workbench.metrics import (
    LEGACY_METRICS_VERSION,
    METRICS_VERSION,
    brier,
    check_version,
    confidence_bins,
    ece,
    metrics_version_of,
    nll,
    ranking_accuracy,
    reliability_diagram,
)
from rsi_workbench.metrics.bootstrap import cluster_interval, interval, paired_interval


def _two_class(confidences: list[float]) -> np.ndarray:
    """Rows whose top-label confidence is each value (class 0 on top)."""
    return np.array([[c, 1 - c] for c in confidences])


# -- ECE bin edges ---------------------------------------------------------------------------------
def test_v2_bins_are_upper_edge_inclusive_and_exact_on_decimal_edges() -> None:
    conf = [0.0, 0.1, 0.3, 0.30000000000000004, 0.5, 0.7, 0.75, 1.0]
    assert confidence_bins(conf, 10, version=2).tolist() == [0, 0, 2, 3, 4, 6, 7, 9]


def test_v1_bins_are_floor_of_conf_times_n() -> None:
    """The rule every verdict recorded before versioning used: [lo, hi), 1.0 clamped into the last bin."""
    conf = [0.0, 0.1, 0.3, 0.5, 0.7, 0.75, 1.0]
    assert confidence_bins(conf, 10, version=1).tolist() == [0, 1, 3, 5, 7, 7, 9]


def test_ece_on_an_edge_differs_by_version_as_computed_by_hand() -> None:
    # unit A: confidence 0.7, correct; unit B: confidence 0.75, wrong.
    probs = _two_class([0.7, 0.75])
    labels = [0, 1]
    # v2: A in (0.6, 0.7], B in (0.7, 0.8]: ½·|1 − 0.7| + ½·|0 − 0.75| = 0.525
    assert ece(probs, labels, version=2) == pytest.approx(0.525)
    # v1: both in [0.7, 0.8): accuracy ½, confidence 0.725 → |0.5 − 0.725| = 0.225
    assert ece(probs, labels, version=1) == pytest.approx(0.225)
    bins = reliability_diagram(probs, labels, version=2).bins
    assert [(b.lo, b.hi, b.n) for b in bins if b.n] == [(0.6, 0.7, 1), (0.7, 0.8, 1)]


def test_ece_brier_nll_known_values_and_empty() -> None:
    probs = np.array([[1, 0, 0, 0, 0], [0.5, 0.5, 0, 0, 0]], float)
    assert brier(probs, [0, 1]) == pytest.approx(0.25)
    assert nll(probs, [0, 1]) == pytest.approx(math.log(2) / 2)
    assert ece(np.array([[1.0, 0.0]] * 4), [1] * 4) == pytest.approx(1.0)
    assert all(math.isnan(f([], [])) for f in (brier, nll, ece))


# -- ranking ties ------------------------------------------------------------------------------------
def test_ranking_ties_rounding_noise_is_a_tie_in_both_versions() -> None:
    g = [[(0.1 + 0.2, 1.0), (0.3, 0.0)]]  # 0.30000000000000004 vs 0.3: summation order, not a ranking
    assert ranking_accuracy(g, version=1) == 0.5
    assert ranking_accuracy(g, version=2) == 0.5


def test_ranking_ties_near_zero_need_the_absolute_tolerance_of_v2() -> None:
    pred_tie = [[(1e-13, 1.0), (0.0, 0.0)]]
    assert ranking_accuracy(pred_tie, version=1) == 1.0  # no absolute tolerance: ordered
    assert ranking_accuracy(pred_tie, version=2) == 0.5  # |Δ| ≤ 1e-12: a prediction tie counts ½
    obs_tie = [[(1.0, 1e-13), (0.0, 0.0)]]
    assert ranking_accuracy(obs_tie, version=1) == 1.0
    assert math.isnan(ranking_accuracy(obs_tie, version=2))  # observed tie: no comparable pair


def test_ranking_accuracy_counts() -> None:
    g = [[(3, 1.0), (1, 0.0), (2, 0.5)], [(0, 1.0), (9, 1.0)], [(5, 0.0)]]
    assert ranking_accuracy(g) == 1.0
    assert ranking_accuracy([[(2, 1.0), (1, 0.0), (3, 0.5)]]) == pytest.approx(2 / 3)
    assert ranking_accuracy([[(1, 1.0), (1, 0.0), (1, 0.5)]]) == 0.5


# -- version selection ---------------------------------------------------------------------------------
def test_version_selection() -> None:
    assert METRICS_VERSION == 2 and LEGACY_METRICS_VERSION == 1
    assert metrics_version_of({}) == 1  # a run recorded before versioning
    assert metrics_version_of(None) == 1
    assert metrics_version_of({"metrics_version": 2}) == 2
    with pytest.raises(ValueError, match="allowed"):
        check_version(3)
    with pytest.raises(ValueError, match="allowed"):
        ece(_two_class([0.9]), [0], version=7)


def test_protocol_settings_record_the_version() -> None:
    from rsi_workbench.config import ConfigError, validate_config
    from rsi_workbench.protocol.loop import ProtocolSettings

    assert ProtocolSettings().metrics_version == METRICS_VERSION
    assert ProtocolSettings(metrics_version=1).model_dump()["metrics_version"] == 1
    with pytest.raises(ConfigError, match="metrics_version"):
        validate_config({"metrics_version": 3}, ProtocolSettings)


def test_reliability_verdict_follows_the_version() -> None:
    from rsi_workbench.protocol.decisions import ReliabilityCriteria, reliability

    units = [("t1", "w0", [0.7, 0.3], 0), ("t2", "w0", [0.75, 0.25], 1)]
    crit = ReliabilityCriteria(min_predictions=1, min_groups=1, max_brier=2.0, max_ece=0.3)
    old = reliability(units, "w0", crit, metrics_version=1)
    new = reliability(units, "w0", crit, metrics_version=2)
    assert (old.verdict, new.verdict) == ("reliable", "unreliable")
    assert old.metrics["ece"] == pytest.approx(0.225) and new.metrics["ece"] == pytest.approx(0.525)


def test_gate_tuner_recomputes_with_the_runs_version() -> None:
    from rsi_workbench.viz.gates import GateInputs, Thresholds, _CycleInputs, gate_inputs, recompute
    from rsi_workbench.viz.protocol import ProtocolRun

    units = [("t1", "w0", [0.7, 0.3], 0), ("t2", "w0", [0.75, 0.25], 1)]
    cycle = _CycleInputs(1, units, {"version": "w0", "verdict": "reliable"}, None, None, {}, None)
    t = Thresholds(min_predictions=1, min_groups=1, max_brier=2.0, max_ece=0.3)
    old_run = GateInputs("r", t, [cycle], metrics_version=1)
    assert [d.recomputed for d in recompute(old_run, t)] == ["reliable"]  # reproduces the record
    assert [d.recomputed for d in recompute(old_run, t, metrics_version=2)] == ["unreliable"]
    assert [d.recomputed for d in recompute(old_run._replace(metrics_version=2), t)] == ["unreliable"]
    # the version comes from the run's recorded settings; none recorded means version 1
    for settings, v in (({}, 1), ({"metrics_version": 2}, 2)):
        gi = gate_inputs(ProtocolRun(path=None, name="r", settings=settings, events=[]))  # type: ignore[arg-type]
        assert gi.metrics_version == v


# -- bootstrap ---------------------------------------------------------------------------------------
def test_cluster_bootstrap_against_a_hand_computation() -> None:
    """Clusters a = [2, 4], b = [1], c = [0, 0, 3] (sums 6, 1, 3; sizes 2, 1, 3).

    Point estimate: the pooled mean (6 + 1 + 3) / (2 + 1 + 3) = 10/6, not the mean of cluster means.
    A resample draws 3 clusters with replacement (27 equally likely draws). The 8 draws of b and c
    only all give exactly 1.0 (b and c both average 1), so P(1.0) = 8/27 > 2.5%: the lower limit is
    1.0, the smallest value. Drawing a three times (1/27 ≈ 3.7% > 2.5%) gives the largest value 18/6
    = 3.0, the upper limit."""
    mean, lo, hi = cluster_interval({"a": [2.0, 4.0], "b": [1.0], "c": [0.0, 0.0, 3.0]}, n_resamples=4000)
    assert mean == pytest.approx(10 / 6)
    assert (lo, hi) == (pytest.approx(1.0), pytest.approx(3.0))


def test_cluster_bootstrap_edge_cases_and_determinism() -> None:
    assert all(math.isnan(x) for x in cluster_interval({}))
    assert cluster_interval({"a": [1.0, 3.0]}) == (2.0, 2.0, 2.0)
    d = {f"t{i}": list(np.linspace(-1, 1, i % 3 + 1) + i / 10) for i in range(12)}
    assert cluster_interval(d, seed=3) == cluster_interval(dict(reversed(d.items())), seed=3)


def test_plain_and_paired_intervals() -> None:
    assert interval([5.0, 5.0, 5.0]) == (5.0, 5.0)
    assert interval([2.0]) == (2.0, 2.0)
    assert all(math.isnan(x) for x in interval([]))
    rng = np.random.default_rng(1)
    a = rng.normal(size=40)
    b = a + 0.5 + rng.normal(scale=0.1, size=40)
    lo, hi = interval(b - a, seed=0)
    assert lo < 0.5 < hi and hi - lo < 0.2
    # a paired bootstrap of mean(b − a) resamples the same rows as the plain one of the differences
    assert paired_interval([a, b], lambda x, y: float(np.mean(y - x)), seed=0) == pytest.approx((lo, hi))


def test_paired_interval_skips_undefined_resamples() -> None:
    y = np.array([0, 1, 0, 1, 1, 0, 1, 0])

    def stat(yy: np.ndarray) -> float:
        return float("nan") if yy.min() == yy.max() else float(yy.mean())

    lo, hi = paired_interval([y], stat, n_resamples=500)
    assert 0.0 < lo <= hi < 1.0


def test_sklearn_auc_matches_the_mann_whitney_count() -> None:
    from sklearn.metrics import roc_auc_score

    y = np.array([0, 0, 1, 1, 1, 0])
    p = np.array([0.1, 0.4, 0.35, 0.8, 0.4, 0.2])
    pos, neg = p[y == 1], p[y == 0]
    by_hand = np.mean([(a > b) + 0.5 * (a == b) for a in pos for b in neg])  # ties count ½
    assert roc_auc_score(y, p) == pytest.approx(by_hand)


def test_scipy_bootstrap_draws_the_resamples_the_hand_written_ones_drew() -> None:
    """Same seed, same resamples: the intervals reports printed before the one bootstrap module
    (task-clustered paired Δ of code repair, reactions' plain intervals) are reproduced."""
    rng = np.random.default_rng(7)
    diffs = {f"HumanEval/{i}": list(rng.normal(size=int(rng.integers(1, 4)))) for i in range(40)}
    tasks = sorted(diffs)  # the pre-module protocol.report.paired_bootstrap, verbatim
    sums = np.array([sum(diffs[t]) for t in tasks])
    counts = np.array([len(diffs[t]) for t in tasks], dtype=float)
    idx = np.random.default_rng(0).integers(0, len(tasks), size=(2000, len(tasks)))
    old = np.percentile(sums[idx].sum(axis=1) / counts[idx].sum(axis=1), [2.5, 97.5])
    assert cluster_interval(diffs, n_resamples=2000, seed=0)[1:] == pytest.approx(tuple(old), abs=1e-12)
    v = rng.normal(50, 20, size=30)
    r = np.random.default_rng(0)  # the pre-module reactions _ci, verbatim
    boots = [np.mean(v[r.integers(0, len(v), len(v))]) for _ in range(2000)]
    old = np.nanpercentile(boots, [2.5, 97.5])
    assert interval(v, n_resamples=2000, seed=0) == pytest.approx(tuple(old), abs=1e-9)
