"""Dream-RSI with a diverse candidate set (issue 34): the fixed families beside π0 and its mutations,
with trees from the initial state and adaptive β; replay fidelity; the summaries; config errors."""

from __future__ import annotations

import importlib
import math
from pathlib import Path

import pytest

from rsi_workbench.cli import load_experiment_config
from rsi_workbench.config import ConfigError
from rsi_workbench.domains.math import dream_arm as arm_module
from rsi_workbench.domains.math.fidelity import fidelity, verdict
from rsi_workbench.experiments.dreaming.config import FidelitySettings
from rsi_workbench.experiments.dreaming.experiment import (
    Config,
    load_frames,
    make_task,
    report,
    run_experiment,
)
from rsi_workbench.experiments.dreaming.fidelity import seed_summaries
from rsi_workbench.records import Run
from rsi_workbench.replay.dreaming import DreamResult, adaptive_betas
from rsi_workbench.replay.tree import DiscoveryTree

REPO = Path(__file__).resolve().parents[2]
FAMILIES = ["greedy_deepest_best", "breadth_first"]


def _bench():
    """studies/dreaming_diverse/dreaming_diverse.py (a study script, outside the package)."""
    return importlib.import_module("studies.dreaming_diverse.dreaming_diverse")


def tiny(**kw) -> Config:
    base = {
        "task": {"kind": "autocorrelation", "m": 8, "maxiter": 20},
        "arms": ["dreaming_diverse", "portfolio", *FAMILIES],
        "seeds": [0, 1],
        "W": 2,
        "executor": "serial",
        "calls": 12,
        "calls_per_round": 4,
        "warm_start": False,
        "adaptive_beta": True,
        "dreaming": {"candidates": {"families": FAMILIES, "mutations": 2}},
        "fidelity": {},
    }
    return Config(**{**base, **kw})


@pytest.fixture(scope="module")
def diverse_run(tmp_path_factory) -> Path:
    return run_experiment(tiny(), tmp_path_factory.mktemp("diverse") / "exp")


def test_candidate_set_with_cold_start_and_adaptive_beta(diverse_run):
    sub = Run.open(diverse_run / "arms" / "dreaming_diverse-s0")
    started = [e.payload for e in sub.events("tree_started")]
    assert len(started) == 3 and all(p["root_payload"] is None and p["root_score"] is None for p in started)
    scored = load_frames(diverse_run, "replay_scored")
    for (_seed, _t), g in scored.groupby(["seed", "tree"]):  # π0, both families and 2 mutations each round
        labels = sorted(g["label"])
        assert labels == sorted(["pi0", *FAMILIES, "mutation", "mutation"]), labels
        assert set(g[g["label"].isin(FAMILIES)]["origin"]) == {"family"}
    trees = [
        DiscoveryTree.from_json(sub.artifacts.get_json(e.payload["artifact"]))
        for e in sub.events("tree_recorded")
    ]
    for e, tree, st in zip(sub.events("policy_deployed"), trees, started, strict=True):
        want = adaptive_betas(
            tree, st["root_score"], c1=0.5, ratio=2.0
        )  # β from that round, not the config's
        assert (e.payload["beta1"], e.payload["beta2"]) == pytest.approx(want)
        assert e.payload["label"] in ("pi0", "mutation", *FAMILIES)
    assert any(e.payload["beta1"] != 1e-4 for e in sub.events("policy_deployed"))
    text = report(diverse_run)
    assert "rounds won per candidate" in text and "replay fidelity (dreaming_diverse)" in text
    assert "pre-registered verdict (2 seeds, best@12)" in text


