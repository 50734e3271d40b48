"""Deep-ensemble yield predictor: a mean and a variance per condition, versions, batch independence."""

from __future__ import annotations

import numpy as np
import pytest

from rsi_workbench.domains.reactions import encode_conditions, load_grid
from rsi_workbench.domains.reactions.predictor import DeepEnsembleYieldPredictor, EnsembleConfig

SMALL = EnsembleConfig(members=3, hidden=8, fit_steps=40, adapt_steps=10)


@pytest.fixture(scope="module")
def data():
    g = load_grid("perera2018-suzuki")
    x, _ = encode_conditions(g)
    idx = np.stack([np.random.default_rng(s).choice(g.n, 12, replace=False) for s in range(3)])
    return g, x, idx


def test_predicts_mean_and_positive_variance_with_versions(data) -> None:
    g, x, idx = data
    p = DeepEnsembleYieldPredictor(x.shape[1], [11, 12, 13], SMALL)
    p.fit([0, 1, 2], x[idx], g.yields[idx])
    out = p.predict(x)
    assert out.mean.shape == out.var.shape == (3, g.n)
    assert np.all(out.var > 0) and np.all(np.isfinite(out.mean))
    assert out.version == ["ensemble-s11-v1", "ensemble-s12-v1", "ensemble-s13-v1"]
    p.adapt([1], x[idx[1:2]], g.yields[idx[1:2]])
    assert p.predict(x).version == ["ensemble-s11-v1", "ensemble-s12-v2", "ensemble-s13-v1"]


def test_a_run_does_not_depend_on_its_cohort(data) -> None:
    g, x, idx = data
    alone = DeepEnsembleYieldPredictor(x.shape[1], [12], SMALL)
    alone.fit([0], x[idx[1:2]], g.yields[idx[1:2]])
    cohort = DeepEnsembleYieldPredictor(x.shape[1], [11, 12, 13], SMALL)
    cohort.fit([0, 1, 2], x[idx], g.yields[idx])
    np.testing.assert_array_equal(alone.predict(x).mean[0], cohort.predict(x).mean[1])


@pytest.mark.slow
def test_fits_the_observations(data) -> None:
    g, x, idx = data
    p = DeepEnsembleYieldPredictor(x.shape[1], [5], EnsembleConfig(members=3, hidden=16, fit_steps=150))
    p.fit([0], x[idx[:1]], g.yields[idx[:1]])
    err = np.abs(p.predict(x[idx[0]]).mean[0] - g.yields[idx[0]]).mean()
    assert err < 0.5 * np.abs(g.yields[idx[0]] - g.yields[idx[0]].mean()).mean()
