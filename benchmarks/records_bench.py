"""Records benchmark: append throughput (group commit vs fsync per event) and loading 1M events.

Prints one table of side-by-side measurements with ratios. Run: ``python benchmarks/records_bench.py
[--events 1000000]``. Tests never assert timings; results go to benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import tempfile
import time
from pathlib import Path


def append_rate(path: Path, n: int, mode: str, group: int = 100) -> float:
    from rsi_workbench.records import EventLog

    log = EventLog(path, fsync="always" if mode == "fsync-per-event" else "commit")
    t0 = time.perf_counter()
    for i in range(n):
        log.append(
            "prediction", {"task": f"t{i % 164}", "p_ac": 0.25, "utility": 0.5, "version": 3}, cycle=i // 1000
        )
        if mode == "group-commit" and (i + 1) % group == 0:
            log.commit()
    log.commit()
    dt = time.perf_counter() - t0
    log.close()
    return n / dt


def build_big_run(root: Path, n: int) -> Path:
    """Write ``n`` realistic events quickly (one buffered write; the format is the log's own)."""
    from rsi_workbench.records import Run
    from rsi_workbench.records.events import Event

    run = Run.create(root / "big", {"n": n})
    run.close()
    with open(root / "big" / "events.jsonl", "w") as f:
        for i in range(n):
            ev = Event(
                seq=i,
                kind="prediction" if i % 4 else "observation",
                cycle=i // 1000,
                payload={
                    "task": f"t{i % 164}",
                    "p_ac": (i % 97) / 97,
                    "utility": (i % 13) / 13,
                    "status": "AC" if i % 3 else "WA",
                    "version": i // 50000,
                },
                time=1.7e9 + i,
            )
            f.write(ev.to_json() + "\n")
    return root / "big"


def timed(fn):  # type: ignore[no-untyped-def]
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--events", type=int, default=1_000_000, help="events in the load benchmark")
    ap.add_argument("--appends", type=int, default=20_000, help="events appended with group commit")
    ap.add_argument("--fsync-appends", type=int, default=2_000, help="events appended with fsync each")
    args = ap.parse_args()

    import duckdb
    import pandas as pd

    from rsi_workbench.records import load_events

    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_TMP")) as d:
        root = Path(d)
        g = append_rate(root / "g.jsonl", args.appends, "group-commit")
        f = append_rate(root / "f.jsonl", args.fsync_appends, "fsync-per-event")
        print(
            f"# records benchmark — {platform.node()} {platform.machine()}, {os.cpu_count()} cores, "
            f"{time.strftime('%Y-%m-%d')}\n"
        )
        print("| append mode | events/s | ratio |")
        print("|---|---:|---:|")
        print(f"| group commit (fsync every 100 events) | {g:,.0f} | {g / f:.1f}× |")
        print(f"| fsync per event | {f:,.0f} | 1.0× |")

        run = build_big_run(root, args.events)
        ev = run / "events.jsonl"
        size_mb = ev.stat().st_size / 1e6
        t_ours, df1 = timed(lambda: load_events(run))
        t_pd, df2 = timed(lambda: pd.read_json(ev, lines=True))
        t_duck, df3 = timed(
            lambda: duckdb.sql(
                f"SELECT seq, time, kind, cycle, payload.task AS task, payload.p_ac AS p_ac, payload.utility AS utility, "
                f"payload.status AS status, payload.version AS version FROM read_json('{ev}', format='newline_delimited')"
            ).df()
        )
        t_agg, _ = timed(
            lambda: duckdb.sql(
                f"SELECT payload.task AS task, avg(payload.p_ac) FROM read_json('{ev}', format='newline_delimited') "
                f"WHERE kind = 'prediction' GROUP BY ALL"
            ).df()
        )
        assert len(df1) == len(df2) == len(df3) == args.events
        print(f"\n| load {args.events:,} events ({size_mb:.0f} MB JSONL) | seconds | ratio to DuckDB |")
        print("|---|---:|---:|")
        print(f"| `load_events` → pandas (json + json_normalize) | {t_ours:.2f} | {t_ours / t_duck:.1f}× |")
        print(f"| `pandas.read_json(lines=True)` (payload as dicts) | {t_pd:.2f} | {t_pd / t_duck:.1f}× |")
        print(f"| DuckDB `read_json` → DataFrame (payload flattened) | {t_duck:.2f} | 1.0× |")
        print(
            f"| DuckDB aggregate (mean p_ac per task, no DataFrame) | {t_agg:.2f} | {t_agg / t_duck:.2f}× |"
        )


if __name__ == "__main__":
    main()