def test_a_deployed_family_drives_the_next_tree_and_resumes(tmp_path, monkeypatch):
    real = arm_module.dream

    def dream_choosing_breadth_first(current, history, **kw):  # test double: replay's pick forced
        res = real(current, history, **kw)
        i = next(i for i, c in enumerate(res.candidates) if getattr(c, "name", "") == "breadth_first")
        return DreamResult(res.candidates, res.scores, i, res.failures)

    monkeypatch.setattr(arm_module, "dream", dream_choosing_breadth_first)
    out = run_experiment(tiny(arms=["dreaming_diverse"], seeds=[0]), tmp_path / "exp")
    sub = Run.open(out / "arms" / "dreaming_diverse-s0")
    dep = [e.payload for e in sub.events("policy_deployed")]
    assert [d["family"] for d in dep] == ["breadth_first"] * 3 and all(
        d["label"] == "breadth_first" for d in dep
    )
    assert [e.payload["policy"] for e in sub.events("tree_started")] == [
        "dreaming_diverse",
        "breadth_first",
        "breadth_first",
    ]
    scored = load_frames(out, "replay_scored")
    later = scored[scored["tree"] == 1]
    assert later[later["candidate"] == 0]["label"].item() == "breadth_first"  # candidate 0 = the family
    assert list(later["label"]).count("breadth_first") == 1 and "pi0" in set(later["label"])
    cfg = tiny(arms=["dreaming_diverse"], seeds=[0])
    resumed = arm_module.ArmRun(
        cfg,
        make_task(cfg.task),
        "dreaming_diverse",
        0,
        out / "arms" / "dreaming_diverse-s0",
        sub,
    )
    assert resumed.family == "breadth_first" and resumed._policy(3).name == "breadth_first"


def _summary(seed: int, V: dict[str, float], online: dict[str, float], deployed: str = "pi0") -> dict:
    arms = {a: {"best_at": {"12": v}, "rounds": 3, "calls": 12, "finished": True} for a, v in online.items()}
    arms["dreaming_diverse"] = {
        "best_at": {"12": max(online.values())},
        "rounds": 3,
        "calls": 12,
        "finished": True,
    }
    label = {"portfolio": "pi0"}
    cands = [
        {"label": label.get(a, a), "V": v, "deployed": label.get(a, a) == deployed} for a, v in V.items()
    ]
    rounds = [{"tree": t, "candidates": cands} for t in range(3)]
    return {"seed": seed, "budget": 12, "arms": arms, "choices": {"dreaming_diverse": rounds}}


def test_fidelity_rho_pooling_and_verdict_on_summaries():
    online = {"portfolio": -3.0, "greedy_deepest_best": -2.0, "breadth_first": -1.0}
    agree = [
        _summary(
            s,
            {"portfolio": 0.1 + s, "greedy_deepest_best": 0.2 + s, "breadth_first": 0.3 + s},
            online,
            "breadth_first",
        )
        for s in range(4)
    ]
    st = FidelitySettings()
    res = fidelity(agree, st)
    assert res.rho == pytest.approx(1.0) and res.n_points == 12 and res.budget == 12
    # raw values pooled across seeds mix each seed's V level (β, trees): why within-seed ranks are declared
    assert fidelity(agree, FidelitySettings(pooling="raw", online="same_seed")).rho < 0.5
    text = "\n".join(verdict(agree, st, FAMILIES, 12))
    assert "rounds deploying the winner (breadth_first): 8/8" in text and "ρ = +1.000" in text
    reverse = [
        _summary(s, {"portfolio": 0.3, "greedy_deepest_best": 0.2, "breadth_first": 0.1}, online)
        for s in range(4)
    ]
    assert fidelity(reverse, st).rho == pytest.approx(-1.0)
    assert "FALSIFIED" in verdict(reverse, st, FAMILIES, 12)[0]  # replay keeps π0, breadth_first wins online
    assert math.isnan(float(fidelity([], st).rho or math.nan))


