"""The pre-registered GP factorial (configs/reactions/factorial.yaml, issue 32 item 3): compact
per-target summaries of its finished chunks, and the table with the answer rule's reading.

    # the run (resumable; cohorts of 5 seeds run cohort-major: a finished chunk has every arm/target)
    nice -n 19 rsi-workbench run configs/reactions/factorial.yaml --out runs/reactions-factorial
    # per target, the per-seed best yield at 10/20/40 of every arm, for the seeds every arm and target
    # finished (docs/results.md's format, unit: seeds); rewrites benchmarks/data/reactions_factorial/
    python studies/reactions_factorial/reactions_factorial.py summarise runs/reactions-factorial
    # every arm − gp_ei paired by seed, and the reading of the header's answer rule
    python studies/reactions_factorial/reactions_factorial.py table
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "reactions_transfer"))
from reactions_transfer import paired, per_run_seconds  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "configs" / "reactions" / "factorial.yaml"
DATA = ROOT / "benchmarks" / "data" / "reactions_factorial"
AT = (10, 20, 40)
REF, BASE = "gp_ei", "gated_l05"
ARMS = ("gated_l05", "gated_l0", "gated_ei", "refit_l05", "refit_l0", "refit_ei")
FACTORS = {
    "λ (gated_l0)": "gated_l0",
    "gates (refit_l05)": "refit_l05",
    "decision rule (gated_ei)": "gated_ei",
}
SEEDS_PER_CHUNK, CHUNKS = 5, 10


def complete_seeds(df: Any) -> list[int]:
    """Seeds that every (grid, arm) cell of the run has finished."""
    cells = df.groupby(["grid", "method"])["seed"].apply(set)
    n_cells = 3 * (len(ARMS) + 1)
    if len(cells) < n_cells:
        return []
    return sorted(set.intersection(*cells.tolist()))


def summarise(args: argparse.Namespace) -> int:
    from rsi_workbench.experiments.reactions.report import runs_frame

    run_dir, into = Path(args.run_dir), Path(args.into)
    into.mkdir(parents=True, exist_ok=True)
    df = runs_frame(run_dir)
    seeds = complete_seeds(df)
    k = len(seeds) // SEEDS_PER_CHUNK
    seeds = seeds[: k * SEEDS_PER_CHUNK]
    df = df[df["seed"].isin(seeds)]
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    for grid, d in df.groupby("grid", sort=False):
        for n in AT:
            arms = {
                str(m): {str(int(r.seed)): [float(r.best_curve[n - 1])] for r in dm.itertuples()}
                for m, dm in d.groupby("method", sort=False)
            }
            body = {
                "system": "reactions GP factorial (issue 32 item 3)",
                "experiment": f"{grid}, best yield after {n} experiments",
                "status": "verified",
                "scale": "reduced" if k < CHUNKS else "full",
                "config": "configs/reactions/factorial.yaml",
                "command": "rsi-workbench run configs/reactions/factorial.yaml ... && "
                "python studies/reactions_factorial/reactions_factorial.py summarise ...",
                "commit": commit.stdout.strip(),
                "date": datetime.now(UTC).strftime("%Y-%m-%d"),
                "values_from": "run_finished events (best_curve) of the run directory",
                "kind": "paired",
                "compare": [BASE, REF],
                "unit": "seeds",
                "interval": "bootstrap",
                "scale_factor": 1.0,
                "value_unit": "yield points",
                "digits": 2,
                "arms": {m: dict(sorted(v.items(), key=lambda kv: int(kv[0]))) for m, v in arms.items()},
                "chunks": f"{k} of {CHUNKS} (seeds {seeds[0]}..{seeds[-1]})" if seeds else "0",
                "seconds_per_run": per_run_seconds(run_dir),
            }
            path = into / f"{grid}@{n}.json"
            path.write_text(json.dumps(body, indent=1, ensure_ascii=False) + "\n")
            print(f"wrote {path} ({len(seeds)} seeds per arm, chunk {k} of {CHUNKS})")
    return 0


def _mean(cell: dict[str, list[float]]) -> float:
    return sum(v[0] for v in cell.values()) / len(cell)


def table(args: argparse.Namespace) -> int:
    folder = Path(args.folder)
    files = sorted(folder.glob("*@*.json"))
    if not files:
        raise SystemExit(f"{folder}: no summaries (<target>@<n>.json)")
    data = {(f.stem.split("@")[0], int(f.stem.split("@")[1])): json.loads(f.read_text()) for f in files}
    targets = list(dict.fromkeys(t for t, _ in data))
    lines = [f"chunks: {data[(targets[0], AT[0])]['chunks']}", ""]
    lines.append(f"mean best yield of {REF} (the reference), then every arm − {REF} paired by seed,")
    lines += [
        "mean [95% bootstrap CI] (seeds); EI arms use an acquisition rule (reported apart from eq. 7):",
        "",
    ]
    lines += ["| target | arm | @10 | @20 | @40 |", "|---|---|---|---|---|"]
    for t in targets:
        a0 = {n: data[(t, n)]["arms"] for n in AT}
        lines.append(f"| {t} | {REF} (mean) | " + " | ".join(f"{_mean(a0[n][REF]):.2f}" for n in AT) + " |")
        for m in ARMS:
            cells = []
            for n in AT:
                mean, lo, hi, k = paired(a0[n][m], a0[n][REF])
                cells.append(f"{mean:+.2f} [{lo:+.2f}, {hi:+.2f}] ({k})")
            kind = " (EI)" if m.endswith("_ei") else ""
            lines.append(f"| {t} | {m}{kind} | " + " | ".join(cells) + " |")
    lines += ["", *reading(data, targets)]
    print("\n".join(lines))
    return 0


def reading(data: dict[tuple[str, int], dict[str, Any]], targets: list[str]) -> list[str]:
    """The header's answer rule at 20 experiments, per target (a chunk's reading is not the answer)."""
    out = ["answer rule at 20 experiments (lead = gp_ei − gated_l05; a factor explains the gap if its arm"]
    out.append("closes ≥ lead/2 over gated_l05; refit_ei matches gp_ei if its paired CI reaches 0):")
    votes: dict[str, int] = {}
    for t in targets:
        a = data[(t, 20)]["arms"]
        lead = paired(a[REF], a[BASE])[0]
        if lead <= 0:
            out.append(f"- {t}: no gap (gp_ei − gated_l05 = {lead:+.2f})")
            continue
        parts, hits = [], []
        for label, m in FACTORS.items():
            gain = paired(a[m], a[BASE])[0]
            parts.append(f"{label} closes {gain:+.2f}")
            if gain >= lead / 2:
                hits.append(label)
                votes[label] = votes.get(label, 0) + 1
        mean, lo, hi, _ = paired(a["refit_ei"], a[REF])
        match = hi >= 0
        votes["refit_ei matches gp_ei"] = votes.get("refit_ei matches gp_ei", 0) + int(match)
        out.append(
            f"- {t}: lead {lead:+.2f}; " + "; ".join(parts) + f"; explains: {', '.join(hits) or 'none'}; "
            f"refit_ei − gp_ei {mean:+.2f} [{lo:+.2f}, {hi:+.2f}] ({'matches' if match else 'below'})"
        )
    general = [k for k, v in votes.items() if v >= 2]
    out.append(f"general (≥ 2 of {len(targets)} targets): {', '.join(general) or 'none'}")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("summarise", help="per-target compact summaries of the run's finished chunks")
    s.add_argument("run_dir")
    s.add_argument("--into", default=str(DATA))
    t = sub.add_parser("table", help="every arm − gp_ei and the answer rule's reading")
    t.add_argument("folder", nargs="?", default=str(DATA))
    args = ap.parse_args(argv)
    return {"summarise": summarise, "table": table}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
