"""The credit-information experiment (issue 34 items 4-5): planted synthetic directions, the ε-random
behaviour Lead, theta+ fitted three ways, the paired verdict, and a chunked smoke run end to end."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from rsi_workbench.cli import load_experiment_config
from rsi_workbench.discovery.lead import LeadState, validate_lead_decision
from rsi_workbench.domains import tabular
from rsi_workbench.domains.tabular import synthetic
from rsi_workbench.domains.tabular.credit_policy import (
    FEATURES,
    EpsilonLead,
    OperationPolicy,
    PolicyLead,
    candidates,
    fit_policy,
)
from rsi_workbench.experiments.discovery import credit_info, credit_report
from rsi_workbench.records import Run

ROOT = Path(__file__).resolve().parents[1]


def test_synthetic_directions_are_planted_deterministic_and_registered() -> None:
    names = sorted(tabular.SYNTHETIC_DIRECTIONS)
    assert len(names) >= 11
    assert not set(names) & set(tabular.DIRECTIONS)  # the bundled catalog's default is unchanged
    for n in names:
        truth = tabular.planted_truth(n)
        roles = sorted(truth.values())
        assert roles == ["baseline", "informative", "informative", "noise", "noise", "noise", "redundant"]
        assert tabular.direction(n).name == n
    X1, y1 = synthetic.load_synthetic.__wrapped__(names[0])
    X2, y2 = synthetic.load_synthetic.__wrapped__(names[0])
    assert X1.equals(X2) and np.array_equal(y1, y2)
    X, _ = tabular.load_direction(names[0])
    assert {"noise_0", "context_0"} <= set(X.columns)


def test_planted_informative_block_carries_signal_and_noise_does_not() -> None:
    from sklearn.linear_model import LinearRegression

    name = "synthetic-planted-01/outcome"  # a regression direction
    d, truth = tabular.direction(name), tabular.planted_truth(name)
    X, y = tabular.load_direction(name)
    inf = [g for g, r in truth.items() if r == "informative"]
    noise = [g for g, r in truth.items() if r == "noise"]

    def r2(groups: list[str]) -> float:
        cols = d.columns(groups)
        return float(LinearRegression().fit(X[cols], y).score(X[cols], y))

    assert r2(inf) > 0.5
    assert r2(noise) < 0.1


def test_dev_directions_must_be_disjoint_from_training() -> None:
    from rsi_workbench.config import ConfigError, validate_config

    base = {
        "experiment": "discovery_credit",
        "train_directions": ["synthetic-planted-00/outcome"],
        "train_seeds": [0],
        "dev_directions": ["synthetic-planted-00/outcome"],
        "dev_seeds": [0],
    }
    with pytest.raises(ConfigError, match="also training datasets"):
        validate_config(base, credit_info.Config, source="test")


def _state() -> LeadState:
    from rsi_workbench.discovery.lead import NodeSummary

    n0 = NodeSummary("h0", "a/x", "f0", "restart", (), 0, 6.0, "supports", None, ("missing_control",))
    n1 = NodeSummary("h1", "a/x", "f1", "restart", (), 1, 7.0, "inconclusive", None, added=("g",))
    return LeadState(2, 0, 10, ("a/x", "b/y"), (n0, n1), {"restart": 2})


def test_epsilon_lead_and_candidates_are_valid() -> None:
    s = _state()
    assert {
        d.operation for op in ("evolve", "repair", "crossover", "restart") for d in candidates(s, op)
    } == {
        "evolve",
        "repair",
        "crossover",
        "restart",
    }
    rng = random.Random(0)
    lead = EpsilonLead(1.0)
    ops = {validate_lead_decision(lead.decide(s, rng), s).operation for _ in range(60)}
    assert len(ops) >= 3  # fully random: several operations
    with pytest.raises(ValueError, match="epsilon"):
        EpsilonLead(1.5)


def test_weights_change_the_fitted_policy() -> None:
    rng = np.random.default_rng(0)
    X = rng.standard_normal((80, len(FEATURES))).tolist()
    y = ["evolve"] * 40 + ["restart"] * 40
    w_evolve = [1.0] * 40 + [0.05] * 40
    w_restart = [0.05] * 40 + [1.0] * 40
    p_e = fit_policy(X, y, w_evolve).probabilities(X[0])
    p_r = fit_policy(X, y, w_restart).probabilities(X[0])
    assert p_e["evolve"] > 0.5 > p_r["evolve"]
    pol = OperationPolicy.from_json(fit_policy(X, y, w_evolve).to_json())
    assert PolicyLead(pol).decide(_state(), random.Random(0)).operation in (
        "evolve",
        "repair",
        "crossover",
        "restart",
    )
    s, rng = _state(), random.Random(1)
    sampled = {
        validate_lead_decision(PolicyLead(pol, sample=True).decide(s, rng), s).operation for _ in range(40)
    }
    assert len(sampled) >= 2  # sampling follows the distribution, not only its mode
    with pytest.raises(ValueError, match="at least two"):
        fit_policy(X, y, [1.0] * 40 + [0.0] * 40)


def test_placebo_weights_are_a_permutation_of_credit() -> None:
    rows = [{"omega": float(i)} for i in range(10)]
    sh = credit_info.arm_weights(rows, "shuffled", 3)
    assert sorted(sh) == credit_info.arm_weights(rows, "credit", 3) and sh != credit_info.arm_weights(
        rows, "credit", 3
    )
    assert credit_info.arm_weights(rows, "uniform", 3) == [1.0] * 10


def _rows(gain: float, placebo: float) -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    for k in range(6):
        base = {"direction": f"d{k}", "seed": 0, "share_evolve": 0.3, "share_repair": 0.1}
        noise = 0.05 * (k - 2.5)
        out += [
            {**base, "arm": "uniform", "l1_weighted_mean": 6.0, "share_restart": 0.5},
            {
                **base,
                "arm": "credit",
                "l1_weighted_mean": 6.0 + gain + noise,
                "share_restart": 0.4,
                "share_evolve": 0.4,
            },
            {
                **base,
                "arm": "shuffled",
                "l1_weighted_mean": 6.0 + gain - placebo + noise,
                "share_restart": 0.5,
            },
        ]
    return out


def test_preregistered_verdict() -> None:
    assert credit_report.verdict(_rows(0.6, 0.6))[0] == "convincing"
    assert credit_report.verdict(_rows(0.6, 0.0))[0].startswith("falsified")
    assert credit_report.verdict(_rows(0.1, 0.6))[0].startswith("inconclusive")
    assert credit_report.verdict(_rows(0.6, 0.6)[:6])[0].startswith("no verdict")


def test_credit_smoke_runs_in_chunks(tmp_path: Path) -> None:
    cfg = load_experiment_config(ROOT / "configs/discovery/credit_smoke.yaml")
    out = tmp_path / "credit"
    credit_info.run_experiment(cfg, out, max_new_campaigns=1)  # one chunk: one training campaign
    run = Run.open(out)
    assert len(run.events("credit_train_campaign")) == 1 and not run.events("theta_plus_policies")
    credit_info.run_experiment(cfg, out, resume=True)
    run = Run.open(out)
    fit = run.events("theta_plus_policies")[-1].payload
    assert set(fit["policies"]) == {"credit", "uniform", "shuffled"}
    assert fit["n_decisions"] == 6
    for sha in fit["policies"].values():
        pol = OperationPolicy.from_json(run.artifacts.get_json(sha))
        assert pol.meta["samples_sha256"] == fit["samples"]
    dev = run.events("credit_dev_campaign")
    assert {e.payload["row"]["arm"] for e in dev} == {"credit", "uniform", "shuffled"}
    assert all(e.payload["row"]["invalid_decisions"] == 0 for e in dev)
    assert run.events("credit_finished")
    text = credit_info.report(out)
    assert "pre-registered verdict" in text and "l1_weighted_mean" in text
