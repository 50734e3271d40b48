"""Exact evaluators (circle packing, first autocorrelation) and the built-in SciPy discovery agent."""

from __future__ import annotations

import numpy as np
import pytest

from rsi_workbench.domains.math import (
    BEST_KNOWN,
    CirclePacking,
    FirstAutocorrelation,
    c1_of_steps,
    evaluate_packing,
    run_attempt,
)


def grid_packing_26() -> np.ndarray:
    """A known-valid n=26 packing: a 5x5 grid of touching r=0.1 circles plus one r=0.04 in a gap."""
    c = [(0.1 + 0.2 * i, 0.1 + 0.2 * j, 0.1) for i in range(5) for j in range(5)]
    c.append((0.2, 0.2, 0.04))  # distance to its 4 neighbours is sqrt(2)*0.1 = 0.1414 > 0.14
    return np.array(c)


def test_valid_packing_scores_exactly_its_sum_of_radii():
    c = grid_packing_26()
    ev = evaluate_packing(c, 26)
    assert ev.valid, ev.reason
    assert ev.score == float(c[:, 2].sum())
    assert CirclePacking(26).evaluate(c.tolist()).score == ev.score  # lists are accepted too
    assert BEST_KNOWN[26] == 2.635983  # rsi_workbench.domains.math.reference


def test_overlapping_or_escaping_circles_are_invalid():
    c = grid_packing_26()
    over = c.copy()
    over[25, 2] = 0.05  # overlaps its neighbours
    ev = evaluate_packing(over, 26)
    assert not ev.valid and "overlap" in ev.reason
    out = c.copy()
    out[0, 0] = 0.05  # circle 0 (r=0.1) pokes out of the left edge
    ev = evaluate_packing(out, 26)
    assert not ev.valid and "escapes" in ev.reason
    assert not evaluate_packing(c[:25], 26).valid  # wrong n
    nan = c.copy()
    nan[3, 1] = np.nan
    assert not evaluate_packing(nan, 26).valid


def test_tolerance_is_explicit():
    c = grid_packing_26()
    c[0, 2] += 5e-10  # overlaps neighbours by 5e-10 < tol = 1e-9: accepted
    assert evaluate_packing(c, 26).valid
    c[0, 2] += 1e-8
    assert not evaluate_packing(c, 26).valid
    assert evaluate_packing(c, 26, tol=1e-7).valid


def test_agent_improves_from_parent_state_and_records_failures():
    task = CirclePacking(26, maxiter=60)
    first = run_attempt(task, None, seed=1)
    assert first.move == "restart" and first.evaluation is not None
    parent = first.state if first.valid else grid_packing_26().tolist()
    child = run_attempt(task, parent, seed=2)
    assert child.move in {"polish", "jiggle", "relocate", "swap_grow"}
    assert child.evaluation is not None and child.score is not None
    timeout = run_attempt(CirclePacking(26, maxiter=500, time_limit=1e-6), None, seed=3)
    assert timeout.fail_class == "timeout" and "limit" in timeout.error and not timeout.valid


def test_autocorrelation_evaluator_is_exact():
    assert c1_of_steps(np.ones(10)) == pytest.approx(2.0)  # constant f: (f*f)(0) / (∫f)^2 = 2
    # brute force: sample f*f densely for a random step function and compare with the knot formula
    rng = np.random.default_rng(0)
    h = rng.uniform(0, 1, 8)
    fine = np.repeat(h, 200)
    dt = 0.5 / len(fine)
    brute = (np.convolve(fine, fine) * dt).max() / (fine.sum() * dt) ** 2
    assert c1_of_steps(h) == pytest.approx(brute, rel=1e-2)
    task = FirstAutocorrelation(m=8)
    assert not task.evaluate(-h).valid
    assert not task.evaluate(np.zeros(8)).valid
    ev = task.evaluate(h)
    assert ev.valid and ev.score == -ev.value


def test_autocorrelation_agent_beats_the_constant_function():
    res = run_attempt(FirstAutocorrelation(m=30, maxiter=60), None, seed=0)
    assert res.valid and res.evaluation is not None
    assert res.evaluation.value < 2.0
    assert res.evaluation.value >= 1.28  # no step function beats the known lower bound on C1


def test_n32_grid_packing_is_valid():
    c = np.array([((i + 0.5) / 6, (j + 0.5) / 6, 1 / 12) for i in range(6) for j in range(6)][:32])
    ev = CirclePacking(32).evaluate(c)
    assert ev.valid and ev.score == float(c[:, 2].sum())
    assert CirclePacking(32).best_known == 2.937944526205518
