"""Quality metrics: known values, edge cases and bounds."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rsi_workbench.world import brier_5class, ece, nll, ranking_accuracy, runtime_error


def test_brier_and_nll_known_values():
    probs = np.array([[1, 0, 0, 0, 0], [0.5, 0.5, 0, 0, 0]], float)
    labels = np.array([0, 1])
    assert brier_5class(probs, labels) == pytest.approx((0 + 0.5) / 2)
    assert nll(probs, labels) == pytest.approx(math.log(2) / 2)
    assert brier_5class(np.array([[0, 1, 0, 0, 0.0]]), np.array([0])) == pytest.approx(2.0)
    with pytest.raises(ValueError, match="labels must be in"):
        brier_5class(probs, np.array([0, 5]))


def test_ece_bins():
    probs = np.array([[0.9, 0.1, 0, 0, 0]] * 10)
    labels = np.array([0] * 9 + [1])
    res = ece(probs, labels, n_bins=10)
    assert res.ece == pytest.approx(0.0, abs=1e-9)
    full = [b for b in res.bins if b.n]
    assert (
        len(full) == 1 and full[0].confidence == pytest.approx(0.9) and full[0].accuracy == pytest.approx(0.9)
    )
    assert ece(np.array([[1.0, 0, 0, 0, 0]] * 4), np.array([1] * 4)).ece == pytest.approx(1.0)


def test_ranking_accuracy():
    groups = np.array([0, 0, 0, 1, 1, 2])
    observed = np.array([1.0, 0.0, 0.5, 1.0, 1.0, 0.0])  # group 1 is all ties: no pairs
    assert ranking_accuracy(np.array([3, 1, 2, 0, 9, 5.0]), observed, groups) == 1.0
    assert ranking_accuracy(np.array([2, 1, 3, 0, 9, 5.0]), observed, groups) == pytest.approx(2 / 3)
    assert ranking_accuracy(np.array([1, 3, 2, 0, 9, 5.0]), observed, groups) == 0.0
    assert ranking_accuracy(np.array([1, 1, 1, 0, 0, 0.0]), observed, groups) == 0.5
    assert math.isnan(ranking_accuracy(np.zeros(2), np.ones(2), np.array([0, 1])))


def test_runtime_error_skips_nan():
    assert runtime_error(np.array([1.0, np.nan, 2.0]), np.array([0.5, 1.0, 2.5])) == pytest.approx(0.5)
    assert math.isnan(runtime_error(np.array([np.nan]), np.array([1.0])))


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 30), st.integers(0, 10_000))
def test_metric_bounds(n, seed):
    rng = np.random.default_rng(seed)
    probs = rng.dirichlet(np.ones(5), size=n)
    labels = rng.integers(0, 5, n)
    assert 0.0 <= brier_5class(probs, labels) <= 2.0
    assert 0.0 <= ece(probs, labels).ece <= 1.0
    assert nll(probs, labels) >= 0.0
    r = ranking_accuracy(rng.random(n), rng.random(n), rng.integers(0, 3, n))
    assert math.isnan(r) or 0.0 <= r <= 1.0


def test_world_metrics_are_the_one_copy_with_the_current_rules():
    """world.metrics calls rsi_workbench.metrics: same numbers, and the decided v2 rules (a
    confidence on an edge in the bin it closes; ties within rel 1e-9 / abs 1e-12). Before the
    metrics were unified the world copy used ``linspace`` edges and exact-sign ties."""
    from rsi_workbench import metrics as M

    probs = np.array([[0.7, 0.3], [0.75, 0.25]])
    labels = np.array([0, 1])
    res = ece(probs, labels)
    assert res.ece == pytest.approx(M.ece(probs, labels)) == pytest.approx(0.525)
    assert [(b.lo, b.hi) for b in res.bins if b.n] == [(0.6, 0.7), (0.7, 0.8)]
    assert ece(probs, labels, version=1).ece == pytest.approx(0.225)
    assert brier_5class(probs, labels) == M.brier(probs, labels)
    pred, obs, grp = np.array([0.1 + 0.2, 0.3]), np.array([1.0, 0.0]), np.array([0, 0])
    assert ranking_accuracy(pred, obs, grp) == 0.5  # rounding noise is a tie (exact sign said 1.0)
