"""MemoryTree: canonical hashing, safe paths, diffs, materialisation."""

from __future__ import annotations

import hashlib
import json

import pytest

from rsi_workbench.memory import (
    EMPTY,
    MemoryPathError,
    MemoryTree,
    VerifierReport,
    canonical_json,
    check_relpath,
)


def test_canonical_json_sorted_compact_no_nan() -> None:
    assert canonical_json({"b": 1, "a": [1, "é"]}) == '{"a":[1,"é"],"b":1}'.encode()
    with pytest.raises(ValueError):
        canonical_json({"x": float("nan")})


def test_tree_hash_is_over_path_digests() -> None:
    t = MemoryTree({"facts/a.md": "hello", "scripts/s.py": b"x=1"})
    digests = {
        "facts/a.md": hashlib.sha256(b"hello").hexdigest(),
        "scripts/s.py": hashlib.sha256(b"x=1").hexdigest(),
    }
    want = hashlib.sha256(json.dumps(digests, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
    assert t.tree_hash() == want
    assert t.n_files == 2 and t.n_bytes == 8
    assert EMPTY.tree_hash() == hashlib.sha256(b"{}").hexdigest()


@pytest.mark.parametrize("bad", ["/etc/passwd", "../x", "a/../b", "a//b", "a\\b", "", "./a", "a/"])
def test_bad_paths_rejected(bad: str) -> None:
    with pytest.raises(MemoryPathError):
        check_relpath(bad)
    with pytest.raises(MemoryPathError):
        MemoryTree({bad: b"x"})


def test_tree_is_immutable_and_changes_make_new_trees() -> None:
    t = MemoryTree({"a": "1", "b": "2"})
    with pytest.raises(TypeError):
        t.files["a"] = b"3"  # type: ignore[index]
    u = t.with_changes({"a": "3", "c": "4"}, deletes=["b"])
    assert dict(t.files) == {"a": b"1", "b": b"2"}
    d = t.diff(u)
    assert (d.created, d.deleted, d.modified, d.unchanged) == (("c",), ("b",), ("a",), ())
    assert t.diff(t).unchanged == ("a", "b") and not t.diff(t).changed


def test_dir_round_trip_and_symlink_refused(tmp_path) -> None:
    t = MemoryTree({"procedures/login.md": "type user", "lessons/x.txt": b"\x00\x01"})
    t.to_dir(tmp_path / "m")
    assert MemoryTree.from_dir(tmp_path / "m") == t
    with pytest.raises(FileExistsError):
        t.to_dir(tmp_path / "m")
    (tmp_path / "m" / "link").symlink_to(tmp_path / "m" / "lessons")
    with pytest.raises(MemoryPathError):
        MemoryTree.from_dir(tmp_path / "m")


def test_verifier_report_rejects_unknown_verdict() -> None:
    with pytest.raises(ValueError):
        VerifierReport("MAYBE", ())  # type: ignore[arg-type]
