"""The examples of issue 30.3(b) and (c), run the way their READMEs tell a researcher to.

(b) ``examples/discovery_tree/tree.json``: a discovery tree written by hand in the top-level tree
format, scored by ``rsi-workbench replay score`` under the built-in policies, and opened by the tree
inspector and replay explorer (the dashboards' panels built from the file, and a static export).
(c) ``examples/code_repair_tasks/``: four repair tasks of one's own through ``rsi-workbench run``
(the code-repair experiment, the sandbox in required mode), and the fold check that fits them.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from rsi_workbench.cli import main

ROOT = Path(__file__).resolve().parents[1]
TREE = ROOT / "examples" / "discovery_tree" / "tree.json"
REPAIR = ROOT / "examples" / "code_repair_tasks"
POLICIES = ["portfolio", "independent_roots", "greedy_deepest_best", "breadth_first"]


def _table(out: str) -> dict[str, tuple[float, str]]:
    """``policy -> (mean V, what its replay revealed)`` from the ``replay score`` table."""
    rows = re.findall(r"^(\w+)\s+[0-9.]+\s+([0-9.]+)\n\s+circle-packing-26: (.*)$", out, re.M)
    return {name: (float(mean), detail) for name, mean, detail in rows}


# -- (b) a hand-written discovery tree -------------------------------------------------------------
def test_hand_written_tree_loads_as_a_research_tree() -> None:
    from rsi_workbench.replay import DiscoveryTree

    tree = DiscoveryTree.load(TREE)
    s = tree.summary()
    assert (s["nodes"], s["depth"], s["branches"], s["mode"]) == (23, 6, 5, "general")
    assert (s["best_node"], s["best_score"], s["invalid"], s["errors"]) == ("ring3", 2.6319, 6, 5)
    assert {v.fail_class for v in tree if not v.valid} == {
        "timeout",
        "exception",
        "optimizer_failure",
        "invalid",
    }


def test_replay_score_ranks_the_policies_differently_per_cost(capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(["replay", "score", str(TREE), "--policy", *POLICIES, "--beta1", "2e-4", "--beta2", "5e-4"]) == 0
    )
    cheap = _table(capsys.readouterr().out)
    assert sorted(cheap) == sorted(POLICIES)
    assert cheap["portfolio"][1] == "revealed 18 nodes in 6 rounds, best valid 2.6299"  # never opens ring1
    assert cheap["greedy_deepest_best"][1] == "revealed 23 nodes in 23 rounds, best valid 2.6319"
    assert max(cheap, key=lambda p: cheap[p][0]) == "independent_roots"
    assert cheap["independent_roots"][0] == pytest.approx(2.629217)
    # ten times the cost per revealed node, no parallelism bonus: revealing fewer nodes wins
    assert main(["replay", "score", str(TREE), "--policy", *POLICIES, "--beta1", "2e-3", "--beta2", "0"]) == 0
    dear = _table(capsys.readouterr().out)
    assert max(dear, key=lambda p: dear[p][0]) == "portfolio" and dear["portfolio"][0] == pytest.approx(
        2.5939
    )


def test_tree_file_opens_in_the_tree_inspector_and_replay_explorer(tmp_path: Path) -> None:
    pytest.importorskip("panel")
    from rsi_workbench.widgets.commands import dashboards_for
    from rsi_workbench.widgets.replay_explorer import ReplayExplorer
    from rsi_workbench.widgets.tree_inspector import TreeInspector

    assert sorted(dashboards_for(TREE)) == ["replay", "trees"]
    ti = TreeInspector(run=str(TREE))
    assert list(ti._trees) == ["circle-packing-26 (tree.json)"]
    assert ti.param.operation.objects == ["(all)", "crossover", "draft", "refine", "repair"]
    ti.validity = "invalid"
    assert ti._count.object == "**6 of 23 nodes shown**"
    ti.validity, ti.node = "(all)", "ring3"
    assert "`ring1` (draft, score 2.441) → `ring2` (refine, score 2.5876) → `ring3`" in ti._lineage.object
    ti.__panel__()  # the page builds (filters, plot, lineage, record)

    ex = ReplayExplorer(run=str(TREE))
    assert list(ex._keys) == ["circle-packing-26 (tree.json) (replayed now)"]
    assert ex.info().policies == POLICIES
    title = ex._heat.object.layout.title.text  # a tree file has no seed or round to name
    assert title.startswith("circle-packing-26 (tree.json), replayed now: V(π; T)") and "seed" not in title
    assert ex._summary.object.startswith("**best policy for this tree: independent_roots**")
    ex.beta1, ex.beta2 = 2e-3, 0.0
    assert ex._summary.object.startswith("**best policy for this tree: portfolio** (mean V 2.59390)")
    assert set(ex._nodes["arm"]) == {"recorded", *POLICIES}
    ex.__panel__()

    out = tmp_path / "tree.html"
    assert main(["export", str(TREE), "--html", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    assert "Discovery trees" in text and "Replay scores" in text and "discovery tree file" in text


def test_a_broken_tree_file_is_refused_naming_the_file_and_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "tree.json"
    bad.write_text(
        TREE.read_text().replace('"parent": "hex4", "created_seq": 17', '"parent": "hex9", "created_seq": 17')
    )
    assert main(["export", str(bad), "--html", str(tmp_path / "x.html")]) == 2
    assert (
        capsys.readouterr().err
        == f"error: {bad}: node 'hex5'.parent: dangling parent 'hex9' (no such node)\n"
    )
    assert main(["serve", str(TREE), "--live"]) == 2
    assert "--live needs a run directory" in capsys.readouterr().err


# -- (c) four repair tasks of one's own ------------------------------------------------------------
def test_four_tasks_validate_and_every_reference_passes(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tasks", "validate", str(REPAIR / "tasks.jsonl"), "--run"]) == 0
    out = capsys.readouterr().out
    assert (
        "4 task(s) valid; 8 public and 15 hidden tests" in out and "every reference passes its tests" in out
    )


def test_folds_that_do_not_fit_four_tasks_name_the_field_and_the_values(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shutil.copy(REPAIR / "tasks.jsonl", tmp_path / "tasks.jsonl")
    cfg = tmp_path / "config.yaml"
    cfg.write_text((REPAIR / "config.yaml").read_text().replace("folds: 4", "folds: 5"))
    assert main(["run", str(cfg), "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {cfg}: world.folds: 5-fold cross-fitting by problem puts each of the task")
    assert "1 fold(s) would be empty" in err and "Set world.folds to a value from 3 to 4" in err
    assert not (tmp_path / "run").exists()


@pytest.mark.slow
def test_four_tasks_run_through_the_code_repair_experiment_in_required_mode(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("RSI_WORKBENCH_SANDBOX_MODE", "required")
    out = tmp_path / "run"
    assert main(["run", str(REPAIR / "config.yaml"), "--out", str(out)]) == 0
    capsys.readouterr()
    assert main(["report", str(out)]) == 0
    report = capsys.readouterr().out
    assert "sandbox isolation: complete" in report
    assert f"tasks: 4 from {REPAIR / 'tasks.jsonl'}" in report and "4-fold cross-fitting by problem" in report
    for method in ("random_k", "static_verifier", "world_fixed", "world_adaptive"):
        assert re.search(rf"^{method}\s+1\s+\d+\.\d% ± 0\.0\s+\d\.\d\d", report, re.M), method


# -- the extending pages' Python examples run as printed -------------------------------------------
def _python_blocks(page: str) -> list[str]:
    text = (ROOT / "docs" / page).read_text(encoding="utf-8")
    return re.findall(r"^```python\n(.*?)^```$", text, re.M | re.S)


def test_extending_discovery_policy_example_prints_what_the_page_says(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (block,) = _python_blocks("extending-discovery.md")
    monkeypatch.chdir(ROOT)  # the example loads examples/discovery_tree/tree.json
    exec(compile(block, "extending-discovery.md", "exec"), {"__name__": "__doc_example__"})
    assert capsys.readouterr().out.split() == ["2.628258", "23", "12"]  # the comment on its last line
    assert "# 2.628258 23 12" in block


def test_extending_memory_example_runs_the_engine_end_to_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (block,) = _python_blocks("extending-memory.md")
    monkeypatch.chdir(tmp_path)  # it writes runs/conversions
    exec(compile(block, "extending-memory.md", "exec"), {"__name__": "__doc_example__"})
    assert capsys.readouterr().out.strip() == "done 100.0 100.0 4 20 ['factors.json']"
    from rsi_workbench.widgets.commands import dashboards_for

    assert sorted(dashboards_for(tmp_path / "runs" / "conversions")) == ["events", "memory"]
