"""Events as a pandas DataFrame, and SQL across runs with DuckDB."""

from __future__ import annotations

from pathlib import Path

import pytest

from rsi_workbench.records import Run, load_events, query


def _make(root: Path, name: str, n: int) -> None:
    with Run.create(root / name, {"name": name}) as run:
        for i in range(n):
            run.append("score", {"value": i * 0.5, "nested": {"a": i}}, cycle=i)
        run.append("done")


def test_load_events_flattens_payload(tmp_path: Path) -> None:
    _make(tmp_path, "r1", 3)
    df = load_events(tmp_path / "r1")
    assert list(df["kind"]) == ["score", "score", "score", "done"]
    assert list(df.loc[df.kind == "score", "nested.a"]) == [0, 1, 2]
    assert set(df["run"]) == {"r1"}
    only = load_events(tmp_path / "r1", kind="score")
    assert len(only) == 3 and only["value"].sum() == 1.5


def test_load_events_on_a_missing_run_names_the_path(tmp_path: Path) -> None:
    """A typo in a run path is an error naming it, not an empty frame."""
    missing = tmp_path / "runs" / "nope"
    with pytest.raises(FileNotFoundError, match=str(missing)):
        load_events(missing)
    (tmp_path / "afile").write_text("")
    with pytest.raises(FileNotFoundError, match="not a directory"):
        load_events(tmp_path / "afile")
    with Run.create(tmp_path / "empty", {"name": "empty"}):
        pass
    assert load_events(tmp_path / "empty").empty  # a run with no events yet


def test_duckdb_query_across_runs(tmp_path: Path) -> None:
    _make(tmp_path, "r1", 3)
    _make(tmp_path, "exp/r2", 5)
    df = query(
        "SELECT run, count(*) AS n, sum((payload->>'value')::DOUBLE) AS s FROM events "
        "WHERE kind = 'score' GROUP BY run ORDER BY run",
        tmp_path,
    )
    assert list(df["run"]) == ["exp/r2", "r1"]
    assert list(df["n"]) == [5, 3]
    assert list(df["s"]) == [5.0, 1.5]


def test_query_with_no_runs(tmp_path: Path) -> None:
    assert len(query("SELECT * FROM events", tmp_path)) == 0
