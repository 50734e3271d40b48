"""Verify a committed circle packing with the task's exact evaluator, or export one from a run.

    python studies/dreaming_best_packing/verify_packing.py benchmarks/data/circle_packing_n26.json
    python studies/dreaming_best_packing/verify_packing.py --export RUN_DIR OUT.json   # best valid packing of a dreaming run

Verification runs ``rsi_workbench.domains.math.circle_packing.evaluate_packing`` (containment and
non-overlap within tol = 1e-9) and prints the sum of radii, the smallest pair gap and containment
margin, and the sum after shrinking every radius just enough to make the packing valid with tol = 0.
Exit status 0 when the packing is valid and its sum equals the file's ``sum_of_radii``, else 1.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from rsi_workbench.domains.math.circle_packing import BEST_KNOWN, TOL, evaluate_packing


def margins(circles: np.ndarray) -> tuple[float, float]:
    """(smallest pairwise gap |c_i − c_j| − r_i − r_j, smallest containment margin)."""
    x, y, r = circles[:, 0], circles[:, 1], circles[:, 2]
    d = np.sqrt((x[:, None] - x[None, :]) ** 2 + (y[:, None] - y[None, :]) ** 2)
    iu = np.triu_indices(len(circles), 1)
    gap = float((d - (r[:, None] + r[None, :]))[iu].min())
    contain = float(np.concatenate([x - r, 1 - x - r, y - r, 1 - y - r]).min())
    return gap, contain


def verify(path: Path) -> int:
    data = json.loads(path.read_text())
    n = int(data["n"])
    c = np.asarray(data["circles"], dtype=float)
    ev = evaluate_packing(c, n, tol=TOL)
    gap, contain = margins(c)
    print(f"{path}: n={n} valid={ev.valid} (tol={TOL:g}){'' if ev.valid else ' — ' + ev.reason}")
    print(f"sum of radii            {ev.score!r}")
    print(f"recorded sum_of_radii   {data.get('sum_of_radii')!r}")
    if n in BEST_KNOWN and ev.score is not None:
        print(f"best known (AlphaEvolve) {BEST_KNOWN[n]!r}  difference {ev.score - BEST_KNOWN[n]:+.3e}")
    print(f"smallest pair gap {gap:.3e}, smallest containment margin {contain:.3e}")
    shrink = max(0.0, -gap / 2, -contain)
    strict = c.copy()
    strict[:, 2] -= shrink
    sev = evaluate_packing(strict, n, tol=0.0)
    print(f"radii shrunk by {shrink:.3e}: valid with tol=0 {sev.valid}, sum {sev.score!r}")
    ok = ev.valid and sev.valid and ev.score == data.get("sum_of_radii")
    print("OK" if ok else "FAIL")
    return 0 if ok else 1


def export(run_dir: Path, out: Path, note: str = "") -> int:
    """Write the best valid packing of a dreaming experiment (all arms and seeds) as JSON."""
    from rsi_workbench.experiments.dreaming.diagnostics import best_found
    from rsi_workbench.experiments.dreaming.experiment import load_frames
    from rsi_workbench.records import Run

    found = best_found(load_frames(run_dir, "tree_node"))
    if found.empty:
        print(f"{run_dir}: no valid attempt recorded", file=sys.stderr)
        return 1
    first = found.iloc[0]
    sub = Run.open(run_dir / "arms" / f"{first['arm']}-s{first['seed']}")
    circles = sub.artifacts.get_json(str(first["payload"]))
    cfg = Run.open(run_dir).config
    obj: dict[str, Any] = {
        "task": "circle_packing",
        "n": int(cfg["task"]["n"]),
        "sum_of_radii": evaluate_packing(circles, int(cfg["task"]["n"])).score,
        "circles": circles,
        "found_by": {
            "arm": str(first["arm"]),
            "seed": int(first["seed"]),
            "call": int(first["call"]),
            "artifact": str(first["payload"]),
            "experiment_config": cfg,
        },
        "note": note,
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(obj, indent=1) + "\n")
    print(
        f"wrote {out}: sum of radii {obj['sum_of_radii']!r} ({first['arm']} seed {first['seed']}, call {first['call']})"
    )
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("file", nargs="?", type=Path, help="packing JSON to verify")
    p.add_argument(
        "--export", nargs=2, type=Path, metavar=("RUN_DIR", "OUT"), help="export a run's best packing"
    )
    p.add_argument("--note", default="", help="with --export: a provenance note stored in the file")
    a = p.parse_args(argv)
    if a.export:
        run_dir, out = a.export
        return export(run_dir, out, note=a.note)
    if a.file is None:
        p.error("give a packing file to verify, or --export RUN_DIR OUT")
    return verify(a.file)


if __name__ == "__main__":
    sys.exit(main())
