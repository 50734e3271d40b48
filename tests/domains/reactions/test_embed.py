"""The ensemble over learned condition embeddings: level codes, fit and predict, versions, exact
checkpoint round trips, and one short protocol run as a reactions predictor method."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from rsi_workbench.domains.reactions import encode_conditions, load_grid
from rsi_workbench.domains.reactions.embed import EmbedConfig, EmbeddingEnsemble, code_conditions

SMALL = EmbedConfig(members=3, embed_dim=2, hidden=8, fit_steps=30, adapt_steps=10)


@pytest.fixture(scope="module")
def grid():
    return load_grid("perera2018-suzuki")


def test_codes_index_the_grids_levels(grid) -> None:
    pool = code_conditions(grid)
    assert pool.levels == tuple(len(grid.levels[f.column]) for f in grid.spec.factors)
    assert pool.codes.shape == (grid.n, 3) and pool.numeric.shape == (grid.n, 0)
    onehot, _ = encode_conditions(grid)  # the codes are the one-hot blocks' argmax
    starts = np.cumsum([0, *pool.levels[:-1]])
    for f, s in enumerate(starts):
        np.testing.assert_array_equal(onehot[:, s : s + pool.levels[f]].argmax(1), pool.codes[:, f])


def test_numeric_factors_are_scaled_to_the_unit_interval() -> None:
    g = load_grid("shields2021-direct-arylation")
    pool = code_conditions(g)
    assert pool.codes.shape[1] == 3 and pool.numeric.shape == (g.n, 2)
    assert pool.numeric.min() == 0.0 and pool.numeric.max() == 1.0


def test_fits_predicts_and_round_trips_exactly(grid) -> None:
    pool = code_conditions(grid)
    prior = EmbeddingEnsemble(pool, 7, SMALL)
    m0, s0 = prior.predict(np.arange(grid.n))
    assert np.all(np.isfinite(m0)) and np.all(s0 > 0) and prior.fits == 0
    idx = [3, 40, 77, 150, 222, 301, 350, 12]
    y = [float(grid.yields[i]) for i in idx]
    fitted = prior.fit(idx, y)
    assert fitted.fits == 1 and prior.fits == 0  # a new model; the prior is unchanged
    np.testing.assert_array_equal(prior.predict(np.arange(grid.n))[0], m0)
    mean, sd = fitted.predict(np.arange(grid.n))
    assert mean.shape == sd.shape == (grid.n,) and np.all(sd > 0)
    # trained on them: closer to the observed yields than their mean is
    assert np.abs(mean[idx] - y).mean() < np.abs(np.asarray(y) - np.mean(y)).mean()
    again = EmbeddingEnsemble.from_bytes(fitted.to_bytes(), pool)
    m2, s2 = again.predict(np.arange(grid.n))
    np.testing.assert_array_equal(m2, mean)
    np.testing.assert_array_equal(s2, sd)
    assert again.to_bytes() == fitted.to_bytes()
    warm_a, warm_b = fitted.fit(idx, y), again.fit(idx, y)  # a warm start from either is the same
    assert warm_a.fits == 2
    np.testing.assert_array_equal(warm_a.predict(np.arange(5))[0], warm_b.predict(np.arange(5))[0])


def test_members_differ_by_seed(grid) -> None:
    pool = code_conditions(grid)
    idx, y = [1, 2, 3, 100, 200], [float(grid.yields[i]) for i in (1, 2, 3, 100, 200)]
    a = EmbeddingEnsemble(pool, 1, SMALL).fit(idx, y).predict(np.arange(20))[0]
    b = EmbeddingEnsemble(pool, 2, SMALL).fit(idx, y).predict(np.arange(20))[0]
    assert not np.array_equal(a, b)


def _config():  # one short prequential run of the embedding method
    from rsi_workbench.experiments.reactions import experiment as rx

    return rx.Config.model_validate(
        {
            "grids": ["perera2018-suzuki"],
            "methods": ["predictor_utility_embed"],
            "runs": 1,
            "n_initial": 4,
            "n_total": 8,
            "report_at": [8],
            "bootstrap": 100,
            "gate_data": "prequential",
            "embed": SMALL.model_dump(),
        }
    )


def test_predictor_versions_and_one_protocol_run(grid, tmp_path: Path) -> None:
    from rsi_workbench.domains.reactions.binding import EmbeddingPredictor
    from rsi_workbench.experiments.reactions import experiment as rx
    from rsi_workbench.records import Run

    pool = code_conditions(grid)
    p = EmbeddingPredictor(pool, 5, SMALL)
    assert p.version == "emb-s5-v0"
    assert EmbeddingPredictor.from_bytes(p.to_bytes(), pool).version == "emb-s5-v0"
    cfg = _config()
    assert "embed" in cfg.model_dump(mode="json")
    assert "embed" not in rx.Config.model_validate({"grids": ["perera2018-suzuki"]}).model_dump(mode="json")
    summ = rx.run_protocol(grid, "predictor_utility_embed", 4001, cfg, tmp_path / "r")
    assert len(summ["yields"]) == 8 and len(set(summ["indices"])) == 8
    evs = list(Run.open(tmp_path / "r").events())
    versions = {e.payload["predictor_version"] for e in evs if e.kind == "cycle_started"}
    assert versions and all(v.startswith("emb-s4001-v") for v in versions)
    assert summ["adaptations_triggered"] >= 1


@pytest.mark.slow
def test_a_run_killed_mid_cycle_resumes_to_the_uninterrupted_run(grid, tmp_path: Path, monkeypatch) -> None:
    """The loop reloads the retained embedding predictor from its checkpoint artifact on resume."""
    from rsi_workbench.experiments.reactions import experiment as rx

    cfg = _config()
    whole = rx.run_protocol(grid, "predictor_utility_embed", 4001, cfg, tmp_path / "whole")
    real_eval, calls = rx.ReactionEnvironment.evaluate, {"n": 0}

    def dies_on_7th_experiment(self, *a):  # test double: "killed" inside cycle 7, after adaptations
        calls["n"] += 1
        if calls["n"] == 7:
            raise KeyboardInterrupt
        return real_eval(self, *a)

    monkeypatch.setattr(rx.ReactionEnvironment, "evaluate", dies_on_7th_experiment)
    with pytest.raises(KeyboardInterrupt):
        rx.run_protocol(grid, "predictor_utility_embed", 4001, cfg, tmp_path / "cut")
    monkeypatch.setattr(rx.ReactionEnvironment, "evaluate", real_eval)
    resumed = rx.run_protocol(grid, "predictor_utility_embed", 4001, cfg, tmp_path / "cut")
    assert whole["adaptations_triggered"] >= 1
    for key in ("indices", "yields", "final_predictor", "adaptations", "adaptations_triggered"):
        assert resumed[key] == whole[key], key
