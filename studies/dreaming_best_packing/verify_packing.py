"""Verify a committed circle packing exactly, or export one from a run.

    python studies/dreaming_best_packing/verify_packing.py benchmarks/data/headline/packings/circle_packing_n26_best.json
    python studies/dreaming_best_packing/verify_packing.py --export RUN_DIR OUT.json   # best valid packing of a dreaming run

Verification is ``rsi-workbench verify`` (:mod:`rsi_workbench.domains.math.verify`): containment and
non-overlap checked in exact rational arithmetic on the floats' exact values at tol = 1e-9 (the task
evaluator's), so the verdict never depends on rounding; it prints the exact sum of radii, the
smallest pair gap and containment margin, the smallest tolerance at which the packing holds, and the
sum certified at tol 0 after shrinking every radius by that tolerance. Exit status 0 when the packing
is valid and its sum, as a float, equals the file's ``sum_of_radii``, else 1.
"""

from __future__ import annotations

import argparse
import json
import sys
from fractions import Fraction
from pathlib import Path
from typing import Any

from rsi_workbench.domains.math.circle_packing import TOL, evaluate_packing
from rsi_workbench.domains.math.verify import BadInput, dec, packing_of, read_json, verify_packing


def verify(path: Path) -> int:
    try:
        data = read_json(str(path))
        v = verify_packing(packing_of(data), Fraction(TOL), int(data["n"]))
    except (BadInput, KeyError, TypeError, ValueError) as e:
        print(f"{path}: {e}", file=sys.stderr)
        return 1
    print(f"{path}: n={v.size} valid={v.valid} (tol={TOL:g}, exact rational arithmetic)")
    for r in v.reasons:
        print(f"  rejected: {r}")
    total = None if v.value is None else float(v.value)
    if v.value is not None:
        print(f"sum of radii            {dec(v.value)} (as a float {total!r})")
    print(f"recorded sum_of_radii   {data.get('sum_of_radii')!r}")
    for n in v.notes:
        print(n)
    ok = v.valid and total == data.get("sum_of_radii")
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
