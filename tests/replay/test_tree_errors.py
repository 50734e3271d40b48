"""Tree files and peer imports fail with the file and the field named, never Python internals."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from rsi_workbench.cli import main
from rsi_workbench.replay import DiscoveryTree, TreeError
from rsi_workbench.replay.importers import import_openevolve, import_shinka

NODE = {"id": "a", "parent": "r", "created_seq": 0, "round": 1, "score": 1.0, "valid": True}
INTERNALS = (
    "__init__",
    "positional argument",
    "keyword argument",
    "NoneType",
    "Traceback",
    "'dict'",
    "'list'",
)


def _tree(tmp_path: Path, node: object) -> Path:
    p = tmp_path / "t.json"
    p.write_text(json.dumps({"nodes": [node]}))
    return p


def _load_error(path: Path) -> str:
    with pytest.raises(TreeError) as e:
        DiscoveryTree.load(path)
    msg = str(e.value)
    assert not any(s in msg for s in INTERNALS), msg
    return msg


@pytest.mark.parametrize(
    ("node", "expected"),
    [
        (
            {**NODE, "bogus": 1},
            "t.json: nodes[0].bogus: unknown field (a node has ['id', 'parent', 'created_seq'",
        ),
        (
            {k: v for k, v in NODE.items() if k != "valid"},
            "t.json: nodes[0].valid: required field is missing",
        ),
        ({**NODE, "score": "high"}, 't.json: nodes[0].score: must be a number or null, got "high"'),
        ({**NODE, "valid": 1}, "t.json: nodes[0].valid: must be true or false, got 1"),
        ({**NODE, "round": 1.5}, "t.json: nodes[0].round: must be an integer, got 1.5"),
        ({**NODE, "meta": []}, "t.json: nodes[0].meta: must be an object, got []"),
        ([1, 2], "t.json: nodes[0]: must be an object with fields ['id', 'parent'"),
    ],
)
def test_tree_load_names_file_node_and_field(tmp_path: Path, node: object, expected: str) -> None:
    assert expected in _load_error(_tree(tmp_path, node))


def test_a_valid_node_still_loads(tmp_path: Path) -> None:
    assert len(DiscoveryTree.load(_tree(tmp_path, {**NODE, "meta": {"x": 1}, "error": ""}))) == 1


def _openevolve(tmp_path: Path, program: object) -> Path:
    (tmp_path / "programs").mkdir()
    (tmp_path / "programs" / "a.json").write_text(json.dumps(program))
    return tmp_path


def test_openevolve_metadata_of_the_wrong_type_is_named(tmp_path: Path) -> None:
    prog = {"id": "a", "iteration_found": 0, "metrics": {"combined_score": 1.0}, "metadata": ["x"]}
    with pytest.raises(TreeError, match=r"a\.json: metadata: must be an object, got an array"):
        import_openevolve(_openevolve(tmp_path, prog))


def test_openevolve_binary_file_is_named(tmp_path: Path) -> None:
    folder = _openevolve(tmp_path, {})
    (folder / "programs" / "a.json").write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(TreeError, match=r"a\.json: not a UTF-8 text file"):
        import_openevolve(folder)


def test_shinka_file_that_is_not_a_database_is_named(tmp_path: Path) -> None:
    p = tmp_path / "db.sqlite"
    p.write_bytes(b"not a database at all" * 100)
    with pytest.raises(TreeError, match=r"db\.sqlite: not a SQLite database"):
        import_shinka(p)


def test_shinka_missing_table_is_named(tmp_path: Path) -> None:
    p = tmp_path / "db.sqlite"
    sqlite3.connect(p).execute("CREATE TABLE other (x)").connection.commit()
    with pytest.raises(TreeError, match=r"db\.sqlite: programs: table is missing"):
        import_shinka(p)


def test_cli_tree_errors_exit_2_on_stderr(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = _tree(tmp_path, {**NODE, "bogus": 1})
    args = ["replay", "score", str(bad), "--policy", "breadth_first", "--beta1", "0", "--beta2", "0"]
    assert main(args) == 2
    cap = capsys.readouterr()
    assert "nodes[0].bogus: unknown field" in cap.err and cap.out == ""
    assert (
        main(["trees", "import", "shinka", str(tmp_path / "none.sqlite"), "--out", str(tmp_path / "t2.json")])
        == 2
    )
    assert "none.sqlite: database file not found" in capsys.readouterr().err
    prog = {"id": "a", "iteration_found": 0, "metrics": {"combined_score": 1.0}}
    folder = _openevolve(tmp_path / "oe", prog) if (tmp_path / "oe").mkdir() is None else None
    assert main(["trees", "import", "openevolve", str(folder), "--out", str(tmp_path / "no" / "t.json")]) == 2
    assert "folder" in capsys.readouterr().err and not (tmp_path / "no").exists()
