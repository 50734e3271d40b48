"""Queries over run records: one run as a pandas DataFrame, many runs with SQL through DuckDB."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rsi_workbench.records.events import iter_events, log_source
from rsi_workbench.records.run import EVENTS_FILE, Run, list_runs

if TYPE_CHECKING:
    import pandas as pd


def _run_path(run: Run | str | os.PathLike[str]) -> Path:
    return run.path if isinstance(run, Run) else Path(run)


def load_events(
    run: Run | str | os.PathLike[str], *, kind: str | None = None, flatten: bool = True
) -> pd.DataFrame:
    """A run's events as a DataFrame: columns ``seq, time, kind, cycle`` plus the payload.

    With ``flatten`` payload fields become columns (nested dicts joined with ``.``); otherwise a
    single ``payload`` column holds the dicts. A run directory that does not exist raises
    :class:`FileNotFoundError` naming it (a run with no events yet gives an empty frame).
    """
    import pandas as pd

    path = _run_path(run)
    if not path.is_dir():
        what = "is not a directory" if path.exists() else "does not exist"
        raise FileNotFoundError(f"no run at {path}: the path {what} (`rsi-workbench runs` lists the runs)")
    rows: list[dict[str, Any]] = []
    for ev in iter_events(path / EVENTS_FILE):
        if kind is not None and ev.kind != kind:
            continue
        rows.append(
            {"seq": ev.seq, "time": ev.time, "kind": ev.kind, "cycle": ev.cycle, "payload": ev.payload}
        )
    df = pd.DataFrame(rows, columns=["seq", "time", "kind", "cycle", "payload"])
    if flatten and len(df):
        flat = pd.json_normalize(df["payload"].tolist())
        flat.index = df.index
        clash = [c for c in flat.columns if c in {"seq", "time", "kind", "cycle"}]
        flat = flat.rename(columns={c: f"payload.{c}" for c in clash})
        df = pd.concat([df.drop(columns=["payload"]), flat], axis=1)
    df["run"] = path.name
    return df


def query(sql: str, runs_root: str | os.PathLike[str] | None = None) -> pd.DataFrame:
    """Run SQL with DuckDB over every run's events below ``runs_root``.

    The view ``events`` has columns ``run`` (the run directory, relative to the root), ``seq``,
    ``time``, ``kind``, ``cycle`` and ``payload`` (JSON; use ``payload->>'field'``).
    """
    import duckdb

    root = Path(runs_root) if runs_root is not None else Path(os.environ.get("RSI_WORKBENCH_RUNS", "runs"))
    # each run's log as stored: events.jsonl, or events.jsonl.gz once compacted (DuckDB reads both)
    paths = [src for p in list_runs(root) if (src := log_source(p / EVENTS_FILE)) is not None]
    con = duckdb.connect()
    if paths:
        files = ", ".join("'" + str(p).replace("'", "''") + "'" for p in paths)
        con.execute(
            f"""CREATE VIEW events AS SELECT
                  regexp_replace(replace(filename, '{str(root).replace("'", "''")}/', ''), '/{EVENTS_FILE}(\\.gz)?$', '') AS run,
                  seq, time, kind, cycle, payload
                FROM read_json([{files}], format='newline_delimited', filename=true, ignore_errors=true,
                  columns={{schema: 'INTEGER', seq: 'BIGINT', time: 'DOUBLE', kind: 'VARCHAR',
                            cycle: 'BIGINT', payload: 'JSON'}})"""
        )
    else:
        con.execute(
            "CREATE VIEW events AS SELECT NULL::VARCHAR AS run, NULL::BIGINT AS seq, NULL::DOUBLE AS time, "
            "NULL::VARCHAR AS kind, NULL::BIGINT AS cycle, NULL::JSON AS payload WHERE false"
        )
    return con.execute(sql).df()
