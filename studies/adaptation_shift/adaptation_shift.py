"""Why fixed and adaptive world models can report the same rank accuracy and Brier (issue 35 item 4).

    python studies/adaptation_shift/adaptation_shift.py                     # table from benchmarks/data/adaptation_shift/*.json
    python studies/adaptation_shift/adaptation_shift.py --summarize EXP_DIR --name NAME [--seed 0] [--fixed world_fixed] \\
        [--adaptive world_adaptive]                           # write benchmarks/data/adaptation_shift/NAME.json

A code-repair experiment directory holds one run per method and seed (``runs/<method>-seed<s>/``).
The fixed and the adaptive world-model arms share the seed, the coder and φ0, so until their
selections diverge they see the same states and propose the same candidates. For every (task,
cycle) proposal group where both runs proposed identical candidates from an identical state, this
compares the two runs' recorded predictions (the predictor each run held at that cycle, with its
version): the mean and largest absolute change of the predicted ``p_all_pass``, whether the
candidates' predicted-utility order changed, and whether the selected candidate changed. It also
recomputes each run's rank accuracy and 5-class Brier with the code-repair report's own function
(:func:`rsi_workbench.protocol.report.summarize_run`), so the table says whether identical report
figures mean "the report read the wrong predictor" (adapted versions absent from the predictions)
or "the adapted predictor predicts almost the same" (versions present, shifts tiny, order kept).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "benchmarks" / "data" / "adaptation_shift"


def _proposals(
    run_dir: Path,
) -> tuple[dict[tuple[str, int], dict[str, Any]], dict[tuple[str, int], tuple[int, ...]]]:
    from rsi_workbench.protocol.loop import effective_events
    from rsi_workbench.records import Run

    props: dict[tuple[str, int], dict[str, Any]] = {}
    chosen: dict[tuple[str, int], tuple[int, ...]] = {}
    for e in effective_events(Run.open(run_dir)):
        p = e.payload
        if e.kind == "proposal":
            props[(p["task_id"], int(p["cycle"]))] = p
        elif e.kind == "selection" and e.cycle is not None:
            chosen[(p["task_id"], int(e.cycle))] = tuple(p.get("selected") or ())
    return props, chosen


def _order(cands: list[dict[str, Any]]) -> list[int]:
    scored = [(c["utility"], i) for i, c in enumerate(cands) if c.get("utility") is not None]
    return [i for _, i in sorted(scored, key=lambda t: (-t[0], t[1]))]


def summarize(exp_dir: Path, seed: int, fixed: str, adaptive: str) -> dict[str, Any]:
    """The comparison of one seed's fixed and adaptive runs as a compact, JSON-able summary."""
    from rsi_workbench.experiments.code_repair.report import RANKING_TERMS
    from rsi_workbench.protocol.report import summarize_run

    dirs = {arm: exp_dir / "runs" / f"{arm}-seed{seed}" for arm in (fixed, adaptive)}
    for arm, d in dirs.items():
        if not (d / "events.jsonl").is_file():
            raise SystemExit(f"{d}: no events.jsonl (arm {arm!r}, seed {seed})")
    (pf, cf), (pa, ca) = _proposals(dirs[fixed]), _proposals(dirs[adaptive])
    shared = dp = order_changed = sel_changed = 0
    shifts: list[float] = []
    versions: dict[str, int] = {}
    for key in sorted(pa):
        a = pa[key]
        for c in a["candidates"]:
            if c.get("prediction"):
                v = c["prediction"]["version"]
                versions[v] = versions.get(v, 0) + 1
                break
        f = pf.get(key)
        if f is None or f["signature"] != a["signature"] or f["actions"] != a["actions"]:
            continue
        shared += 1
        pairs = [
            (cf_["prediction"], ca_["prediction"])
            for cf_, ca_ in zip(f["candidates"], a["candidates"], strict=True)
            if cf_.get("prediction") and ca_.get("prediction")
        ]
        if any(x["version"] != y["version"] for x, y in pairs):
            dp += 1
            shifts += [
                abs(float(y["utility_terms"]["p_all_pass"]) - float(x["utility_terms"]["p_all_pass"]))
                for x, y in pairs
            ]
            order_changed += int(_order(f["candidates"]) != _order(a["candidates"]))
            sel_changed += int(cf.get(key) != ca.get(key))
    sums = {arm: summarize_run(d, ranking_terms=RANKING_TERMS) for arm, d in dirs.items()}
    return {
        "experiment": str(exp_dir.name),
        "seed": seed,
        "arms": [fixed, adaptive],
        "adaptive_prediction_versions": versions,
        "groups_adaptive": len(pa),
        "groups_shared": shared,
        "groups_shared_other_version": dp,
        "mean_abs_dp_all_pass": statistics.fmean(shifts) if shifts else None,
        "max_abs_dp_all_pass": max(shifts) if shifts else None,
        "order_changed": order_changed,
        "selection_changed": sel_changed,
        "rank_acc": {arm: s.ranking_accuracy for arm, s in sums.items()},
        "brier5": {arm: s.brier for arm, s in sums.items()},
    }


def _f(x: float | None, nd: int = 4) -> str:
    return "—" if x is None else f"{x:.{nd}f}"


def table(rows: list[dict[str, Any]]) -> str:
    """The Markdown table over committed summaries."""
    out = [
        "| summary | seed | adapted versions in predictions | shared groups (other version) | mean / max abs Δp_all_pass "
        "| order changed | selection changed | rank acc fixed / adaptive | Brier5 fixed / adaptive |",
        "|---|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        fx, ad = r["arms"]
        vers = ", ".join(f"{v} ×{n}" for v, n in r["adaptive_prediction_versions"].items())
        out.append(
            f"| {r['name']} | {r['seed']} | {vers} | {r['groups_shared']} ({r['groups_shared_other_version']}) | "
            f"{_f(r['mean_abs_dp_all_pass'])} / {_f(r['max_abs_dp_all_pass'])} | {r['order_changed']} | "
            f"{r['selection_changed']} | {_f(r['rank_acc'][fx], 3)} / {_f(r['rank_acc'][ad], 3)} | "
            f"{_f(r['brier5'][fx], 3)} / {_f(r['brier5'][ad], 3)} |"
        )
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--summarize", type=Path, metavar="EXP_DIR")
    ap.add_argument("--name")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--fixed", default="world_fixed")
    ap.add_argument("--adaptive", default="world_adaptive")
    ap.add_argument("--note", default="", help="what the run was (config, settings), kept in the summary")
    a = ap.parse_args(argv)
    if a.summarize:
        if not a.name:
            ap.error("--summarize needs --name")
        s = {"name": a.name, "note": a.note, **summarize(a.summarize, a.seed, a.fixed, a.adaptive)}
        DATA.mkdir(parents=True, exist_ok=True)
        (DATA / f"{a.name}.json").write_text(json.dumps(s, indent=1, sort_keys=True) + "\n")
        print(table([s]))
        return 0
    rows = [json.loads(p.read_text()) for p in sorted(DATA.glob("*.json"))]
    if not rows:
        print(f"no summaries in {DATA}", file=sys.stderr)
        return 1
    print(table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
