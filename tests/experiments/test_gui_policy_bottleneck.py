"""The GUI policy-bottleneck settings without a browser: the exact checkbox world model, the oracle
policy update, the start overrides, the tie-breaking policy gate, and the report's tier-curve area
and action-economy metrics read from a run's events."""

from __future__ import annotations

import importlib
import random
from pathlib import Path

import pytest

from rsi_workbench.domains.gui.components import (
    ActionScoringPolicy,
    exact_checkbox_world,
    oracle_labels,
)
from rsi_workbench.domains.gui.features import candidate_actions
from rsi_workbench.domains.gui.generation import protocol_settings, starting_pair
from rsi_workbench.experiments.gui.experiment import Config
from rsi_workbench.protocol.gates import PolicyGateCriteria, policy_gate
from rsi_workbench.records import Run
from tests.experiments.test_gui import page, records

gui_report = importlib.import_module("rsi_workbench.experiments.gui.report")
UTIL = {"p_success": 1.0, "submit_score": 0.5, "ends_success": 0.5}


def test_exact_world_model_is_right_for_a_checkbox_page() -> None:
    w = exact_checkbox_world(0)
    st = page([False, True, False], [0, 1])
    acts = [{"type": "click", "ref": 11}, {"type": "click", "ref": 13}, {"type": "submit"}]
    preds = w.predict("t", st, acts)
    assert [round(c) for c in preds[0].extra["checked_after"]] == [1, 1, 0]  # the click ticks box 0
    assert [round(c) for c in preds[1].extra["checked_after"]] == [0, 0, 0]  # and unticks box 1
    assert preds[0].utility_terms["p_success"] > 0.9 > 0.1 > preds[2].utility_terms["p_success"]


def test_oracle_labels_and_update_rank_the_fixing_click_first() -> None:
    st = page([False, True, False], [0])
    acts = candidate_actions(st)
    lab = dict(zip([str(a) for a in acts], oracle_labels(st, acts)))
    assert lab[str({"type": "click", "ref": 11})] == 1.0  # ticks a wanted box
    assert lab[str({"type": "click", "ref": 13})] == 1.0  # unticks an unwanted one
    assert lab[str({"type": "click", "ref": 15})] == -1.0
    assert lab[str({"type": "submit"})] == -1.0
    assert oracle_labels(page([True], [0]), [{"type": "submit"}]) == [2.0]
    p0 = ActionScoringPolicy(utility=UTIL, temperature=0.0).as_oracle()
    p1 = p0.update(records(40, seed=5), [], seed=0)
    assert p1.oracle and ActionScoringPolicy.from_bytes(p1.to_bytes()).oracle
    assert b"oracle" not in ActionScoringPolicy(utility=UTIL).to_bytes()  # old artifacts keep their bytes
    got = p1.with_temperature(0.0).propose("t", page([False, False, False], [1]), 1, random.Random(0))
    assert got[0] in ({"type": "click", "ref": 13}, {"type": "click", "ref": 12})


def test_start_overrides_and_oracle_method_settings() -> None:
    cfg = Config(task="click-checkboxes", k=1, methods=["rsi", "world_based", "oracle"])
    trained = ActionScoringPolicy([1.0] * 13, utility=UTIL)
    pol, world = starting_pair(cfg, 3, (trained, None), world="exact", policy="untrained")  # type: ignore[arg-type]
    assert not pol.weights.any() and world.version == exact_checkbox_world(3).version
    same = starting_pair(cfg, 3, (trained, world))
    assert same[0] is trained and same[1] is world
    ps = protocol_settings(cfg, "oracle", 1)
    assert ps.policy_update.enabled and ps.adaptation.enabled and ps.k == 1
    assert Config.model_validate({"start_world": "exact", "start_policy": "untrained"}).start_world == "exact"
    with pytest.raises(ValueError):
        Config.model_validate({"start_world": "perfect"})


