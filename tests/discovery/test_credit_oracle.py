"""The planted oracle value of a decision, the oracle-weighted theta+ arm, the family-caps option and
the shared-draw split diagnostic of the credit-information experiment."""

from __future__ import annotations

import pytest

from rsi_workbench.domains import tabular
from rsi_workbench.domains.tabular import oracle, synthetic
from rsi_workbench.domains.tabular.credit import (
    DEFAULT_ARMS,
    FITTED_ARMS,
    arm_weights,
    decision_splits,
    split_probability,
)
from rsi_workbench.domains.tabular.credit_policy import FEATURES, fit_policy
from rsi_workbench.experiments.discovery import credit_info

NAME = "synthetic-planted-20/outcome"


def test_more_planted_directions_for_training() -> None:
    assert synthetic.N_SYNTHETIC >= 40
    assert NAME in tabular.SYNTHETIC_DIRECTIONS
    # the first sixteen are unchanged by the extension (each is a pure function of its index)
    assert synthetic._design(3) == synthetic._design(3)


def test_planted_information_by_role() -> None:
    truth = tabular.planted_truth(NAME)
    strong = synthetic._design(20)["strong"]
    weak = synthetic._design(20)["weak"]
    red = next(g for g, r in truth.items() if r == "redundant")
    noise = next(g for g, r in truth.items() if r == "noise")
    info = oracle.planted_information
    assert info(NAME, ["context"]) == 0.5
    assert info(NAME, ["context", strong]) == 2.5
    assert info(NAME, ["context", strong, red]) == 2.5  # the redundant copy adds nothing beyond strong
    assert info(NAME, ["context", red]) == 2.5  # ... but all of it beyond a baseline without strong
    assert info(NAME, ["context", weak, noise, "noise"]) == 1.5


def _row(ep: int, omega: float, orc: float | None, op: str = "evolve") -> dict[str, object]:
    return {"campaign": "c", "episode": ep, "omega": omega, "oracle": orc, "operation": op}


def test_oracle_arm_weights_and_refusal() -> None:
    rows = [_row(1, 0.2, 1.0), _row(2, 0.1, 0.0), _row(3, 0.3, 2.5)]
    assert arm_weights(rows, "oracle", 0) == [1.0, 0.0, 2.5]
    assert "oracle" in FITTED_ARMS and "oracle" not in DEFAULT_ARMS  # the default arms are unchanged
    with pytest.raises(ValueError, match="planted oracle value"):
        arm_weights([*rows, _row(4, 0.1, None)], "oracle", 0)
    # an oracle-weighted fit learns the operation that produced value, the uniform fit does not
    X = [[float(i % 2)] + [0.0] * (len(FEATURES) - 1) for i in range(40)]
    y = ["evolve" if i % 4 < 2 else "restart" for i in range(40)]  # half each, independent of x
    orc = [2.0 if (i % 2 == 1) == (y[i] == "evolve") else 0.0 for i in range(40)]
    pol_o = fit_policy(X, y, orc, C=10.0)
    pol_u = fit_policy(X, y, [1.0] * 40, C=10.0)
    assert pol_o.probabilities(X[1])["evolve"] > 0.9 and pol_o.probabilities(X[0])["restart"] > 0.9
    assert abs(pol_u.probabilities(X[1])["evolve"] - 0.5) < 0.05
    splits = decision_splits({"oracle": pol_o, "uniform": pol_u}, X)
    assert splits["oracle-uniform"]["mean_split"] > 0.4
    assert splits["oracle-uniform"]["share_split_ge_threshold"] == 1.0


def test_omega_tracking_reads_episode_profile_and_oracle() -> None:
    from rsi_workbench.discovery.records import DiscoveryRecords

    rows = [_row(e, 1.0 / (e + 1), None) for e in range(5)]
    got = oracle.omega_tracking(rows, {"c": DiscoveryRecords()})
    assert got["rho_episode"] == pytest.approx(-1.0)
    assert got["n_oracle"] == 0


def test_split_probability() -> None:
    p = {"evolve": 0.6, "restart": 0.4}
    assert split_probability(p, p) == pytest.approx(0.0)
    assert split_probability({"evolve": 1.0}, {"restart": 1.0}) == pytest.approx(1.0)
    q = {"evolve": 0.5, "restart": 0.5}
    assert split_probability(p, q, ["evolve", "restart"]) == pytest.approx(0.1)  # u in [0.5, 0.6)
    # never below the total-variation distance
    r = {"evolve": 0.2, "repair": 0.3, "restart": 0.5}
    s = {"evolve": 0.3, "repair": 0.3, "restart": 0.4}
    tv = 0.5 * sum(abs(r[k] - s[k]) for k in r)
    assert split_probability(r, s, ["evolve", "repair", "restart"]) >= tv - 1e-12


def test_family_caps_option_dumps_only_when_set() -> None:
    base = {
        "train_directions": ["synthetic-planted-20/outcome"],
        "train_seeds": [0],
        "dev_directions": ["synthetic-planted-00/outcome"],
        "dev_seeds": [0],
    }
    assert "family_caps" not in credit_info.Config(**base).model_dump()  # older configs dump as before
    cfg = credit_info.Config(**base, family_caps=False, dev_episodes=14, arms=["oracle", "uniform"])
    assert cfg.model_dump()["family_caps"] is False and cfg.dev_episodes == 14
    assert credit_info.credit_settings(False).shares.c_loc == float("inf")
    assert credit_info.credit_settings(True).shares.c_loc == 2.0
