"""The gating sensitivity pilot (configs/reactions/gating_pilot.yaml) in resumable chunks, its compact
per-target summaries and the paired table (oracle − ungated, gated − ungated, ...).

    # one chunk: some targets and a seed range of the pilot config (rerun the same command to resume)
    nice -n 10 python studies/reactions_gating_pilot/pilot.py run --targets perera-1b+2c \
        --first-seed 9001 --seeds 10 --out runs/gating-pilot/1b2c
    # per target, the per-seed best true yield at 10/20/40 experiments of every arm, merged into --into
    python studies/reactions_gating_pilot/pilot.py summarise runs/gating-pilot/1b2c \
        --into benchmarks/data/reactions_gating_pilot
    # the paired differences with seed-bootstrap 95% intervals
    python studies/reactions_gating_pilot/pilot.py table benchmarks/data/reactions_gating_pilot

A chunk's config is the pilot's restricted to ``--targets`` and the seed range; nothing else changes.
``--config`` (run and summarise) names another pilot config, e.g. the strengthened corruption's
``configs/reactions/gating_pilot_strong.yaml``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "configs" / "reactions" / "gating_pilot.yaml"
AT = (10, 20, 40)
CONTRASTS = (
    ("protocol_oracle_gates", "protocol_ungated"),
    ("protocol_gated", "protocol_ungated"),
    ("protocol_gated", "prior_only"),
    ("protocol_gated", "gp_ei_prior"),
    ("protocol_ungated", "prior_only"),
)


def chunk_config(targets: list[str], first_seed: int, seeds: int, config: Path = CONFIG) -> Any:
    from rsi_workbench.config import read_config_file
    from rsi_workbench.experiments.reactions.config import Config, grid_spec

    raw = read_config_file(config)
    cfg = Config.model_validate(raw)
    grids = [g for g in cfg.grids if grid_spec(g).name in targets]
    if len(grids) != len(targets):
        raise SystemExit(
            f"unknown target among {targets}; the pilot's: {[grid_spec(g).name for g in cfg.grids]}"
        )
    return cfg.model_copy(
        update={"grids": grids, "first_seed": first_seed, "runs": seeds, "cohort_size": seeds}
    )


def run(args: argparse.Namespace) -> None:
    from rsi_workbench.experiments.reactions.experiment import run_experiment

    cfg = chunk_config(args.targets.split(","), args.first_seed, args.seeds, Path(args.config))
    out = Path(args.out)
    run_experiment(cfg, out, resume=out.exists())


def summarise(args: argparse.Namespace) -> None:
    from rsi_workbench.records import Run

    into = Path(args.into)
    into.mkdir(parents=True, exist_ok=True)
    fin = [e.payload for e in Run.open(Path(args.run)).events("run_finished")]
    walls = [e.payload for e in Run.open(Path(args.run)).events("cohort_finished")]
    by_grid: dict[str, list[dict[str, Any]]] = {}
    for p in fin:
        by_grid.setdefault(p["grid"], []).append(p)
    for g, ps in by_grid.items():
        path = into / f"{g}.json"
        have = (
            json.loads(path.read_text())
            if path.exists()
            else {"grid": g, "unit": "seed", "best": {}, "wall_s": {}}
        )
        for p in ps:
            curve = p["best_curve"]
            have["best"].setdefault(p["method"], {})[str(p["seed"])] = {str(n): curve[n - 1] for n in AT}
        for w in walls:
            if w["grid"] == g:
                have["wall_s"][f"{w['method']}:{min(w['seeds'])}-{max(w['seeds'])}"] = round(w["wall_s"], 1)
        have["config"] = str(Path(args.config).resolve().relative_to(ROOT))
        path.write_text(json.dumps(have, indent=1, sort_keys=True) + "\n")
        print(f"{path}: {', '.join(f'{m} {len(s)}' for m, s in have['best'].items())} seeds")


def paired(a: dict[str, Any], b: dict[str, Any], n: int, boot: int = 4000) -> tuple[float, float, float, int]:
    seeds = sorted(set(a) & set(b))
    d = np.array([a[s][str(n)] - b[s][str(n)] for s in seeds])
    rng = np.random.default_rng(0)
    means = d[rng.integers(0, len(d), (boot, len(d)))].mean(axis=1)
    return float(d.mean()), float(np.quantile(means, 0.025)), float(np.quantile(means, 0.975)), len(d)


def table(args: argparse.Namespace) -> None:
    lines = [
        "| target | contrast | n | " + " | ".join(f"at {n}" for n in AT) + " |",
        "|---|---|---|---|---|---|",
    ]
    for path in sorted(Path(args.data).glob("*.json")):
        best = json.loads(path.read_text())["best"]
        for x, y in CONTRASTS:
            if x in best and y in best:
                cells = [paired(best[x], best[y], n) for n in AT]
                lines.append(
                    f"| {path.stem} | {x} − {y} | {cells[0][3]} | "
                    + " | ".join(f"{m:+.2f} [{lo:+.2f}, {hi:+.2f}]" for m, lo, hi, _ in cells)
                    + " |"
                )
    print("\n".join(lines))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--targets", required=True)
    r.add_argument("--first-seed", type=int, default=9001)
    r.add_argument("--seeds", type=int, default=10)
    r.add_argument("--out", required=True)
    s = sub.add_parser("summarise")
    s.add_argument("run")
    for q in (r, s):
        q.add_argument("--config", default=str(CONFIG), help="the pilot config (default: gating_pilot.yaml)")
    s.add_argument("--into", required=True)
    t = sub.add_parser("table")
    t.add_argument("data")
    args = ap.parse_args()
    {"run": run, "summarise": summarise, "table": table}[args.cmd](args)


if __name__ == "__main__":
    main()
