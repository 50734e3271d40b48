"""Peer importers: OpenEvolve checkpoint folders and ShinkaEvolve SQLite databases."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from rsi_workbench.records import ArtifactStore
from rsi_workbench.replay import ROOT, DiscoveryTree, TreeError, replay
from rsi_workbench.replay.importers import import_openevolve, import_shinka
from rsi_workbench.replay.policies import BreadthFirst


def write_openevolve(folder: Path, programs: list[dict]) -> Path:
    """A small OpenEvolve-shaped checkpoint: programs/<id>.json plus metadata.json."""
    cp = folder / "checkpoint_10"
    (cp / "programs").mkdir(parents=True)
    for p in programs:
        (cp / "programs" / f"{p['id']}.json").write_text(json.dumps(p))
    (cp / "metadata.json").write_text(
        json.dumps({"best_program_id": "c", "last_iteration": 10, "islands": [["a"]]})
    )
    return folder


def prog(pid, parent, it, ts, score=None, **metrics):
    m = dict(metrics)
    if score is not None:
        m["combined_score"] = score
    return {
        "id": pid,
        "parent_id": parent,
        "generation": it,
        "iteration_found": it,
        "timestamp": ts,
        "metrics": m,
        "metadata": {"island": 0, "changes": "", "parent_metrics": {}},
        "code": f"# program {pid}\n",
    }


PROGRAMS = [
    prog("a", None, 0, 100.0, 0.30),
    prog("c", "a", 2, 102.0, 0.70),
    prog("b", "a", 1, 101.0, 0.50),
    prog("d", "b", 3, 103.0, None, error="Timeout after 60s"),
    prog("e", "a", 3, 99.0, 0.60),  # same iteration as d, earlier timestamp -> created first
]


def test_openevolve_round_trip(tmp_path):
    store = ArtifactStore(tmp_path / "store")
    tree = import_openevolve(write_openevolve(tmp_path / "oe", PROGRAMS), store=store)
    assert [v.id for v in tree] == ["a", "b", "c", "e", "d"]  # iteration_found, then timestamp
    assert tree.children[ROOT] == ["a"] and tree.children["a"] == ["b", "c", "e"]
    assert tree.mode() == "general"
    d = tree.nodes["d"]
    assert not d.valid and "Timeout" in d.error and d.fail_class == "failed"
    assert tree.best().id == "c" and tree.meta["best_program_id"] == "c"
    assert store.get(tree.nodes["a"].payload) == b"# program a\n"
    path = tree.save(tmp_path / "tree.json")
    again = DiscoveryTree.load(path)
    assert again.to_json() == tree.to_json()
    assert replay(again, BreadthFirst(), W=2).quality == 0.70


def test_openevolve_rejects_a_cycle_dangling_parents_and_duplicates(tmp_path):
    cyc = [prog("a", None, 0, 1.0, 0.1), prog("x", "y", 1, 2.0, 0.2), prog("y", "x", 2, 3.0, 0.3)]
    with pytest.raises(TreeError, match=r"programs/[xy]\.json: parent_id: cycle"):
        import_openevolve(write_openevolve(tmp_path / "cyc", cyc))
    dang = [prog("a", None, 0, 1.0, 0.1), prog("b", "zzz", 1, 2.0, 0.2)]
    with pytest.raises(TreeError, match=r"b\.json: parent_id: dangling parent 'zzz'"):
        import_openevolve(write_openevolve(tmp_path / "dang", dang), ghosts=False)
    dup = write_openevolve(tmp_path / "dup", [prog("a", None, 0, 1.0, 0.1)])
    (dup / "checkpoint_10" / "programs" / "copy.json").write_text(json.dumps(prog("a", None, 0, 1.0, 0.1)))
    with pytest.raises(TreeError, match="duplicate id 'a'"):
        import_openevolve(dup)
    bad = write_openevolve(tmp_path / "bad", [prog("a", None, 0, 1.0, 0.1)])
    (bad / "checkpoint_10" / "programs" / "b.json").write_text(json.dumps({"parent_id": "a"}))
    with pytest.raises(TreeError, match=r"b\.json: id: required field is missing"):
        import_openevolve(bad)
    with pytest.raises(TreeError, match="not an OpenEvolve checkpoint"):
        import_openevolve(tmp_path)


def write_shinka(
    path: Path,
    rows: list[tuple],
    columns=("id", "parent_id", "generation", "combined_score", "correct", "timestamp", "code"),
) -> Path:
    con = sqlite3.connect(path)
    con.execute(f"CREATE TABLE programs ({', '.join(columns)})")
    con.executemany(f"INSERT INTO programs VALUES ({', '.join('?' * len(columns))})", rows)
    con.commit()
    con.close()
    return path


def test_shinka_import(tmp_path):
    db = write_shinka(
        tmp_path / "evolution_db.sqlite",
        [
            ("p0", None, 0, 1.0, 1, 10.0, "x=0"),
            ("p1", "p0", 1, 1.5, 1, 11.0, "x=1"),
            ("p2", "p0", 1, 0.0, 0, 12.0, "x=2"),
            ("p3", "p1", 2, 2.0, 1, 13.0, "x=3"),
        ],
    )
    tree = import_shinka(db)
    assert [v.id for v in tree] == ["p0", "p1", "p2", "p3"]
    assert not tree.nodes["p2"].valid and tree.nodes["p2"].fail_class == "invalid"
    assert tree.summary()["best_score"] == 2.0 and tree.summary()["depth"] == 3
    cyc = write_shinka(
        tmp_path / "cyc.sqlite", [("a", "b", 0, 1.0, 1, 1.0, ""), ("b", "a", 1, 1.0, 1, 2.0, "")]
    )
    with pytest.raises(TreeError, match=r"cyc\.sqlite: programs row \d: parent_id: cycle"):
        import_shinka(cyc)
    nocol = write_shinka(
        tmp_path / "nocol.sqlite",
        [("a", None, 0, 1.0)],
        columns=("id", "parent_id", "generation", "combined_score"),
    )
    with pytest.raises(TreeError, match=r"programs\.correct: required column is missing"):
        import_shinka(nocol)


def test_tree_json_errors_name_the_file_and_field(tmp_path):
    p = tmp_path / "t.json"
    p.write_text(
        json.dumps(
            {
                "nodes": [
                    {
                        "id": "a",
                        "parent": "r",
                        "created_seq": 0,
                        "round": 1,
                        "score": 1.0,
                        "valid": True,
                        "bogus": 1,
                    }
                ]
            }
        )
    )
    with pytest.raises(TreeError, match=r"t\.json: nodes\[0\]"):
        DiscoveryTree.load(p)
    p.write_text(
        json.dumps(
            {"nodes": [{"id": "a", "parent": "q", "created_seq": 0, "round": 1, "score": 1.0, "valid": True}]}
        )
    )
    with pytest.raises(TreeError, match=r"t\.json: node 'a'\.parent: dangling parent 'q'"):
        DiscoveryTree.load(p)
