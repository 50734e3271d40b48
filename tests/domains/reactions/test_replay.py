"""Replay environment: exact budgets, one reveal per condition, and a selector that sees no unrun yield."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from rsi_workbench.budget import EXTERNAL_FEEDBACK, BudgetExceeded, BudgetLedger
from rsi_workbench.domains.reactions import PoolView, ReplayEnvironment, ReplayError, load_grid


@pytest.fixture(scope="module")
def grid():
    return load_grid("perera2018-suzuki")


def test_budget_is_exact_and_each_run_spends_one(grid) -> None:
    env = ReplayEnvironment(grid, BudgetLedger.open(None, {EXTERNAL_FEEDBACK: 5}))
    for i in range(5):
        o = env.run_experiment(i)
        assert o.evidence == "E3" and o.step == i + 1 and o.yield_ == grid.yields[i]
    assert env.ledger.remaining(EXTERNAL_FEEDBACK) == 0
    with pytest.raises(BudgetExceeded):
        env.run_experiment(5)
    assert len(env.observations) == 5  # a refused spend reveals nothing


def test_a_condition_is_revealed_once_and_must_be_in_the_pool(grid) -> None:
    env = ReplayEnvironment(grid, BudgetLedger.open(None, {EXTERNAL_FEEDBACK: 5}))
    env.run_experiment(3)
    with pytest.raises(ReplayError, match="already run"):
        env.run_experiment(3)
    with pytest.raises(ReplayError, match="not in the pool"):
        env.run_experiment(grid.n)
    assert env.ledger.remaining(EXTERNAL_FEEDBACK) == 4


def test_view_holds_only_observed_yields_and_is_read_only(grid) -> None:
    env = ReplayEnvironment(grid, BudgetLedger.open(None, {EXTERNAL_FEEDBACK: 5}))
    env.run_experiment(7)
    env.run_experiment(2)
    v = env.view()
    assert [f.name for f in dataclasses.fields(PoolView)] == [
        "features",
        "feature_names",
        "observed_index",
        "observed_yield",
    ]
    assert list(v.observed_index) == [7, 2]
    assert list(v.observed_yield) == [grid.yields[7], grid.yields[2]]
    assert len(v.unrun) == grid.n - 2 and 7 not in v.unrun
    for a in (v.features, v.observed_index, v.observed_yield):
        with pytest.raises(ValueError):
            a[0] = 0
    assert not hasattr(env, "yields") and not hasattr(v, "yields")
    # the view is a snapshot: later runs do not change it
    env.run_experiment(9)
    assert list(v.observed_index) == [7, 2]


def test_features_do_not_encode_yields(grid) -> None:
    env = ReplayEnvironment(grid, BudgetLedger.open(None, {EXTERNAL_FEEDBACK: 1}))
    shuffled = dataclasses.replace(grid, yields=np.random.default_rng(0).permutation(grid.yields))
    env2 = ReplayEnvironment(shuffled, BudgetLedger.open(None, {EXTERNAL_FEEDBACK: 1}))
    assert np.array_equal(env.view().features, env2.view().features)
