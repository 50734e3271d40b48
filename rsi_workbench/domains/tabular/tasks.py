"""Compiled investigations: concrete inputs, environment, required outputs, checks — then run for real.

:func:`compile_task` turns a machine-readable plan into an executable task (dataset registry
entry, feature columns, the split file by sha256, library versions); groups the cohort lacks stay
in ``dependencies`` with ``available: False`` and make the task non-executable instead of being
dropped. :func:`run_task` executes it in a working directory, writes the required outputs and
evaluates every check against the files it wrote (execution readiness, not scientific value).
"""

from __future__ import annotations

import hashlib
import json
import platform
import time
from pathlib import Path
from typing import Any

import numpy as np

from rsi_workbench.domains.tabular.analysis import AnalysisSpec, run_analysis, splits_csv
from rsi_workbench.domains.tabular.catalog import direction, load_direction

REQUIRED_OUTPUTS = ("metrics.json", "predictions.csv", "splits.csv")
CHECKS = (
    "outputs_present",
    "splits_fixed",
    "patients_complete",
    "no_feature_overlap",
    "metric_finite",
    "interval_ordered",
    "criteria_decidable",
)


def _environment() -> dict[str, str]:
    import scipy
    import sklearn

    return {
        "python": platform.python_version(),
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "scikit-learn": sklearn.__version__,
    }


def compile_task(spec: AnalysisSpec, *, task_id: str) -> dict[str, Any]:
    """The executable task for a plan; unavailable data becomes an explicit, blocking dependency."""
    d = direction(spec.direction)
    deps: list[dict[str, Any]] = []
    for g in spec.required_groups():
        deps.append(
            {
                "name": g,
                "kind": "data",
                "required": True,
                "available": d.available(g),
                "reason": "" if d.available(g) else d.unavailable.get(g, "not in the cohort"),
            }
        )
    for g in spec.deferred:
        deps.append(
            {
                "name": g,
                "kind": "data",
                "required": False,
                "available": d.available(g),
                "reason": d.unavailable.get(g, "deferred by the plan"),
            }
        )
    executable = all(x["available"] for x in deps if x["required"])
    split_bytes = splits_csv(spec.direction, spec.outer_folds, spec.split_seed)
    inputs: dict[str, Any] = {
        "dataset": d.dataset,
        "outcome": d.outcome,
        "spec": spec.to_dict(),
        "split_sha256": hashlib.sha256(split_bytes).hexdigest(),
        "baseline_columns": d.columns([g for g in spec.baseline if d.available(g)]),
        "added_columns": d.columns([g for g in spec.added if d.available(g)]),
    }
    core = {k: v for k, v in spec.to_dict().items() if k not in ("deferred",)}
    fingerprint = hashlib.sha256(
        json.dumps(
            {**core, "baseline": sorted(core["baseline"]), "added": sorted(core["added"])}, sort_keys=True
        ).encode()
    ).hexdigest()[:16]
    return {
        "task_id": task_id,
        "inputs": inputs,
        "environment": _environment(),
        "required_outputs": list(REQUIRED_OUTPUTS),
        "checks": list(CHECKS),
        "dependencies": deps,
        "fingerprint": fingerprint,
        "executable": executable,
    }


def run_task(task: dict[str, Any], workdir: str | Path) -> dict[str, Any]:
    """Execute a compiled task in ``workdir``; returns status, output paths, checks and results."""
    t0 = time.perf_counter()
    work = Path(workdir)
    work.mkdir(parents=True, exist_ok=True)
    if not task["executable"]:
        missing = [x["name"] for x in task["dependencies"] if x["required"] and not x["available"]]
        return {
            "status": "blocked",
            "outputs": {},
            "checks": {},
            "results": {"missing": missing},
            "error": f"required data unavailable: {missing}",
            "seconds": time.perf_counter() - t0,
        }
    spec = AnalysisSpec.from_dict(task["inputs"]["spec"])
    try:
        results, folds, preds = run_analysis(spec)
    except Exception as e:  # a failed analysis is a recorded outcome, not a crash of the campaign
        return {
            "status": "failed",
            "outputs": {},
            "checks": {},
            "results": {},
            "error": f"{type(e).__name__}: {e}",
            "seconds": time.perf_counter() - t0,
        }
    _, y = load_direction(spec.direction)
    (work / "splits.csv").write_bytes(splits_csv(spec.direction, spec.outer_folds, spec.split_seed))
    lines = ["patient_id,fold,y," + ",".join(preds)]
    for i in range(len(y)):
        lines.append(f"{i},{folds[i]},{y[i]}," + ",".join(f"{preds[k][i]:.6g}" for k in preds))
    (work / "predictions.csv").write_text("\n".join(lines) + "\n")
    (work / "metrics.json").write_text(json.dumps(results, indent=2, sort_keys=True))
    checks = _checks(task, work, results)
    return {
        "status": "ok" if all(checks.values()) else "failed",
        "outputs": {name: str(work / name) for name in REQUIRED_OUTPUTS if (work / name).exists()},
        "checks": checks,
        "results": results,
        "error": "" if all(checks.values()) else f"checks failed: {[k for k, v in checks.items() if not v]}",
        "seconds": time.perf_counter() - t0,
    }


def _checks(task: dict[str, Any], work: Path, results: dict[str, Any]) -> dict[str, bool]:
    """Every check reads what the task wrote, so a passing task really produced its contract."""
    out: dict[str, bool] = {}
    out["outputs_present"] = all(
        (work / n).exists() and (work / n).stat().st_size > 0 for n in REQUIRED_OUTPUTS
    )
    split_sha = (
        hashlib.sha256((work / "splits.csv").read_bytes()).hexdigest() if out["outputs_present"] else ""
    )
    out["splits_fixed"] = split_sha == task["inputs"]["split_sha256"]
    try:
        rows = (work / "predictions.csv").read_text().strip().splitlines()[1:]
        ids = [int(r.split(",", 1)[0]) for r in rows]
        out["patients_complete"] = sorted(ids) == list(range(int(results["n"])))
    except (OSError, ValueError):
        out["patients_complete"] = False
    inp = task["inputs"]
    out["no_feature_overlap"] = not set(inp["baseline_columns"]) & set(inp["added_columns"])
    vals = [results.get(k) for k in ("baseline", "extended", "delta", "ci_lo", "ci_hi")]
    out["metric_finite"] = all(isinstance(v, float) and np.isfinite(v) for v in vals)
    out["interval_ordered"] = out["metric_finite"] and results["ci_lo"] <= results["ci_hi"]
    saved = json.loads((work / "metrics.json").read_text()) if out["outputs_present"] else {}
    out["criteria_decidable"] = saved.get("verdict") in ("supports", "weakens", "inconclusive") and (
        saved.get("metric") == direction(inp["spec"]["direction"]).metric
    )
    return out
