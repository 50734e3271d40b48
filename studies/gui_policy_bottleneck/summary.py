"""Compact summaries of the GUI policy-bottleneck pilot and pre-registered run
(``configs/gui/policy_bottleneck_pilot.yaml``, ``configs/gui/policy_bottleneck.yaml``): per method and
seed the success per tier, the area under the tier curve and the action economy, from the run's own
events (``rsi_workbench.domains.gui.outcomes``); and the paired seed-level table from that file alone.

    python -m studies.gui_policy_bottleneck.summary RUN_DIR --save FILE   # write the summary
    python -m studies.gui_policy_bottleneck.summary --table FILE          # the table, no run directory
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

CONTROL = "world_based"


def collect(run_dir: str | Path) -> dict[str, Any]:
    from rsi_workbench.domains.gui.outcomes import episode_economy, seed_auc, seed_success
    from rsi_workbench.records import Run

    run = Run.open(run_dir)
    per = seed_success(run_dir)
    auc = seed_auc(per)
    eco = episode_economy(run_dir)
    key = lambda d: {str(k): v for k, v in sorted(d.items())}  # noqa: E731
    return {
        "format": 1,
        "config": run.config.get("name"),
        "methods": [m for m in run.config["methods"] if m in per],
        "seeds": sorted({s for m in per.values() for s in m}),
        "success": {m: {str(s): key(t) for s, t in sorted(v.items())} for m, v in per.items()},
        "auc": {m: key(v) for m, v in auc.items()},
        "economy": {m: {str(s): key(t) for s, t in sorted(v.items())} for m, v in eco.items()},
    }


def table(data: dict[str, Any]) -> str:
    from rsi_workbench.metrics.bootstrap import t_interval

    auc = data["auc"]
    lines = ["| arm | seeds | area under the tier curve (mean) |", "|---|---:|---:|"]
    for m in data["methods"]:
        v = list(auc[m].values())
        lines.append(f"| {m} | {len(v)} | {100 * sum(v) / len(v):.1f}% |")
    lines += ["", "| paired difference (seed-level) | Δ area [95% t-interval] |", "|---|---:|"]
    for m in data["methods"]:
        if m == CONTROL or CONTROL not in auc:
            continue
        seeds = sorted(auc[m].keys() & auc[CONTROL].keys(), key=int)
        mean, lo, hi, n = t_interval([auc[m][s] - auc[CONTROL][s] for s in seeds])
        ci = f" [{100 * lo:+.1f}, {100 * hi:+.1f}]" if lo == lo else ""
        lines.append(f"| {m} − {CONTROL} | {100 * mean:+.1f} pp{ci} (n={n}) |")
    lines += [
        "",
        "| arm | tier | mean actions | wrong submits | repeated clicks (summed over seeds) |",
        "|---|---:|---:|---:|---:|",
    ]
    for m in data["methods"]:
        tiers = sorted({int(t) for s in data["economy"][m].values() for t in s})
        for t in tiers:
            rows = [s[str(t)] for s in data["economy"][m].values() if str(t) in s]
            acts = sum(r["mean_actions"] for r in rows) / len(rows)
            lines.append(
                f"| {m} | {t} | {acts:.2f} | {sum(r['wrong_submits'] for r in rows):.0f} | "
                f"{sum(r['repeated_clicks'] for r in rows):.0f} |"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run_dir", nargs="?")
    ap.add_argument("--save")
    ap.add_argument("--table")
    a = ap.parse_args(argv)
    if a.run_dir:
        data = collect(a.run_dir)
        if a.save:
            Path(a.save).parent.mkdir(parents=True, exist_ok=True)
            Path(a.save).write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    elif a.table:
        data = json.loads(Path(a.table).read_text())
    else:
        ap.error("give RUN_DIR or --table FILE")
    print(table(data))
    return 0


if __name__ == "__main__":
    sys.exit(main())
