"""The ``reactions`` experiment: exact budgets, no leak of unrun yields, reproducible seeds, resume
(also mid-run), a never-seen grid file run from a config alone, and the predictor methods driven by
the protocol loop (reliability, trigger, gates on held-out rounds, retention)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from rsi_workbench import cli
from rsi_workbench.config import ConfigError
from rsi_workbench.domains.reactions import load_grid
from rsi_workbench.experiments.reactions import experiment as rx
from rsi_workbench.protocol.decisions import RegressionReliabilityCriteria, regression_reliability
from rsi_workbench.records import Run, load_events

TINY = {
    "grids": ["perera2018-suzuki"],
    "runs": 2,
    "cohort_size": 2,
    "n_initial": 4,
    "n_total": 10,
    "report_at": [5, 10],
    "bootstrap": 100,
    "predictor": {"members": 3, "hidden": 8, "fit_steps": 20, "adapt_steps": 5},
    "bo": {"fit_steps": 5},
    "embed": {"members": 3, "hidden": 8, "fit_steps": 20, "adapt_steps": 5},
}
ALL = ["predictor_utility", "predictor_information", "gp_ei", "random"]


def _cfg(**kw: object) -> rx.Config:
    return rx.Config.model_validate({**TINY, **kw})


def _finished(path: Path) -> dict[tuple[str, str, int], tuple[list[int], list[float]]]:
    df = rx.runs_frame(path)
    return {(r.grid, r.method, r.seed): (list(r.indices), list(r.yields)) for r in df.itertuples()}


@pytest.mark.slow
@pytest.mark.parametrize("method", [*ALL, "predictor_utility_gp", "predictor_utility_embed"])
def test_selector_never_sees_an_unrun_yield(method: str, tmp_path: Path) -> None:
    """Counterfactual replay: change every yield no run observed; every selection stays the same."""
    grid = load_grid("perera2018-suzuki")
    cfg = _cfg(methods=[method])

    def runs(g, tag: str) -> list[dict]:
        if method in rx.PREDICTOR_METHODS:
            return [rx.run_protocol(g, method, s, cfg, tmp_path / f"{tag}-{s}") for s in (7, 8)]
        return rx.run_cohort(g, method, [7, 8], cfg)[1]

    first = runs(grid, "a")
    seen = {i for s in first for i in s["indices"]}
    other = np.random.default_rng(1).uniform(0, 100, grid.n)
    ys = np.where(np.isin(np.arange(grid.n), list(seen)), grid.yields, other)
    second = runs(dataclasses.replace(grid, yields=ys), "b")
    for a, b in zip(first, second):
        assert a["indices"] == b["indices"] and a["yields"] == b["yields"]


@pytest.mark.slow
def test_same_seed_reproduces_a_run_exactly_and_budgets_are_exact(tmp_path: Path) -> None:
    cfg = _cfg(methods=ALL)
    a = rx.run_experiment(cfg, tmp_path / "a")
    b = rx.run_experiment(cfg, tmp_path / "b")
    fa, fb = _finished(a), _finished(b)
    assert fa == fb and len(fa) == 2 * len(ALL)
    df = rx.runs_frame(a)
    for _, r in df.iterrows():
        assert len(r["indices"]) == len(set(r["indices"])) == cfg.n_total
        assert r["budgets.external_feedback.spent"] == cfg.n_total
        assert r["budgets.external_feedback.remaining"] == 0
        if r["method"] in rx.PREDICTOR_METHODS:
            assert r["budgets.update_compute.spent"] <= cfg.update_budget
        assert r["indices"][: cfg.n_initial] == rx.initial_conditions(
            384, cfg.n_initial, r["seed"], r["grid"]
        )
    # every method of a seed starts from the same initial observations
    for s in (4001, 4002):
        starts = {tuple(v[0][: cfg.n_initial]) for k, v in fa.items() if k[2] == s}
        assert len(starts) == 1
    obs = load_events(a, kind="observation")  # the baselines' cohort log
    assert set(obs["evidence"]) == {"E3"}
    assert obs.groupby(["method", "seed"]).size().eq(cfg.n_total).all()
    for rd in df[df.method.isin(rx.PREDICTOR_METHODS)]["run_dir"]:  # the loop's own run directories
        pairs = [e.payload["pair"] for e in Run.open(a / rd).events("observation")]
        assert len(pairs) == cfg.n_total and {p["observation"]["evidence"] for p in pairs} == {"E3"}
    text = rx.report(a)
    assert "predictor_utility − gp_ei" in text and not (a / "report.txt").exists()  # viewing never writes
    assert "wall time (from the cohort_finished events" in text
    assert set(rx.curves(a)["method"]) == set(ALL)


@pytest.mark.slow
def test_resume_after_an_interruption_matches_an_uninterrupted_run(tmp_path: Path, monkeypatch) -> None:
    """Killed twice — once inside a protocol run (mid-cycle sequence), once inside a baseline cohort —
    and resumed: the same runs as an uninterrupted experiment."""
    cfg = _cfg(methods=["predictor_utility", "random"], cohort_size=1)
    real_eval, real_cohort = rx.ReactionEnvironment.evaluate, rx.run_cohort
    calls = {"n": 0}

    def dies_on_13th_experiment(self, *a):  # test double: "killed" mid-cycle in the 2nd protocol run
        calls["n"] += 1
        if calls["n"] == 13:
            raise KeyboardInterrupt
        return real_eval(self, *a)

    def dies(*a, **k):  # test double: a kill inside the baseline cohort
        raise KeyboardInterrupt

    monkeypatch.setattr(rx.ReactionEnvironment, "evaluate", dies_on_13th_experiment)
    with pytest.raises(KeyboardInterrupt):
        rx.run_experiment(cfg, tmp_path / "cut")
    assert len(_finished(tmp_path / "cut")) == 2  # seed 4001: protocol run + random cohort
    monkeypatch.setattr(rx.ReactionEnvironment, "evaluate", real_eval)
    monkeypatch.setattr(rx, "run_cohort", dies)
    with pytest.raises(KeyboardInterrupt):
        rx.run_experiment(cfg, tmp_path / "cut", resume=True)  # finishes the cut protocol run first
    assert len(_finished(tmp_path / "cut")) == 3
    cut_run = Run.open(tmp_path / "cut" / "runs" / "perera2018-suzuki" / "predictor_utility-seed4002")
    assert len(list(cut_run.events("cycle_attempt_discarded"))) == 1  # the cut cycle was redone
    monkeypatch.setattr(rx, "run_cohort", real_cohort)
    rx.run_experiment(cfg, tmp_path / "cut", resume=True)
    whole = rx.run_experiment(cfg, tmp_path / "whole")
    assert _finished(tmp_path / "cut") == _finished(whole)
    n_before = len(load_events(tmp_path / "cut", kind="run_finished"))
    rx.run_experiment(cfg, tmp_path / "cut", resume=True)  # nothing left: a no-op
    assert len(load_events(tmp_path / "cut", kind="run_finished")) == n_before


@pytest.mark.slow
def test_predictor_runs_adapt_only_through_the_protocol_gates(tmp_path: Path) -> None:
    """Every adaptation follows an unreliable verdict and a trigger, trains on update rounds only, is
    judged by the predictor and pair gates on held-out rounds, and is kept only if both pass."""
    grid = load_grid("perera2018-suzuki")
    cfg = _cfg(n_initial=6, n_total=24, runs=1)
    rx.run_protocol(grid, "predictor_utility", 11, cfg, tmp_path / "r")
    evs = list(Run.open(tmp_path / "r").events())
    kinds = [e.kind for e in evs]
    assert "gate_execution" not in kinds  # gates re-predict recorded rounds; nothing extra is run
    by_cycle: dict[int, list] = {}
    for e in evs:
        if e.cycle is not None:
            by_cycle.setdefault(e.cycle, []).append(e)
    proposed = 0
    for k, es in by_cycle.items():
        prop_ev = next(e.payload for e in es if e.kind == "proposal")
        split = prop_ev["split"]
        assert prop_ev["n_candidates"] == 384 - (k - 1)  # every unrun condition was a candidate ...
        assert prop_ev["n_recorded"] <= cfg.record_candidates + 1  # ... the event keeps the best few
        assert split == ("gate" if k % 4 == 0 else "update")  # gate_fraction 0.25: rounds 4, 8, ...
        trig = next(e.payload for e in es if e.kind == "adaptation_trigger")
        rel = next(e.payload for e in es if e.kind == "reliability")
        prop = [e.payload for e in es if e.kind == "predictor_proposed"]
        assert bool(prop) == trig["triggered"]
        if trig["triggered"]:
            proposed += 1
            assert rel["verdict"] == "unreliable"
            n_update = sum(1 for j in range(1, k + 1) if j % 4 != 0)
            assert prop[0]["records"] == n_update  # held-out rounds never train the predictor
            gates = {e.payload["gate"]: e.payload for e in es if e.kind == "gate"}
            retain = next(e.payload for e in es if e.kind == "retain")
            kept = retain["predictor_version"] == prop[0]["to"]
            assert kept == (gates["predictor"]["passed"] and gates["pair"]["passed"])
            assert "gaussian_nll" in gates["predictor"]["current"]
    assert proposed >= 1


UNSEEN = """\
catalyst,additive,T_K,time_h,conversion_pct
"""


@pytest.mark.slow
def test_a_never_seen_grid_runs_from_its_config_alone(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    lines = [UNSEEN.strip()]
    for c in ["Ni(cod)2", "NiCl2·glyme", "Pd2dba3"]:
        for a in ["", "LiCl", "ZnF2"]:
            for t in [298, 323, 348]:
                for h in [2, 8]:
                    y = float(
                        np.clip(
                            20
                            + 15 * (c == "Pd2dba3")
                            + 10 * (a == "LiCl")
                            + (t - 298) / 2
                            + h
                            + rng.normal(0, 3),
                            0,
                            100,
                        )
                    )
                    lines.append(f"{c},{a},{t},{h},{y:.3f}")
    (tmp_path / "my_screen.csv").write_text("\n".join(lines) + "\n")
    (tmp_path / "cfg.yaml").write_text(
        f"""experiment: reactions