def test_policy_gate_tie_break_prefers_fewer_actions_only_when_asked() -> None:
    cur = {"utility": 1.5, "actions_to_best": 2.5}
    fewer = {"utility": 1.5, "actions_to_best": 1.25}
    more = {"utility": 1.5, "actions_to_best": 3.0}
    strict = PolicyGateCriteria()
    assert not policy_gate(cur, fewer, strict, 4).passed  # the default needs a strict utility gain
    tb = PolicyGateCriteria(tie_break="fewer_actions")
    d = policy_gate(cur, fewer, tb, 4)
    assert d.passed and "tie_break" in d.extra
    assert not policy_gate(cur, more, tb, 4).passed
    assert not policy_gate(cur, {"utility": 1.4, "actions_to_best": 1.0}, tb, 4).passed  # a loss is no tie
    loose = PolicyGateCriteria(tie_break="fewer_actions", tie_tolerance=0.2)
    assert policy_gate(cur, {"utility": 1.4, "actions_to_best": 1.0}, loose, 4).passed
    assert policy_gate(cur, {"utility": 1.6, "actions_to_best": 9.0}, tb, 4).passed  # a gain still passes
    assert not policy_gate({"utility": 1.5}, {"utility": 1.5}, tb, 4).passed  # no counts: no tie-break


def _episode(pair: str, seed: int, success: bool, n: int, wrong: bool, rep: int) -> dict:
    return {
        "pair": pair,
        "test_seed": seed,
        "infra_failure": False,
        "success": success,
        "n_actions": n,
        "wrong_submit": wrong,
        "repeated_clicks": rep,
        "elapsed_s": 1.0,
    }


def test_report_tier_curve_area_and_action_economy(tmp_path: Path) -> None:
    cfg = {"task": "click-checkboxes", "methods": ["rsi", "world_based", "oracle"], "bootstrap": 20}
    curves = {"rsi": [0.0, 0.5, 1.0], "world_based": [0.0, 0.0, 0.5], "oracle": [0.0, 1.0, 1.0]}
    with Run.create(tmp_path / "r", cfg, kind="gui") as run:
        for s in (0, 1):
            for m, curve in curves.items():
                for t, share in enumerate(curve):
                    key = f"{m}-{s}-{t}"
                    run.append("tier", {"seed": s, "method": m, "tier": t, "pair": key})
                    for i in range(4):
                        ok = i < 4 * share
                        run.append(
                            "test_episode", _episode(key, i, ok, 2 if ok else 5, not ok, 0 if ok else 1)
                        )
        run.commit()
    auc = gui_report.seed_auc(gui_report.seed_success(tmp_path / "r"))
    assert auc["rsi"][0] == pytest.approx(0.5) and auc["world_based"][1] == pytest.approx(0.125)
    assert auc["oracle"][0] == pytest.approx(0.75)
    text = gui_report.auc_markdown(tmp_path / "r")
    assert "oracle − world_based: +62.5 pp" in text and "rsi − world_based: +37.5 pp" in text
    eco = gui_report.episode_economy(tmp_path / "r")
    assert eco["rsi"][0][1] == {
        "mean_actions": 3.5,
        "wrong_submits": 2.0,
        "repeated_clicks": 2.0,
        "episodes": 4.0,
    }
    assert "| oracle | 1 | 5.00 / 4 / 4 | 2.00 / 0 / 0 | 2.00 / 0 / 0 |" in gui_report.economy_markdown(
        tmp_path / "r"
    )


def test_tie_break_gate_records_actions_to_best_in_the_loop(tmp_path: Path) -> None:
    from tests.experiments.gui_sim import run_sim_generation

    cfg = Config(
        train_episodes=4,
        gate_episodes=2,
        max_actions=4,
        explore_cycles=1,
        world_steps=30,
        k=1,
        min_policy_records=2,
        gates={"pair": {"max_brier_increase": 0.1}, "policy": {"tie_break": "fewer_actions"}},
    )
    pol = ActionScoringPolicy(utility=UTIL, temperature=0.5, always_submit=True)
    run = Run.open(run_sim_generation(tmp_path / "g", pol, cfg, method="oracle"))
    gates = [e.payload for e in run.events("gate") if e.payload["gate"] == "policy"]
    assert gates and all("actions_to_best" in g["current"] for g in gates)
    assert all(g["thresholds"]["tie_break"] == "fewer_actions" for g in gates)
