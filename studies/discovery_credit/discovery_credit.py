"""DiscoveryRSI credit information (issue 34 items 4-5): chunked runs, compact summaries, the table.

    python studies/discovery_credit/discovery_credit.py run configs/discovery/credit_information.yaml runs/credit --chunk 20
    python studies/discovery_credit/discovery_credit.py summarize runs/credit --config configs/discovery/credit_pilot.yaml \\
        --scale pilot --out benchmarks/data/discovery_credit/pilot.json
    python studies/discovery_credit/discovery_credit.py table benchmarks/data/discovery_credit/pilot.json
    python studies/discovery_credit/discovery_credit.py truth runs/credit/dev/credit   # planted truth vs verdicts

``run`` starts at most ``--chunk`` new campaigns per call and resumes the run directory when it exists
(call it again until it prints ``finished``). ``summarize`` writes one compact JSON per run: every dev
campaign's row per (arm, direction, seed), the training rows and the theta+ fits, with provenance
(config, command, commit, date). ``table`` recomputes the arm table, the paired differences by
(direction, seed) with bootstrap intervals and the pre-registered verdict from that file alone
(``rsi_workbench.experiments.discovery.credit_report.table``): no run directory is needed.
"""

from __future__ import annotations

import argparse
import datetime
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def _commit() -> str:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
        )
        return out.stdout.strip()
    except OSError:
        return ""


def cmd_run(args: argparse.Namespace) -> int:
    from rsi_workbench.cli import load_experiment_config
    from rsi_workbench.experiments.discovery import credit_info
    from rsi_workbench.records import Run

    cfg = load_experiment_config(Path(args.config))
    out = Path(args.out)
    credit_info.run_experiment(cfg, out, resume=out.exists(), max_new_campaigns=args.chunk)
    run = Run.open(out)
    n_train = len(run.events("credit_train_campaign"))
    n_dev = len(run.events("credit_dev_campaign"))
    state = "finished" if run.events("credit_finished") else "not finished: run again"
    print(f"{out}: {n_train} training and {n_dev} dev campaigns recorded; {state}")
    return 0


def summary(run_dir: Path, *, config: str, command: str, scale: str) -> dict[str, Any]:
    """The compact summary of a ``discovery_credit`` run (dev rows, training rows, theta+ fits)."""
    from rsi_workbench.domains.tabular.credit import omega_diagnostics, policy_agreement
    from rsi_workbench.experiments.discovery.credit_report import QUALITY, run_rows
    from rsi_workbench.records import Run

    run = Run.open(run_dir)
    dev, train = run_rows(run_dir)
    fit = run.events("theta_plus_policies")
    return {
        "experiment": "discovery_credit",
        "status": "verified",
        "scale": scale,
        "config": config,
        "command": command,
        "commit": _commit(),
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "values_from": f"events credit_dev_campaign / credit_train_campaign of {run_dir}",
        "unit": "(direction, seed)",
        "quality": QUALITY,
        "interval": "bootstrap over pairs (2,000 resamples, seed = config seed)",
        "seed": int(run.config.get("seed", 0)),
        "finished": bool(run.events("credit_finished")),
        "theta_plus": fit[-1].payload if fit else None,
        "omega_diagnostics": omega_diagnostics(run_dir),
        "policy_agreement": policy_agreement(run_dir),
        "rows": [_compact(r) for r in dev],
        "train_rows": [_compact(r) for r in train],
    }


def _compact(r: dict[str, Any]) -> dict[str, Any]:
    return {k: (round(v, 4) if isinstance(v, float) else v) for k, v in r.items()}


def cmd_summarize(args: argparse.Namespace) -> int:
    command = args.command or f"rsi-workbench run {args.config} --out {args.run}"
    s = summary(Path(args.run), config=args.config, command=command, scale=args.scale)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(s, indent=1, sort_keys=True) + "\n")
    print(f"wrote {out}: {len(s['rows'])} dev rows, {len(s['train_rows'])} training rows")
    return 0


def cmd_table(args: argparse.Namespace) -> int:
    import statistics

    from rsi_workbench.experiments.discovery.credit_report import agreement_lines, diagnostics_lines, table

    for f in args.files:
        s = json.loads(Path(f).read_text())
        print(f"{f} ({s['scale']}, config {s['config']}, commit {s['commit']}, {s['date']}):\n")
        tr = s["train_rows"]
        if tr:
            print(
                f"training: {len(tr)} campaigns, {sum(r['episodes'] for r in tr)} episodes, "
                f"{statistics.fmean(r['s_per_episode'] for r in tr):.2f} s per episode"
            )
        if s.get("theta_plus"):
            p = s["theta_plus"]
            print(f"theta+ fits: {p['n_decisions']} decisions, {p['omega_positive']} with omega > 0")
        extra = diagnostics_lines(s.get("omega_diagnostics")) + agreement_lines(s.get("policy_agreement"))
        print("\n".join(extra) + "\n")
        print(table(s["rows"], int(s.get("seed", 0))))
    return 0


def planted_recovery(campaigns: list[Path]) -> dict[tuple[str, str], int]:
    """(planted role of the single added group, executed verdict) -> count, over the executed
    single-group hypotheses of campaigns on synthetic directions (does the analysis find the truth?)."""
    from collections import Counter

    from rsi_workbench.discovery.records import load_records
    from rsi_workbench.domains import tabular

    out: Counter[tuple[str, str]] = Counter()
    for p in campaigns:
        recs = load_records(p)
        ex = {e.hypothesis_id: e for e in recs.executions}
        for h in recs.hypotheses:
            spec, e = h.content.plan.spec, ex.get(h.hypothesis_id)
            if e is None or e.status != "ok" or len(spec["added"]) != 1:
                continue
            if not spec["direction"].startswith("synthetic-planted-"):
                continue
            role = tabular.planted_truth(spec["direction"]).get(spec["added"][0], "other")
            out[(role, str(e.results.get("verdict")))] += 1
    return dict(out)


def cmd_truth(args: argparse.Namespace) -> int:
    campaigns = sorted(p for d in args.dirs for p in Path(d).iterdir() if (p / "events.jsonl").exists())
    rec = planted_recovery(campaigns)
    print(f"{len(campaigns)} campaigns; executed single-group hypotheses by planted role and verdict:")
    for role in ("informative", "redundant", "noise", "baseline", "other"):
        row = {v: n for (r, v), n in rec.items() if r == role}
        if row:
            print(f"  {role}: " + ", ".join(f"{v} {n}" for v, n in sorted(row.items())))
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="run or resume, at most --chunk new campaigns")
    r.add_argument("config")
    r.add_argument("out")
    r.add_argument("--chunk", type=int, default=None)
    s = sub.add_parser("summarize", help="compact JSON summary of a run")
    s.add_argument("run")
    s.add_argument("--config", required=True)
    s.add_argument("--command", default=None)
    s.add_argument("--scale", default="pilot", choices=["smoke", "pilot", "reduced", "headline"])
    s.add_argument("--out", required=True)
    t = sub.add_parser("table", help="the table and verdict from summaries")
    t.add_argument("files", nargs="+")
    u = sub.add_parser("truth", help="planted ground truth vs verdicts in dev campaign folders")
    u.add_argument("dirs", nargs="+")
    args = ap.parse_args(argv)
    cmds = {"run": cmd_run, "summarize": cmd_summarize, "table": cmd_table, "truth": cmd_truth}
    return cmds[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
