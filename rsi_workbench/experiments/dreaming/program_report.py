"""The ``program_agent`` experiment's table, from its records: the initial program's score and
"initial X → best Y (Δ)" per lane (flagged where no candidate beat it), best valid score after N
agent calls, calls to the target (99.9% of the best known by default), valid / invalid / failed
shares (failures by class; answers cut at ``max_tokens`` counted), prompt and completion tokens per
model call, the models' cost in USD where the model block has prices, and the replay arm's policy
choices."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rsi_workbench.domains.math.analysis import CUT, cut_count, lane_rows, outcome_share_lines  # noqa: F401
from rsi_workbench.domains.math.program_lanes import initial_record
from rsi_workbench.domains.math.settings import TaskConfig, target_score
from rsi_workbench.models.usage import cost_lines
from rsi_workbench.records import Run


def _fmt(x: float | None, spec: str = ".6f") -> str:
    return "—" if x is None else format(x, spec)


def _best_at(rows: list[dict[str, Any]], calls: int) -> float | None:
    """Best valid score within the first ``calls`` calls (None: none valid, or not that many made)."""
    if not rows or rows[-1]["calls"] < calls:
        return None
    vals = [r["best_so_far"] for r in rows if r["calls"] <= calls and r["best_so_far"] is not None]
    return max(vals) if vals else None


def _score_lines(
    cfg: dict[str, Any], lanes: dict[tuple[str, int], list[dict[str, Any]]], target: Any
) -> list[str]:
    budget = int(cfg["calls"])
    marks = sorted({max(1, budget // 6), max(1, budget // 3), max(1, 2 * budget // 3), budget})
    head = (
        f"{'arm':<18}{'seed':>5}{'calls':>6}"
        + "".join(f"{'@' + str(m):>11}" for m in marks)
        + f"{'best':>11}{'to target':>13}"
    )
    lines = [
        "",
        "best valid score after N agent calls (— = none valid yet, or fewer calls made: an interrupted run);",
        "calls to reach the target",
        head,
    ]
    for (arm, seed), rows in sorted(lanes.items()):
        reach = next(
            (
                r["calls"]
                for r in rows
                if r["best_so_far"] is not None and target is not None and r["best_so_far"] >= target
            ),
            None,
        )
        cells = "".join(f"{_fmt(_best_at(rows, m)):>11}" for m in marks)
        lines.append(
            f"{arm:<18}{seed:>5}{len(rows):>6}{cells}{_fmt(_best_at(rows, rows[-1]['calls'])):>11}{('not reached' if reach is None else str(reach)):>13}"
        )
    return lines


def initial_lines(run: Run, lanes: dict[tuple[str, int], list[dict[str, Any]]]) -> list[str]:
    """ "initial X → best Y (Δ)" per lane that starts from the initial program (not ``scipy``),
    flagged where no candidate beat it; [] when the run has not scored the initial program."""
    init = initial_record(run)
    if init is None:
        return []
    x = init.get("score") if init.get("valid") else None
    what = (
        f"score {_fmt(x)} (valid)"
        if x is not None
        else f"invalid ({init.get('reason') or init.get('error') or init.get('fail_class')})"
    )
    lines = ["", f"initial program: {what}; scored once, in the sandbox, before any candidate"]
    flagged = 0
    for (arm, seed), rows in sorted(lanes.items()):
        if arm == "scipy":  # the SciPy agent does not start from the initial program
            continue
        best = rows[-1]["best_so_far"] if rows else None
        line = f"{arm:<18}{seed:>5}  initial {_fmt(x)} → best {_fmt(best)}"
        if x is not None and best is not None:
            line += f" (Δ {best - x:+.6f})"
        if x is not None and (best is None or best <= x):
            line += "  — no candidate beat the initial program"
            flagged += 1
        lines.append(line)
    if flagged:
        lines.append(
            f"NOTHING BEAT THE INITIAL PROGRAM in {flagged} lane(s): their best is not an improvement"
        )
    return lines


def _policy_lines(run: Run) -> list[str]:
    evs = run.events("policy_selected")
    if not evs:
        return []
    lines = ["", "replay-selected policy after each tree (program_replay): V^m per candidate"]
    for e in evs:
        p = e.payload
        vs = ", ".join(f"{r['policy']} {_fmt(r['V'], '.4f')}" for r in p["candidates"])
        lines.append(f"seed {p['seed']} after tree {p['after_tree']}: chose {p['chosen']}  ({vs})")
    return lines


def program_report(path: str | Path) -> str:
    """The printed table of a ``program_agent`` run."""
    run = Run.open(path)
    cfg = json.loads((Path(path) / "config.json").read_text())
    oe = cfg["task"].get("kind") == "openevolve"  # an OpenEvolve directory knows no best value
    target = None if oe else target_score(TaskConfig(**cfg["task"]).make(), float(cfg["target_fraction"]))
    task = f"openevolve dir {cfg['task']['dir']}" if oe else f"{cfg['task']['kind']} (n={cfg['task']['n']})"
    unfinished = len(cfg["arms"]) * len(cfg["seeds"]) - len(run.events("lane_finished"))
    wall = sum(float(e.payload["wall_s"]) for e in run.events("experiment_session"))
    lines = [
        f"program_agent experiment — {path}",
        f"task {task}  target {cfg['target_fraction']:g}×best known = {target}",
        f"arms {cfg['arms']}  seeds {cfg['seeds']}  W={cfg['W']}  calls={cfg['calls']}  "
        f"calls/round={cfg['calls_per_round']}  policy={cfg['policy']}  max_tokens={cfg['max_tokens']}  "
        f"model={cfg['model']['name']}  wall {wall / 60:.1f} min",
    ]
    if unfinished:
        lines.append(f"INTERRUPTED: {unfinished} lane(s) have not spent their budget (resume to continue)")
    lanes = lane_rows(run)
    lines += initial_lines(run, lanes)
    lines += _score_lines(cfg, lanes, target)
    lines += outcome_share_lines(lanes)
    lines += cost_lines(run)
    lines += _policy_lines(run)
    calls = run.events("model_call")
    if calls:
        steps = len(run.events("program_step"))
        lines += [
            "",
            f"model calls recorded: {len(calls)} (one per prompt; each round's prompts of all program "
            f"lanes share one batched generate: {steps} rounds)",
        ]
    return "\n".join(lines)
