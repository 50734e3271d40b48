"""The pre-registered transfer comparison (configs/reactions/transfer.yaml, issue 32) in resumable
chunks, its compact per-target summaries, and the table with the success rule's reading.

    # one chunk: a subset of the targets and a seed range of the pre-registered config (resumable:
    # rerun the same command; every finished protocol run and cohort is kept)
    python studies/reactions_transfer/reactions_transfer.py run --targets perera-1a+2a,perera-1a+2b --first-seed 4001 \
        --seeds 10 --out runs/reactions-transfer/chunk1
    # compact summaries: per target, the per-seed best yield at 10/20/40 experiments of every arm
    # (docs/results.md's format, unit: seeds), merged with the seeds already in --into
    python studies/reactions_transfer/reactions_transfer.py summarise runs/reactions-transfer/chunk1 \
        --into benchmarks/data/reactions_transfer --chunk "1 of 15"
    # the table (every arm vs GP-EI from scratch and vs the strong control) and the rule's reading
    python studies/reactions_transfer/reactions_transfer.py table benchmarks/data/reactions_transfer

A chunk's config is the pre-registered one restricted to ``--targets`` and the seed range; nothing
else changes. The verdict is the pre-registered one only when every target has ≥ 50 seeds.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "configs" / "reactions" / "transfer.yaml"
DATA = ROOT / "benchmarks" / "data" / "reactions_transfer"
AT = (10, 20, 40)
PRIMARY, SCRATCH, STRONG, ONLY = "prior_protocol_l0", "gp_ei", "gp_ei_prior", "prior_only_l0"
MISLEADS = ("perera-1a+2a",)
RULE = (
    "prior_protocol_l0 − gp_ei ≥ +5 at 10 and at 20 experiments, paired 95% CI excluding 0, on ≥ 4 of 6 "
    "targets; and prior_protocol_l0 ≥ prior_only_l0 at 10 and 20 on 1a+2a (the prior misleads)"
)


def chunk_config(targets: list[str], first_seed: int, seeds: int) -> Any:
    """The pre-registered config restricted to ``targets`` and seeds first_seed .. first_seed+seeds−1."""
    from rsi_workbench.config import read_config_file
    from rsi_workbench.experiments.reactions.config import Config, grid_spec

    raw = read_config_file(CONFIG)
    cfg = Config.model_validate(raw)
    names = [grid_spec(g).name for g in cfg.grids]
    bad = [t for t in targets if t not in names]
    if bad:
        raise SystemExit(f"{CONFIG}: unknown target(s) {bad}; the config's targets: {names}")
    raw["grids"] = [g for g in raw["grids"] if g["name"] in targets]
    raw.update(first_seed=first_seed, runs=seeds, cohort_size=min(seeds, int(raw.get("cohort_size", 10))))
    return Config.model_validate(raw)


def run_chunk(args: argparse.Namespace) -> int:
    from rsi_workbench.experiments.preflight import preflight
    from rsi_workbench.experiments.reactions.experiment import run_experiment

    cfg = chunk_config(args.targets.split(","), args.first_seed, args.seeds)
    preflight(cfg, str(CONFIG))
    out = Path(args.out)
    run_experiment(cfg, out, resume=out.exists())
    print(f"chunk written to {out}")
    return 0


def per_run_seconds(run_dir: Path) -> dict[str, float]:
    """Mean wall seconds per run of each arm, from the cohort_finished events (protocol arms: one run
    after another; baselines: a cohort's runs together, divided by its seeds)."""
    from rsi_workbench.records import Run

    acc: dict[str, list[float]] = {}
    for e in Run.open(run_dir).events("cohort_finished"):
        acc.setdefault(e.payload["method"], []).append(e.payload["wall_s"] / len(e.payload["seeds"]))
    return {m: round(statistics.mean(v), 2) for m, v in acc.items()}


def summarise(args: argparse.Namespace) -> int:
    from rsi_workbench.experiments.reactions.report import runs_frame

    run_dir, into = Path(args.run_dir), Path(args.into)
    into.mkdir(parents=True, exist_ok=True)
    df = runs_frame(run_dir)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    secs = per_run_seconds(run_dir)
    for grid, d in df.groupby("grid", sort=False):
        for n in AT:
            path = into / f"{grid}@{n}.json"
            old = json.loads(path.read_text()) if path.exists() else {}
            arms: dict[str, dict[str, list[float]]] = old.get("arms", {})
            for m, dm in d.groupby("method", sort=False):
                cell = arms.setdefault(str(m), {})
                for r in dm.itertuples():
                    cell[str(int(r.seed))] = [float(r.best_curve[n - 1])]
            chunks = sorted(set(old.get("chunks", [])) | {f"{run_dir.name}: {args.chunk}"})
            body = {
                "system": "reactions transfer (issue 32)",
                "experiment": f"{grid}, best yield after {n} experiments",
                "status": "verified",
                "scale": "reduced",
                "config": "configs/reactions/transfer.yaml",
                "command": "python studies/reactions_transfer/reactions_transfer.py run ... && ... summarise ...",
                "commit": commit.stdout.strip(),
                "date": datetime.now(UTC).strftime("%Y-%m-%d"),
                "values_from": "run_finished events (best_curve) of the chunk run directories",
                "kind": "paired",
                "compare": [PRIMARY, SCRATCH],
                "unit": "seeds",
                "interval": "bootstrap",
                "scale_factor": 1.0,
                "value_unit": "yield points",
                "digits": 2,
                "arms": {m: dict(sorted(v.items())) for m, v in arms.items()},
                "chunks": chunks,
                "seconds_per_run": {**old.get("seconds_per_run", {}), run_dir.name: secs},
                "preregistered": {"rule": RULE},
            }
            path.write_text(json.dumps(body, indent=1, ensure_ascii=False) + "\n")
            print(f"wrote {path} ({len(next(iter(arms.values())))} seeds per arm)")
    return 0


def paired(a: dict[str, list[float]], b: dict[str, list[float]]) -> tuple[float, float, float, int]:
    """Mean paired difference a − b over shared seeds and its 95% bootstrap interval (2,000 resamples,
    seed 0, resampling seeds: headline.py's ``bootstrap`` interval)."""
    from rsi_workbench.metrics.bootstrap import cluster_interval

    seeds = sorted(a.keys() & b.keys())
    diffs = {s: [a[s][0] - b[s][0]] for s in seeds}
    if len(seeds) < 3:
        m = statistics.mean(v[0] for v in diffs.values()) if seeds else float("nan")
        return m, float("nan"), float("nan"), len(seeds)
    mean, lo, hi = cluster_interval(diffs, n_resamples=2000, seed=0)
    return float(mean), float(lo), float(hi), len(seeds)


def table(args: argparse.Namespace) -> int:
    folder = Path(args.folder)
    files = sorted(folder.glob("*@*.json"))
    if not files:
        raise SystemExit(f"{folder}: no summaries (<target>@<n>.json)")
    data = {(f.stem.split("@")[0], int(f.stem.split("@")[1])): json.loads(f.read_text()) for f in files}
    targets = list(dict.fromkeys(t for t, _ in data))
    lines = []
    for ref in (SCRATCH, STRONG):
        lines += [f"\nevery arm − {ref}, best yield paired by seed, mean [95% bootstrap CI] (seeds):", ""]
        lines.append("| target | arm | @10 | @20 | @40 |")
        lines.append("|---|---|---|---|---|")
        for t in targets:
            arms = data[(t, AT[0])]["arms"]
            for m in arms:
                if m == ref or ref not in arms:
                    continue
                cells = []
                for n in AT:
                    a = data[(t, n)]["arms"]
                    mean, lo, hi, k = paired(a[m], a[ref])
                    cells.append(f"{mean:+.2f} [{lo:+.2f}, {hi:+.2f}] ({k})")
                lines.append(f"| {t} | {m} | " + " | ".join(cells) + " |")
    lines += ["", *verdict(data, targets)]
    print("\n".join(lines))
    return 0


def verdict(data: dict[tuple[str, int], dict[str, Any]], targets: list[str]) -> list[str]:
    """The success rule's reading on the seeds present (a chunk's reading is not the verdict)."""
    passed = []
    seeds = min(len(data[(t, AT[0])]["arms"].get(PRIMARY, {})) for t in targets)
    for t in targets:
        ok = True
        for n in (10, 20):
            a = data[(t, n)]["arms"]
            if PRIMARY not in a or SCRATCH not in a:
                ok = False
                continue
            mean, lo, _, _ = paired(a[PRIMARY], a[SCRATCH])
            ok &= mean >= 5 and lo > 0
        passed.append((t, ok))
    part_a = sum(ok for _, ok in passed)
    misleads = []
    for t in MISLEADS:
        if (t, 10) not in data:
            misleads.append(f"{t}: not run yet")
            continue
        diffs = [paired(data[(t, n)]["arms"][PRIMARY], data[(t, n)]["arms"][ONLY])[0] for n in (10, 20)]
        misleads.append(
            f"{t}: {'holds' if min(diffs) >= 0 else 'fails'} (@10 {diffs[0]:+.2f}, @20 {diffs[1]:+.2f})"
        )
    final = len(targets) == 6 and seeds >= 50
    head = (
        "success rule (pre-registered verdict)"
        if final
        else (
            f"success rule read on {len(targets)} of 6 targets, {seeds} seeds: NOT the pre-registered verdict"
        )
    )
    return [
        f"{head}:",
        f"- (a) +5 at 10 and 20 with CI > 0: met on {part_a} of {len(targets)} targets "
        f"({', '.join(t for t, ok in passed if ok) or 'none'}); needs 4 of 6",
        f"- (b) prior_protocol_l0 ≥ prior_only_l0: {'; '.join(misleads)}",
    ]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="run one resumable chunk of the pre-registered config")
    r.add_argument("--targets", required=True, help="comma-separated grid names of transfer.yaml")
    r.add_argument("--first-seed", type=int, default=4001)
    r.add_argument("--seeds", type=int, default=10)
    r.add_argument("--out", required=True)
    s = sub.add_parser("summarise", help="per-target compact summaries from a chunk's run directory")
    s.add_argument("run_dir")
    s.add_argument("--into", default=str(DATA))
    s.add_argument("--chunk", required=True, help='e.g. "1 of 15"')
    t = sub.add_parser("table", help="the table and the success rule's reading from the summaries")
    t.add_argument("folder", nargs="?", default=str(DATA))
    args = ap.parse_args(argv)
    return {"run": run_chunk, "summarise": summarise, "table": table}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