def test_summaries_table_and_figure_from_a_run(diverse_run, tmp_path):
    mod = _bench()
    assert mod.summarize(diverse_run, tmp_path / "sums", None) == [0, 1]
    assert [s["seed"] for s in seed_summaries(diverse_run)] == [0, 1]
    text = mod.table(tmp_path / "sums")
    assert "| breadth_first |" in text and ("families separate" in text or "do not separate" in text)
    assert "pre-registered verdict" in mod.verdict_text(tmp_path / "sums")
    from rsi_workbench import viz

    info = viz.fidelity_info(diverse_run)
    assert (
        len(info.rows) == 6
        and viz.plot_replay_fidelity(info).to_json() == viz.plot_replay_fidelity(diverse_run).to_json()
    )


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        ("arms: [dreaming_diverse, portfolio]\n", "dreaming"),
        (
            "arms: [dreaming_diverse]\ndreaming: {candidates: {families: [greedy_deepest_best, nope]}}\n",
            r"dreaming\.candidates\.families\[1\]",
        ),
        (
            "arms: [dreaming_diverse]\ndreaming: {candidates: {families: [portfolio]}}\n",
            r"dreaming\.candidates\.families\[0\].*π0",
        ),
        (
            "arms: [dreaming_diverse]\ndreaming: {candidates: {families: [], mutations: 0}}\n",
            r"dreaming\.candidates: .*nothing to choose",
        ),
        ("arms: [dreaming, portfolio]\nfidelity: {arm: dreaming}\n", r"fidelity\.arm"),
        (
            "arms: [dreaming_diverse]\ndreaming: {candidates: {families: [breadth_first]}}\nfidelity: {}\n",
            r"fidelity: .*breadth_first",
        ),
    ],
)
def test_config_errors_name_file_and_field(tmp_path, extra, field):
    bad = tmp_path / "bad.yaml"
    bad.write_text("experiment: dreaming\ntask: {kind: autocorrelation, m: 8}\n" + extra)
    with pytest.raises(ConfigError, match=rf"bad\.yaml: {field}"):
        load_experiment_config(bad)


def test_committed_configs_validate():
    cfg = load_experiment_config(REPO / "configs" / "dreaming" / "diverse_autocorrelation.yaml")
    assert cfg.dreaming.candidates.families == ["greedy_deepest_best", "breadth_first", "independent_roots"]
    assert cfg.fidelity.pooling == "within_seed_ranks" and not cfg.warm_start and cfg.adaptive_beta
    pilot = load_experiment_config(REPO / "configs" / "dreaming" / "diverse_pilot.yaml")
    assert pilot.calls == cfg.calls and pilot.task == cfg.task and pilot.seeds == cfg.seeds


def test_results_pilot_table_is_recomputed_from_the_committed_summaries():
    mod = _bench()
    rows = mod.table(REPO / "benchmarks" / "data" / "dreaming_diverse" / "pilot").split("\n", 2)[2].strip()
    assert rows in (REPO / "docs" / "results" / "dreaming-diverse.md").read_text()


def test_resume_at_a_batch_boundary_gives_the_same_arm(tmp_path):
    import json

    cfg = tiny(arms=["dreaming_diverse"], seeds=[0])
    whole, cut_run = run_experiment(cfg, tmp_path / "a"), run_experiment(cfg, tmp_path / "b")
    sub = cut_run / "arms" / "dreaming_diverse-s0"
    lines = (sub / "events.jsonl").read_text().splitlines(keepends=True)
    nodes = [i for i, x in enumerate(lines) if json.loads(x)["kind"] == "tree_node"]
    (sub / "events.jsonl").write_text("".join(lines[: nodes[5] + 1]))  # crash after tree 1's first batch
    top = (cut_run / "events.jsonl").read_text().splitlines(keepends=True)
    first = next(i for i, x in enumerate(top) if '"arm_finished"' in x)
    (cut_run / "events.jsonl").write_text("".join(top[:first]))
    run_experiment(cfg, cut_run, resume=True)
    cols = ["tree", "label", "V_chosen", "beta1", "beta2"]
    a, b = (load_frames(p, "policy_deployed")[cols] for p in (whole, cut_run))
    assert a.equals(b) and len(a) == 3
    a, b = (load_frames(p, "tree_node")[["calls", "parent", "score"]] for p in (whole, cut_run))
    assert a.equals(b) and len(a) == 12


def test_replay_explorer_shows_the_fidelity_figure(diverse_run):
    """The replay dashboard of an experiment with a dreaming_diverse arm draws replay fidelity
    (issue 34 item 2), in the served page and in the static export."""
    from widgets.replay_explorer import ReplayExplorer, export_sections

    view = ReplayExplorer(run=str(diverse_run))
    assert view._fidelity is not None
    assert view._fidelity in list(view.__panel__())
    figs = export_sections(Path(diverse_run))[0].figures
    assert any("replay fidelity" in str(f.layout.title.text) for f in figs)
