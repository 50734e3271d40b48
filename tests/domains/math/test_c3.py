"""The third autocorrelation inequality (C3): the exact evaluator on known constructions, the task's
attempt, the settings kind and the shipped smoke config."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from rsi_workbench.domains.math import ThirdAutocorrelation, c3_of_steps
from rsi_workbench.domains.math.reference import best_known
from rsi_workbench.domains.math.settings import TaskConfig

REPO = Path(__file__).resolve().parents[3]


def brute_force_c3(h: np.ndarray, samples_per_step: int = 50) -> float:
    """max_t |(f*f)(t)| / (∫f)² by sampling f on a fine grid (a Riemann sum of the autoconvolution)."""
    m = len(h)
    f = np.repeat(h, samples_per_step)
    dx = 0.5 / (m * samples_per_step)
    ff = np.convolve(f, f) * dx
    return float(np.abs(ff).max() / (f.sum() * dx) ** 2)


def test_constant_function_gives_two():
    # f = 1 on [-1/4, 1/4]: ∫f = 1/2, (f*f)(0) = 1/2, so the ratio is (1/2) / (1/4) = 2 for every m
    for m in (1, 7, 400):
        assert c3_of_steps(np.ones(m)) == pytest.approx(2.0, rel=1e-12)


def test_negative_dip_counts_by_magnitude():
    # h = (1, -0.8): conv = (1, -1.6, 0.64); the magnitude peak is the minimum -1.6, not the maximum 1
    h = np.array([1.0, -0.8])
    assert c3_of_steps(h) == pytest.approx(2 * 2 * 1.6 / 0.2**2)
    assert c3_of_steps(h) > 2 * 2 * np.convolve(h, h).max() / h.sum() ** 2  # AlphaEvolve's max-only formula


@pytest.mark.parametrize("seed", [0, 1])
def test_exact_formula_matches_a_fine_grid(seed):
    h = np.random.default_rng(seed).normal(1.0, 0.7, 12)
    assert c3_of_steps(h) == pytest.approx(brute_force_c3(h), rel=2e-3)


def test_evaluate_validity_and_sign_of_score():
    t = ThirdAutocorrelation(m=4)
    ev = t.evaluate([1, 1, 1, 1])
    assert ev.valid and ev.value == pytest.approx(2.0) and ev.score == pytest.approx(-2.0)
    assert t.evaluate([1.0, -2.0, 0.5, 0.5]).reason == "zero integral"
    assert not t.evaluate([1, 2, 3]).valid
    assert not t.evaluate([1, np.nan, 1, 1]).valid
    assert t.evaluate([1, -0.2, 1, 1]).valid  # negative heights are allowed (unlike C1)
    assert t.best_known == best_known("autocorrelation_c3") == 1.4556427953745406
    assert t.direction == "min"


def test_attempt_improves_on_the_constant_function():
    t = ThirdAutocorrelation(m=20, maxiter=60)
    r = t.attempt(None, seed=0)
    assert r.valid and r.evaluation.value < 2.0
    child = t.attempt(r.state, seed=1)
    assert child.evaluation is not None and child.move in {"polish", "jiggle", "sign_block"}


def test_settings_kind_and_smoke_config():
    from rsi_workbench.cli import load_experiment_config

    assert isinstance(TaskConfig(kind="autocorrelation_c3", m=30).make(), ThirdAutocorrelation)
    cfg = load_experiment_config(REPO / "configs" / "dreaming" / "c3_smoke.yaml")
    assert cfg.task.kind == "autocorrelation_c3"
    assert cfg.task.make().name == "autocorrelation_c3_m40"
