"""The ``dreaming`` experiment end to end (smoke size), its records, resume, and the CLI commands."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rsi_workbench.cli import load_experiment_config, main
from rsi_workbench.experiments.dreaming.experiment import Config, load_frames, report, run_experiment
from rsi_workbench.records import Run, load_events
from rsi_workbench.replay import DiscoveryTree, replay

REPO = Path(__file__).resolve().parents[2]


def tiny(**kw) -> Config:
    base = {
        "task": {"kind": "circle_packing", "n": 6, "maxiter": 40},
        "arms": ["dreaming", "greedy_deepest_best"],
        "seeds": [0],
        "W": 2,
        "executor": "serial",
        "calls": 8,
        "calls_per_round": 4,
        "candidates": 3,
    }
    return Config(**{**base, **kw})


@pytest.mark.slow
def test_smoke_config_runs_and_reports(tmp_path):
    cfg = load_experiment_config(REPO / "configs" / "dreaming" / "smoke.yaml")
    out = run_experiment(cfg, tmp_path / "smoke")
    text = report(out)
    assert "dreaming" in text and "independent_roots" in text and "2.635983" in text
    assert "wall time (from the events" in text and not (out / "report.txt").exists()
    nodes = load_frames(out, "tree_node")
    assert len(nodes) == 16 and set(nodes["arm"]) == {"dreaming", "independent_roots"}
    assert {"score", "valid", "fail_class", "error", "payload", "best_so_far", "calls"} <= set(nodes.columns)


def test_dreaming_records_every_candidate_and_trees_replay(tmp_path):
    out = run_experiment(tiny(), tmp_path / "exp")
    sub = Run.open(out / "arms" / "dreaming-s0")
    spent = [e for e in sub.events("budget_spent")]
    assert len(spent) == 8 and all(e.payload["budget"] == "agent_calls" for e in spent)
    recorded = sub.events("tree_recorded")
    assert len(recorded) == 2
    scored = load_events(sub, kind="replay_scored")
    assert len(scored) == 2 * 3 and set(scored["candidate"]) == {0, 1, 2}
    deployed = load_events(sub, kind="policy_deployed")
    assert (deployed["V_chosen"] >= deployed["V_pi0"]).all()  # non-regression on the replay objective
    for e in recorded:  # trees are content-addressed artifacts that replay in chain mode
        tree = DiscoveryTree.from_json(sub.artifacts.get_json(e.payload["artifact"]))
        assert tree.mode() == "chain" and len(tree) == 4
        node = next(iter(tree))
        assert len(sub.artifacts.get_json(node.payload)) == 6  # the candidate solution (6 circles)
        from rsi_workbench.replay import PortfolioPolicy

        assert replay(tree, PortfolioPolicy(), W=2).n >= 1
    top = Run.open(out)
    assert {(e.payload["arm"], e.payload["seed"]) for e in top.events("arm_finished")} == {
        ("dreaming", 0),
        ("greedy_deepest_best", 0),
    }


def test_resume_after_a_crash_finishes_the_same_budget(tmp_path):
    cfg = tiny(arms=["dreaming"])
    out = run_experiment(cfg, tmp_path / "exp")
    sub = out / "arms" / "dreaming-s0"
    lines = (sub / "events.jsonl").read_text().splitlines(keepends=True)
    # simulate a crash in the middle of the second tree: keep the log up to its 2nd node
    kinds = [json.loads(x)["kind"] for x in lines]
    cut = [i for i, k in enumerate(kinds) if k == "tree_node"][5] + 1
    (sub / "events.jsonl").write_text("".join(lines[:cut]))
    top_lines = (out / "events.jsonl").read_text().splitlines(keepends=True)
    first = next(i for i, x in enumerate(top_lines) if '"arm_finished"' in x)
    (out / "events.jsonl").write_text("".join(top_lines[:first]))
    run_experiment(cfg, out, resume=True)
    nodes = load_events(sub, kind="tree_node")
    assert len(nodes) == 8 and nodes["id"].is_unique
    assert len(load_events(sub, kind="budget_spent")) == 8
    assert len(load_events(sub, kind="policy_deployed")) == 2


def test_config_errors_name_the_field(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("experiment: dreaming\narms: [dreaming, nope]\n")
    with pytest.raises(Exception, match=r"arms\.1"):
        load_experiment_config(bad)


def test_cli_trees_import_and_replay_score(tmp_path, capsys, monkeypatch):
    # the OpenEvolve fixture writer lives with the importer tests (found when run alone, too)
    monkeypatch.syspath_prepend(str(Path(__file__).parents[1] / "replay"))
    from test_importers import PROGRAMS, write_openevolve

    oe = write_openevolve(tmp_path / "oe", PROGRAMS)
    assert main(["trees", "import", "openevolve", str(oe), "--out", str(tmp_path / "t.json")]) == 0
    out = capsys.readouterr().out
    assert "5 nodes, depth 3" in out and "best score 0.7" in out and "1 invalid" in out
    rc = main(
        [
            "replay",
            "score",
            str(tmp_path / "t.json"),
            str(tmp_path / "t.json"),
            "--policy",
            "breadth_first",
            "greedy_deepest_best",
            "--beta1",
            "0.05",
            "--beta2",
            "0.1",
            "--workers",
            "2",
        ]
    )
    assert rc == 0
    out = capsys.readouterr().out
    assert "breadth_first" in out and "greedy_deepest_best" in out and "mean V" in out
    cyc = write_openevolve(
        tmp_path / "cyc", [PROGRAMS[0], {**PROGRAMS[1], "parent_id": "b"}, {**PROGRAMS[2], "parent_id": "c"}]
    )
    assert main(["trees", "import", "openevolve", str(cyc), "--out", str(tmp_path / "c.json")]) == 2
    assert "cycle" in capsys.readouterr().err  # errors go to stderr


def test_recorded_trees_and_scores_reload_and_rescore(tmp_path):
    from rsi_workbench.experiments.dreaming.experiment import load_trees, rescore_frame
    from rsi_workbench.replay import score_policy

    out = run_experiment(tiny(arms=["dreaming"]), tmp_path / "exp")
    trees = load_trees(out)[("dreaming", 0)]
    assert len(trees) == 2
    rows = load_frames(out, "replay_tree_scored")
    last = rows[rows["tree"] == 1]
    same = rescore_frame(last, 2e-4, 5e-4)
    assert (same["V_rescored"] - same["V"]).abs().max() < 1e-12
    # recomputing from the trees themselves under other betas agrees with rescoring the records
    deployed = load_events(out / "arms" / "dreaming-s0", kind="replay_scored")
    p0 = deployed[(deployed["tree"] == 1) & (deployed["candidate"] == 0)].iloc[0]
    from rsi_workbench.replay import PortfolioParams, PortfolioPolicy

    params = PortfolioParams(**{k[len("params.") :]: v for k, v in p0.items() if k.startswith("params.")})
    fresh = score_policy(trees, PortfolioPolicy(params), 2, 0.01, 0.02)
    re = rescore_frame(last[last["candidate"] == 0], 0.01, 0.02)["V_rescored"].mean()
    assert abs(fresh.V - re) < 1e-12


@pytest.mark.slow
def test_attempts_fan_out_through_a_process_pool(tmp_path):
    serial = run_experiment(tiny(arms=["independent_roots"]), tmp_path / "serial")
    pooled = run_experiment(
        tiny(arms=["independent_roots"], executor="process", workers=2), tmp_path / "pool"
    )
    a = load_frames(serial, "tree_node")[["id", "parent", "score", "valid"]]
    b = load_frames(pooled, "tree_node")[["id", "parent", "score", "valid"]]
    # per-attempt seeds make results independent of worker scheduling (up to float round-off)
    assert a[["id", "parent", "valid"]].equals(b[["id", "parent", "valid"]])
    assert (a["score"] - b["score"]).abs().max() < 1e-6
