"""The prior-mean GP: adaptation is a Bayesian update on top of the transfer prior — the posterior is
the prior where there are no data and follows the data where there are."""

from __future__ import annotations

import numpy as np
import pytest

from rsi_workbench.domains.reactions.arms import MethodSpec
from rsi_workbench.domains.reactions.binding import YIELD, PriorGPPredictor
from rsi_workbench.domains.reactions.prior import PriorSpec
from rsi_workbench.domains.reactions.prior_gp import PriorGPConfig, PriorMeanGP
from rsi_workbench.protocol.spec import Observation, PairRecord

FAST = PriorGPConfig(fit_steps=60)


def _pool(n: int = 160, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.random((n, 3))
    truth = 55.0 + 25.0 * np.sin(3.0 * x[:, 0]) - 10.0 * x[:, 1]
    prior = 40.0 + 10.0 * x[:, 2]  # a prior that is wrong by design
    return x, truth, prior


def test_no_data_is_the_prior() -> None:
    x, _, prior = _pool()
    m = PriorMeanGP(x, prior, 3, FAST)
    mean, sd = m.predict(np.arange(len(x)))
    np.testing.assert_array_equal(mean, prior)
    np.testing.assert_array_equal(sd, np.full(len(x), FAST.residual_sd))
    p = PriorGPPredictor(x, prior, 3, FAST)
    assert p.version == "pgp-s3-v0"
    pred = p.predict("t", None, [5, 7])  # type: ignore[arg-type]
    assert [q.utility_terms[YIELD] for q in pred] == [prior[5], prior[7]]


def test_far_from_the_data_the_posterior_mean_is_the_prior() -> None:
    x, truth, prior = _pool()
    far = np.vstack([x, np.full((1, 3), 40.0)])  # a condition far outside the observed region
    mean_fn = np.append(prior, 33.0)
    idx = list(range(0, 40))
    fitted = PriorMeanGP(far, mean_fn, 1, FAST).fit(idx, list(truth[idx]))
    mean, sd = fitted.predict(np.array([len(x)]))
    assert mean[0] == pytest.approx(33.0, abs=1e-6)  # no learned offset moves it off the prior
    assert sd[0] >= FAST.residual_sd  # the prior's spread (plus the fitted noise)


def test_converges_to_the_data() -> None:
    x, truth, prior = _pool()
    test = np.arange(1, len(x), 2)
    errs = []
    for n in (4, 20, 80):
        idx = list(range(0, 2 * n, 2))
        m = PriorMeanGP(x, prior, 1, FAST).fit(idx, list(truth[idx]))
        errs.append(float(np.abs(m.predict(test)[0] - truth[test]).mean()))
        obs_mean, _ = m.predict(np.asarray(idx))
        if n == 80:  # where there are data, the posterior is the data
            assert np.abs(obs_mean - truth[idx]).mean() < 2.0
    prior_err = float(np.abs(prior[test] - truth[test]).mean())
    assert errs[-1] < errs[0] < prior_err * 1.05 and errs[-1] < 0.2 * prior_err, (errs, prior_err)


def test_persistence_rebuilds_the_posterior_and_adapt_reads_records() -> None:
    x, truth, prior = _pool()
    p = PriorGPPredictor(x, prior, 2, FAST)
    recs = [
        PairRecord(
            "t", c, {}, {"index": i}, None, Observation({YIELD: float(truth[i])}), "p", p.version, "update"
        )
        for c, i in enumerate([3, 9, 27, 40], start=1)
    ]
    q = p.adapt(recs, seed=2)
    assert q.version == "pgp-s2-v1" and p.version == "pgp-s2-v0"  # self unchanged
    assert q.model.train_index == [3, 9, 27, 40] and q.model.train_y == [
        float(truth[i]) for i in (3, 9, 27, 40)
    ]
    r = PriorGPPredictor.from_bytes(q.to_bytes(), x)
    np.testing.assert_allclose(r.model.predict(np.arange(20))[0], q.model.predict(np.arange(20))[0])
    assert r.version == q.version
    q2 = q.adapt(recs[:2], seed=2)  # warm-started, on exactly the records handed
    assert q2.version == "pgp-s2-v2" and q2.model.train_index == [3, 9]


def test_a_prior_is_allowed_on_the_protocol_gp_kinds() -> None:
    arm = MethodSpec(
        name="g", kind="predictor_utility_gp", prior=PriorSpec(), decision="expected_improvement"
    )
    assert arm.prior is not None
    with pytest.raises(ValueError, match="a prior applies"):
        MethodSpec(name="e", kind="predictor_utility_embed", prior=PriorSpec())
