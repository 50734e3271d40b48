"""A real OpenEvolve checkpoint drops programs evicted from its archive: their children are imported
under ghost nodes (unscored, never the best), counted in the import report (a committed excerpt in
OpenEvolve's checkpoint format, tests/replay/data/openevolve_evicted/)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from rsi_workbench.replay import ROOT, TreeError, replay, score_policy
from rsi_workbench.replay.importers import import_openevolve, import_shinka
from rsi_workbench.replay.policies import BreadthFirst, GreedyDeepestBest

EXCERPT = Path(__file__).parent / "data" / "openevolve_evicted"


def test_evicted_parent_becomes_a_ghost_node():
    tree = import_openevolve(EXCERPT)
    assert tree.meta["ghosts"] == 1 and tree.meta["ghost_ids"] == ["p-evicted-2"]
    g = tree.nodes["p-evicted-2"]
    assert g.parent == ROOT and g.score is None and not g.valid and g.fail_class == "ghost"
    assert g.meta == {"ghost": True}
    assert tree.children["p-evicted-2"] == ["9e77-child-b", "a3f0-child-c"]
    order = [v.id for v in tree]
    assert order.index("p-evicted-2") == order.index("9e77-child-b") - 1  # just before its earliest child
    assert tree.best().id == "d5e2-grandchild"
    assert tree.nodes["f01c-failed"].fail_class == "failed"


def test_strict_import_still_rejects_the_dangling_parent():
    with pytest.raises(TreeError, match="dangling parent 'p-evicted-2'"):
        import_openevolve(EXCERPT, ghosts=False)


def test_ghosts_are_revealed_but_never_the_best():
    tree = import_openevolve(EXCERPT)
    tr = replay(tree, BreadthFirst(), W=2)
    assert "p-evicted-2" in tr.revealed and tr.n == len(tree)
    assert tr.best_node == "d5e2-grandchild" and tr.quality == pytest.approx(0.81)
    # a budget that reaches the ghost but not its children: the ghost is revealed, unscored
    s = score_policy([tree], GreedyDeepestBest(), 1, 0.0, 0.0, node_budget=2)
    assert s.per_tree[0]["n"] == 2 and s.per_tree[0]["best_node"] != "p-evicted-2"


def test_cli_import_reports_the_ghosts(tmp_path, capsys):
    from rsi_workbench.cli import main

    assert main(["trees", "import", "openevolve", str(EXCERPT), "--out", str(tmp_path / "t.json")]) == 0
    assert "1 ghost node(s)" in capsys.readouterr().out
    assert (
        main(["trees", "import", "openevolve", str(EXCERPT), "--out", str(tmp_path / "s.json"), "--strict"])
        == 2
    )
    assert "dangling parent" in capsys.readouterr().err


def test_shinka_missing_parent_becomes_a_ghost(tmp_path):
    db = tmp_path / "evo.sqlite"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE programs (id, parent_id, generation, combined_score, correct, timestamp)")
    con.executemany(
        "INSERT INTO programs VALUES (?, ?, ?, ?, ?, ?)",
        [("a", None, 0, 0.1, 1, 1.0), ("b", "gone", 2, 0.5, 1, 3.0), ("c", "b", 3, 0.6, 1, 4.0)],
    )
    con.commit()
    con.close()
    tree = import_shinka(db)
    assert tree.meta["ghosts"] == 1 and tree.nodes["gone"].parent == ROOT
    assert [v.id for v in tree] == ["a", "gone", "b", "c"]
