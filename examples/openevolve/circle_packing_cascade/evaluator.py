"""Evaluator (OpenEvolve format) with a cascade: 9 circles in the unit square, sum of radii.

``evaluate_stage1`` (cheap, in this process): the program loads and returns arrays of the right
shapes; ``combined_score`` is the fraction of the packing checks passed (shape, finite, inside the
square, no overlap), so ``config.yaml``'s threshold 0.5 stops broken programs here.
``evaluate_stage2`` (full, in a subprocess of ``sys.executable`` with a timeout): the exact check
with tolerance 1e-9; ``combined_score`` = sum of radii / 1.5 (1.5 = nine equal circles on a
3 x 3 grid), 0 and ``validity`` 0 for an invalid packing. Metrics are numpy scalars, as many
OpenEvolve evaluators return them. ``evaluate`` (no cascade) runs both stages.
"""

import importlib.util
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

N = 9
TOL = 1e-9
GRID_SUM = 1.5
RUN_TIMEOUT = 15


def _load(program_path):
    spec = importlib.util.spec_from_file_location("candidate", program_path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def checks(centres, radii, tol=TOL):
    """(shape ok, finite, inside the square, no overlap, smallest gap between circles)."""
    c, r = np.asarray(centres, dtype=float), np.asarray(radii, dtype=float)
    if c.shape != (N, 2) or r.shape != (N,):
        return False, False, False, False, np.nan
    finite = bool(np.all(np.isfinite(c)) and np.all(np.isfinite(r)) and np.all(r >= 0))
    inside = bool(np.all(c - r[:, None] >= -tol) and np.all(c + r[:, None] <= 1 + tol))
    gaps = [np.linalg.norm(c[i] - c[j]) - r[i] - r[j] for i in range(N) for j in range(i + 1, N)]
    gap = np.min(gaps)
    return True, finite, inside, bool(gap >= -tol), gap


def evaluate_stage1(program_path):
    try:
        centres, radii = _load(program_path).construct_packing()
        ok = checks(centres, radii, tol=1e-6)
    except Exception as e:
        return {"combined_score": 0.0, "error": f"{type(e).__name__}: {e}"}
    return {"combined_score": np.float64(sum(ok[:4]) / 4.0), "min_gap": ok[4]}


RUNNER = """
import importlib.util, json, sys
import numpy as np
spec = importlib.util.spec_from_file_location("candidate", {program!r})
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
centres, radii = mod.construct_packing()
with open({result!r}, "w") as f:
    json.dump({{"centres": np.asarray(centres, dtype=float).tolist(), "radii": np.asarray(radii, dtype=float).tolist()}}, f)
"""


def evaluate_stage2(program_path):
    with tempfile.TemporaryDirectory() as tmp:
        result, runner = os.path.join(tmp, "packing.json"), os.path.join(tmp, "run.py")
        with open(runner, "w") as f:
            f.write(RUNNER.format(program=program_path, result=result))
        proc = subprocess.run([sys.executable, runner], capture_output=True, text=True, timeout=RUN_TIMEOUT)
        if proc.returncode != 0:
            return {"combined_score": 0.0, "validity": 0.0, "error": proc.stderr[-500:]}
        with open(result) as f:
            data = json.load(f)
    shape, finite, inside, disjoint, gap = checks(data["centres"], data["radii"])
    valid = shape and finite and inside and disjoint
    total = np.sum(data["radii"]) if valid else np.float64(0.0)
    return {
        "combined_score": total / GRID_SUM,
        "sum_radii": total,
        "validity": np.float64(1.0 if valid else 0.0),
        "min_gap": gap,
    }


def evaluate(program_path):
    first = evaluate_stage1(program_path)
    if first.get("combined_score", 0.0) < 0.5:
        return first
    return {**first, **evaluate_stage2(program_path)}
