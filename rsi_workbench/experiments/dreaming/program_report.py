"""The ``program_agent`` experiment's table, from its records: the initial program's score and
"initial X → best Y (Δ)" per lane (flagged where no candidate beat it), best valid score after N
agent calls, calls to the target (99.9% of the best known by default), valid / invalid / failed
shares (failures by class; answers cut at ``max_tokens`` counted), prompt and completion tokens per
model call, the models' cost in USD where the model block has prices, and the replay arm's policy
choices."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from rsi_workbench.domains.math.program_lanes import initial_record
from rsi_workbench.domains.math.settings import TaskConfig, target_score
from rsi_workbench.records import Run

#: a model answer stopped by the token limit (the recorded ``finish_reason``)
CUT = "length"


def _fmt(x: float | None, spec: str = ".6f") -> str:
    return "—" if x is None else format(x, spec)


def _best_at(rows: list[dict[str, Any]], calls: int) -> float | None:
    """Best valid score within the first ``calls`` calls (None: none valid, or not that many made)."""
    if not rows or rows[-1]["calls"] < calls:
        return None
    vals = [r["best_so_far"] for r in rows if r["calls"] <= calls and r["best_so_far"] is not None]
    return max(vals) if vals else None


def lane_rows(run: Run) -> dict[tuple[str, int], list[dict[str, Any]]]:
    """``tree_node`` payloads per (arm, seed), in call order."""
    out: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for e in run.events("tree_node"):
        out.setdefault((e.payload["arm"], e.payload["seed"]), []).append(e.payload)
    return out


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


def cut_count(rows: list[dict[str, Any]]) -> int:
    """Model answers stopped by ``max_tokens`` (recorded ``finish_reason`` "length")."""
    return sum(r.get("finish_reason") == CUT for r in rows)


def _share_lines(lanes: dict[tuple[str, int], list[dict[str, Any]]]) -> list[str]:
    lines = [
        "",
        "outcome shares per arm (all seeds): valid / invalid / failed (by class) / no program; tokens per model call",
    ]
    lines.append(
        f"{'arm':<18}{'calls':>6}{'valid':>7}{'invalid':>8}{'failed':>7}  {'failure classes':<34}"
        f"{'prompt tok mean/max':>20}{'completion mean':>16}"
    )
    arms: dict[str, list[dict[str, Any]]] = {}
    for (arm, _), rows in lanes.items():
        arms.setdefault(arm, []).extend(rows)
    for arm, rows in sorted(arms.items()):
        n = len(rows)
        valid = sum(bool(r["valid"]) for r in rows) / n
        invalid = sum(r["fail_class"] == "invalid" for r in rows) / n
        failed = [r for r in rows if not r["valid"] and r["fail_class"] not in ("invalid", None)]
        classes = Counter(
            ("no_program" if r.get("move") == "no_program" else r["fail_class"]) for r in failed
        )
        pt = [int(r["prompt_tokens"]) for r in rows if r.get("prompt_tokens") is not None]
        ct = [int(r["completion_tokens"]) for r in rows if r.get("completion_tokens") is not None]
        ptxt = f"{sum(pt) / len(pt):.0f}/{max(pt)}" if pt else "—"
        ctxt = f"{sum(ct) / len(ct):.0f}" if ct else "—"
        cls = ", ".join(f"{k} {v}" for k, v in sorted(classes.items())) or "—"
        cut = cut_count(rows)
        lines.append(
            f"{arm:<18}{n:>6}{valid:>7.0%}{invalid:>8.0%}{len(failed) / n:>7.0%}  {cls:<34}{ptxt:>20}{ctxt:>16}"
            + (f"  cut at max_tokens: {cut}" if cut else "")
        )
    cuts = sum(cut_count(r) for r in arms.values())
    if cuts:
        lines.append(
            f"cut at max_tokens: {cuts} model answer(s) stopped at the token limit (finish_reason "
            "'length'); their programs are cut short — raise max_tokens"
        )
    return lines


def cost_lines(run: Run) -> list[str]:
    """The model calls' cost in USD (``cost_usd`` of each live call, where the model block has a
    price) and the ``usd`` budget (opened, spent, left; the lanes it stopped)."""
    costs = [float(e.payload["cost_usd"]) for e in run.events("model_call") if "cost_usd" in e.payload]
    opened = [e.payload["budgets"] for e in run.events("budget_opened") if "usd" in e.payload["budgets"]]
    if not costs and not opened:
        return []
    line = f"model cost: ${sum(costs):.4f} over {len(costs)} live call(s)"
    if opened:
        budget = float(opened[0]["usd"])
        spent = sum(
            float(e.payload["amount"]) for e in run.events("budget_spent") if e.payload["budget"] == "usd"
        )
        line += f"; usd budget ${budget:.4f}: spent ${spent:.4f}, left ${budget - spent:.4f}"
        stopped = run.events("budget_exhausted")
        if stopped:
            line += f"; spent out — {len(stopped)} lane(s) stopped early"
    return ["", line]


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
    lines += _share_lines(lanes)
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
