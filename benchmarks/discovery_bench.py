"""Research-graph costs measured side by side: one compiled investigation cold vs. with the shared
baseline already fitted, and typed record loading vs. raw event parsing on a real campaign.

    python benchmarks/discovery_bench.py            # runs a 6-episode campaign in a temp folder
    python benchmarks/discovery_bench.py RUN_DIR    # or measures an existing discovery run
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path


def _best(fn, repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    from rsi_workbench.discovery.records import load_records
    from rsi_workbench.domains import tabular
    from rsi_workbench.domains.tabular import analysis
    from rsi_workbench.experiments.discovery import campaign
    from rsi_workbench.records import Run

    rows: list[tuple[str, str, float, float]] = []
    for name, base, added, thr in [
        ("sklearn-breast-cancer/malignant", ("size",), ("texture",), 0.005),
        ("sklearn-diabetes/progression", ("demographics",), ("bmi",), 0.01),
    ]:
        spec = tabular.AnalysisSpec(name, base, added, thr)
        tabular.load_direction(name)  # data loading is not what is measured

        def cold(spec=spec) -> None:
            analysis._MODEL_CACHE.clear()
            tabular.run_analysis(spec)

        c = _best(cold)
        analysis._MODEL_CACHE.clear()
        tabular.run_analysis(spec)
        keep = {
            k: v
            for k, v in analysis._MODEL_CACHE.items()
            if k[1] == tuple(tabular.direction(name).columns(base))
        }
        analysis._MODEL_CACHE.clear()

        def baseline_cached(spec=spec, keep=keep) -> None:
            analysis._MODEL_CACHE.clear()
            analysis._MODEL_CACHE.update(keep)
            tabular.run_analysis(spec)

        b = _best(baseline_cached)
        rows.append((f"analysis {name}", "cold (5 outer folds, 4 models)", c, 1.0))
        rows.append((f"analysis {name}", "baseline model shared", b, b / c))

    if len(sys.argv) > 1:
        run_dir = Path(sys.argv[1])
    else:
        tmp = Path(tempfile.mkdtemp())
        cfg = campaign.Config(episodes=6, n_bootstrap=200)
        run_dir = campaign.run_campaign(cfg, tmp / "bench", progress=False)
    run = Run.open(run_dir)
    n = len(run.events())
    raw = _best(lambda: run.events())
    typed = _best(lambda: load_records(run))
    rows.append((f"records ({n} events)", "raw events.jsonl parse", raw, 1.0))
    rows.append((f"records ({n} events)", "load_records (typed, completed only)", typed, typed / raw))
    evs = run.events()
    start = {e.payload["episode"]: e.time for e in evs if e.kind == "episode_started"}
    dur = [e.time - start[e.payload["episode"]] for e in evs if e.kind == "episode_finished"]
    rows.append(
        ("campaign", f"seconds per episode (mean of {len(dur)})", sum(dur) / max(len(dur), 1), float("nan"))
    )

    print(f"{'what':<42} {'variant':<40} {'seconds':>9} {'ratio':>7}")
    for what, variant, sec, ratio in rows:
        r = "" if ratio != ratio else f"{ratio:.2f}"
        print(f"{what:<42} {variant:<40} {sec:>9.3f} {r:>7}")


if __name__ == "__main__":
    main()
