"""``rsi-workbench report --diagnostics``: the reactions "why" figures and the dreaming spread, gap and
attempt outcomes, computed from records by pure functions (synthetic records with known answers, then
real tiny runs through the CLI)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from rsi_workbench import cli
from rsi_workbench.experiments.dreaming import diagnostics as dd
from rsi_workbench.experiments.reactions import diagnostics as rd
from rsi_workbench.records import Event


# -- reactions --------------------------------------------------------------------------------------
def _ev(kind: str, cycle: int, **payload: Any) -> Event:
    return Event(seq=0, kind=kind, cycle=cycle, payload=payload, time=0.0)


def _gate(passed: bool, reasons: list[str], n_units: int) -> dict[str, Any]:
    return {
        "gate": "predictor",
        "passed": passed,
        "skipped": False,
        "reasons": reasons,
        "n_units": n_units,
        "thresholds": {"score": "gaussian_nll"},
    }


def _cycle(k: int, version: str, split: str = "update") -> list[Event]:
    return [_ev("cycle_started", k, predictor_version=version), _ev("observation", k, pair={"split": split})]


def _retain(k: int, version: str, proposed: str | None) -> Event:
    return _ev("retain", k, predictor_version=version, proposed_predictor_version=proposed)


def test_run_diagnostics_counts_reasons_missing_rounds_and_the_prior() -> None:
    """Cycles 1-2 initial design (update), 3 held out; refits at 2 (no held-out round yet), 3 (NLL
    and ranking fail on 1 unit), 4 (passes on 1 unit, trained on 3 update rounds)."""
    no_units = "no gate units with observed outcomes: cannot show a gaussian_nll improvement"
    nll = "gaussian_nll gain -0.1000 ≤ min_brier_gain 0.0"
    rank = "ranking drop 0.5000 > max_ranking_drop 0.0"
    trig = _ev("adaptation_trigger", 0, triggered=True)
    evs = [
        *_cycle(1, "v0"),
        _ev("adaptation_trigger", 1, triggered=False),
        _retain(1, "v0", None),
        *_cycle(2, "v0"),
        trig,
        _ev("predictor_proposed", 2, to="v1", records=2),
        _ev("gate", 2, **_gate(False, [no_units], 0)),
        _retain(2, "v0", "v1"),
        *_cycle(3, "v0", "gate"),  # first guided selection, still on the prior; 2 update rounds missing
        trig,
        _ev("predictor_proposed", 3, to="v1", records=2),
        _ev("gate", 3, **_gate(False, [nll, rank], 1)),
        _retain(3, "v0", "v1"),
        *_cycle(4, "v0"),  # 2 missing
        trig,
        _ev("predictor_proposed", 4, to="v1", records=3),
        _ev("gate", 4, **_gate(True, [], 1)),
        _retain(4, "v1", "v1"),
        *_cycle(5, "v1"),  # trained on 3 of 3: none missing
    ]
    d = rd.run_diagnostics(evs, initial_design=2)
    assert d["triggered"] == 3 and d["gate_failed"] == 2 and d["kept"] == 1
    assert (d["failed_no_units"], d["failed_score"], d["failed_ranking"]) == (1, 1, 1)
    assert d["failed_budget"] == d["failed_other"] == 0
    assert (d["held_out_min"], d["held_out_max"]) == (1, 1)
    assert d["missing_mean"] == pytest.approx((2 + 2 + 0) / 3)
    assert d["prior_at_first_guided"] is True
    s = rd.summary(pd.DataFrame([{"grid": "g", "method": "predictor_utility", "seed": 1, **d}]))
    row = s.iloc[0]
    assert row["share_score"] == row["share_ranking"] == row["share_no_units"] == 0.5
    assert row["prior_at_first_guided"] == 1


def test_failure_reasons_of_budget_and_unknown_text() -> None:
    assert rd.failure_reasons({"reasons": ["update budget: exhausted"], "thresholds": {}}) == {"budget"}
    assert rd.failure_reasons({"reasons": ["something new"], "thresholds": {}}) == {"other"}


@pytest.fixture(scope="module")
def reactions_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from rsi_workbench.experiments.reactions import experiment as rx

    cfg = rx.Config.model_validate(
        {
            "grids": ["perera2018-suzuki"],
            "methods": ["predictor_utility"],
            "runs": 2,
            "cohort_size": 2,
            "n_initial": 4,
            "n_total": 10,
            "report_at": [5, 10],
            "bootstrap": 100,
            "predictor": {"members": 3, "hidden": 8, "fit_steps": 20, "adapt_steps": 5},
        }
    )
    return rx.run_experiment(cfg, tmp_path_factory.mktemp("rx") / "exp")


def test_reactions_diagnostics_agree_with_the_run_summaries(
    reactions_run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from rsi_workbench.experiments.reactions.experiment import runs_frame

    fin = runs_frame(reactions_run).set_index("seed")
    diag = rd.runs_frame(reactions_run).set_index("seed")
    assert sorted(diag.index) == sorted(fin.index) == [4001, 4002]
    for s in diag.index:
        assert diag.loc[s, "triggered"] == fin.loc[s, "adaptations_triggered"]
        assert diag.loc[s, "kept"] == fin.loc[s, "adaptations"]
        assert diag.loc[s, "triggered"] - diag.loc[s, "gate_failed"] == fin.loc[s, "predictor_gate_passed"]
        assert diag.loc[s, "failed_other"] == 0  # every recorded reason is classified
        assert diag.loc[s, "missing_mean"] >= 0
    assert cli.main(["report", "--diagnostics", str(reactions_run)]) == 0
    out = capsys.readouterr().out
    assert "reactions diagnostics" in out and "predictor_utility" in out


# -- dreaming ---------------------------------------------------------------------------------------
def _nodes() -> pd.DataFrame:
    rows = []
    for arm, seed, scores in [
        ("a", 0, [1.0, 2.0, 3.0]),
        ("a", 1, [2.0, 2.0, 5.0]),
        ("b", 0, [4.0, None, 5.0]),
    ]:
        best = -np.inf
        for i, sc in enumerate(scores, start=1):
            valid = sc is not None
            best = max(best, sc) if valid else best
            rows.append(
                {
                    "arm": arm,
                    "seed": seed,
                    "calls": i,
                    "tree": 0,
                    "score": sc,
                    "valid": valid,
                    "best_so_far": best,
                    "payload": f"{arm}{seed}{i}",
                    "fail_class": None if valid else "optimizer_failure",
                    "error": "" if valid else "SLSQP exit 4: Inequality constraints incompatible",
                }
            )
    return pd.DataFrame(rows)


def test_best_by_calls_is_mean_and_population_sd_over_seeds() -> None:
    t = dd.best_by_calls(_nodes(), ["a"], [0, 1], [1, 3]).set_index("calls")
    assert t.loc[1, "mean"] == 1.5 and t.loc[1, "sd"] == 0.5  # ddof=0
    assert (t.loc[3, "seed_0"], t.loc[3, "seed_1"], t.loc[3, "mean"]) == (3.0, 5.0, 4.0)


def test_best_found_lists_every_arm_seed_that_reached_it_first_call() -> None:
    f = dd.best_found(_nodes())
    assert list(zip(f["arm"], f["seed"], f["call"])) == [("a", 1, 3), ("b", 0, 3)]
    assert (f["score"] == 5.0).all()


def test_replay_rounds_gap_and_summary() -> None:
    dep = pd.DataFrame(
        {
            "seed": [0, 0, 0],
            "tree": [0, 1, 2],
            "chosen": [0, 3, 1],
            "V_pi0": [1.0, 1.0, 2.0],
            "V_chosen": [1.0, 1.5, 2.1],
        }
    )
    rec = pd.DataFrame(
        {
            "arm": ["dreaming"] * 3,
            "seed": [0, 0, 0],
            "tree": [0, 1, 2],
            "V_online": [0.9, 1.2, 1.7],
            "nodes": [40, 20, 15],
        }
    )
    r = dd.replay_rounds(dep, rec)
    assert r["gap"].iloc[0] == pytest.approx(0.2) and r["gap"].iloc[1] == pytest.approx(0.2)
    assert np.isnan(r["gap"].iloc[2])  # the last round has no next tree
    s = dd.replay_summary(r)
    assert (s["rounds"], s["revisions"], s["tested"]) == (3, 2, 2)
    assert s["gain_mean"] == pytest.approx(0.3) and s["gain_max"] == pytest.approx(0.5)
    assert s["gap_revised"] == pytest.approx(0.2) and s["gap_pi0"] == pytest.approx(0.2)


def test_replay_rounds_with_undefined_V_give_nan_not_an_error() -> None:
    """Prefix-only replay may leave V undefined (None in the records): the round is NaN, never a number."""
    dep = pd.DataFrame({"seed": [0], "tree": [0], "chosen": [0], "V_pi0": [None], "V_chosen": [None]})
    rec = pd.DataFrame({"arm": ["dreaming"], "seed": [0], "tree": [1], "V_online": [None], "nodes": [3]})
    r = dd.replay_rounds(dep, rec)
    assert np.isnan(r["V_pi0"].iloc[0]) and np.isnan(r["gap"].iloc[0])


def test_attempt_outcomes_split_optimiser_exits() -> None:
    o = dd.attempt_outcomes(_nodes()).set_index("arm")
    assert o.loc["b", "attempts"] == 3 and o.loc["b", "valid"] == 2 and o.loc["b", "optimizer_exit_4"] == 1
    assert o.loc["a", "optimizer_exit_4"] == 0 and o.loc["a", "timeout"] == 0


def test_dreaming_diagnostics_on_a_real_run(dreaming_run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from rsi_workbench.experiments.dreaming.experiment import Config, load_frames
    from rsi_workbench.records import Run

    run = Run.open(dreaming_run)
    cfg = Config(**run.config)
    nodes = load_frames(dreaming_run, "tree_node")
    t = dd.best_by_calls(nodes, cfg.arms, cfg.seeds, [cfg.calls])
    for e in run.events("arm_finished"):  # the final mark is each arm's recorded best
        row = t[t["arm"] == e.payload["arm"]].iloc[0]
        assert row[f"seed_{e.payload['seed']}"] == pytest.approx(e.payload["best"])
    assert int(dd.attempt_outcomes(nodes)["attempts"].sum()) == len(nodes)
    assert cli.main(["report", "--diagnostics", str(dreaming_run)]) == 0
    out = capsys.readouterr().out
    assert "best valid score after N calls" in out and "attempts by outcome" in out


# -- the committed best packing and its verify command ---------------------------------------------
REPO = Path(__file__).resolve().parents[2]
PACKING = REPO / "benchmarks" / "data" / "circle_packing_n26.json"


def _verify_packing() -> Any:
    import importlib

    return importlib.import_module("studies.dreaming_best_packing.verify_packing")


def test_verify_packing_accepts_a_valid_packing_and_rejects_an_overlap(tmp_path: Path) -> None:
    import json

    vp = _verify_packing()
    four = [[0.25, 0.25, 0.25], [0.75, 0.25, 0.25], [0.25, 0.75, 0.25], [0.75, 0.75, 0.25]]
    good = tmp_path / "four.json"
    good.write_text(json.dumps({"n": 4, "circles": four, "sum_of_radii": 1.0}))
    assert vp.main([str(good)]) == 0
    four[0][2] = 0.26  # overlaps its neighbours and leaves the square
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"n": 4, "circles": four, "sum_of_radii": 1.01}))
    assert vp.main([str(bad)]) == 1


def test_committed_n26_packing_verifies_with_the_exact_evaluator(capsys: pytest.CaptureFixture[str]) -> None:
    assert _verify_packing().main([str(PACKING)]) == 0
    assert "valid=True" in capsys.readouterr().out