grids:
  - name: my-screen
    path: {tmp_path / "my_screen.csv"}
    factors:
      - {{column: catalyst}}
      - {{column: additive, none_level: none}}
      - {{column: T_K, kind: numeric}}
      - {{column: time_h, kind: numeric}}
    yield_column: conversion_pct
methods: [predictor_utility, gp_ei, random]
runs: 2
n_initial: 4
n_total: 12
report_at: [6, 12]
bootstrap: 100
predictor: {{members: 3, hidden: 8, fit_steps: 20, adapt_steps: 5}}
bo: {{fit_steps: 5}}
"""
    )
    assert cli.main(["run", str(tmp_path / "cfg.yaml"), "--out", str(tmp_path / "out")]) == 0
    text = (tmp_path / "out" / "report.txt").read_text()
    assert "## my-screen" in text and "gp_ei" in text
    assert len(rx.runs_frame(tmp_path / "out")) == 6


def test_unknown_builtin_grid_is_a_config_error_naming_the_field(tmp_path: Path) -> None:
    p = tmp_path / "bad.yaml"
    p.write_text("experiment: reactions\ngrids: [perera2019]\n")
    with pytest.raises(ConfigError, match=r"(?s)bad\.yaml.*- grids: .*unknown built-in grid 'perera2019'"):
        cli.load_experiment_config(p)


def test_n_initial_must_leave_budget(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="n_initial"):
        rx.Config(n_initial=40, n_total=40)


def test_regression_reliability_is_tri_state_and_version_bound() -> None:
    crit = RegressionReliabilityCriteria(min_predictions=2, max_mae=10.0, max_mean_abs_z=2.0)
    one = [("r", "v1", 50.0, 10.0, 52.0)]
    assert regression_reliability(one, "v1", crit).verdict == "insufficient"
    good = one + [("r", "v1", 40.0, 10.0, 45.0)]
    assert regression_reliability(good, "v1", crit).verdict == "reliable"
    bad = one + [("r", "v1", 40.0, 10.0, 80.0)]
    v = regression_reliability(bad, "v1", crit)
    assert v.verdict == "unreliable" and any("mae" in r for r in v.reasons)
    overconfident = [("r", "v1", 50.0, 0.5, 53.0), ("r", "v1", 50.0, 0.5, 47.0)]
    assert regression_reliability(overconfident, "v1", crit).verdict == "unreliable"
    # predictions of an earlier version are not attributable to the current one
    v2 = regression_reliability(bad, "v2", crit)
    assert v2.verdict == "insufficient" and v2.n_excluded_other_versions == 2


def test_gp_predictor_refits_on_what_it_is_handed_and_round_trips_exactly() -> None:
    from rsi_workbench.domains.reactions.baselines import BOConfig
    from rsi_workbench.domains.reactions.binding import GPPredictor, ReactionEnvironment
    from rsi_workbench.protocol.spec import Observation, PairRecord

    grid = load_grid("perera2018-suzuki")
    env = ReactionEnvironment(grid)
    prior = GPPredictor(env.features, 5, BOConfig(fit_steps=5))
    assert prior.version == "gp-s5-v0"
    idx = [3, 40, 77, 150, 222, 301]
    recs = [
        PairRecord(
            "c", k + 1, {}, {"index": i}, None, Observation({"yield": float(grid.yields[i])}), "p", None, "u"
        )
        for k, i in enumerate(idx)
    ]
    fitted = prior.adapt(recs, seed=0)
    assert fitted.version == "gp-s5-v1" and fitted.model.train_index == idx and prior.model.train_index == []
    preds = fitted.predict("c", None, [3, 10, 200])
    assert all(p.gaussian["yield"][1] > 0 and p.version == "gp-s5-v1" for p in preds)
    again = GPPredictor.from_bytes(fitted.to_bytes(), env.features)
    assert [p.gaussian for p in again.predict("c", None, [3, 10, 200])] == [p.gaussian for p in preds]
    assert again.adapt(recs, seed=0).version == "gp-s5-v2"  # warm-started refit


def test_old_configs_dump_unchanged_and_gp_needs_two_points() -> None:
    old = _cfg(methods=ALL)
    dumped = old.model_dump(mode="json")
    assert "gate_data" not in dumped and "gate_window" not in dumped
    assert "gate_window" not in rx.protocol_settings(old, "predictor_utility", 384).model_dump(mode="json")
    assert rx.protocol_settings(old, "predictor_utility", 384).gate_data == "held_out_observations"
    new = _cfg(gate_data="prequential", gate_window=3, methods=["predictor_information_gp"])
    s = rx.protocol_settings(new, "predictor_information_gp", 384)
    assert (s.gate_data, s.gate_window, s.rule) == ("prequential", 3, "info_gain")
    with pytest.raises(ValueError, match="min_adapt_examples >= 2"):
        _cfg(methods=["predictor_utility_gp"], min_adapt_examples=1)


@pytest.mark.slow
def test_prequential_smoke_runs_both_predictor_families_and_reports_data_use(tmp_path: Path) -> None:
    from rsi_workbench.config import load_config

    cfg = load_config(Path(__file__).parents[2] / "configs/reactions/prequential_smoke.yaml", rx.Config)
    out = rx.run_experiment(cfg, tmp_path / "x")
    df = rx.runs_frame(out)
    assert set(df["method"]) == {
        "predictor_utility",
        "predictor_utility_gp",
        "predictor_utility_embed",
        "gp_ei",
        "random",
    }
    prefix = {"predictor_utility": "ens-", "predictor_utility_gp": "gp-", "predictor_utility_embed": "emb-"}
    for r in df[df["method"].isin(rx.PREDICTOR_METHODS)].itertuples():
        run = Run.open(out / r.run_dir)
        assert run.config["protocol"]["gate_data"] == "prequential"
        evs = list(run.events())
        assert {e.payload["pair"]["split"] for e in evs if e.kind == "observation"} == {"prequential"}
        for e in evs:
            if e.kind == "gate" and e.payload["gate"] == "predictor":
                assert e.payload["gate_data"]["rule"] == "prequential"
        versions = {e.payload["predictor_version"] for e in evs if e.kind == "cycle_started"}
        assert all(v.startswith(prefix[r.method]) for v in versions)
    text = rx.report(out)
    assert "predictor_utility_gp − gp_ei" in text and "predictor_utility_embed − gp_ei" in text
    assert text.count("data use per run: trained the final predictor") == 3
