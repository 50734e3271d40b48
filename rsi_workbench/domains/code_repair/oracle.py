"""Oracle-budget repair reference: ``MutationCoder`` proposes ``k`` candidates per feedback round and
*every* candidate is executed on the public tests (``k`` times the protocol's one-execution budget);
the best by public pass count is selected and kept under the incumbent rule; stop when all public
tests pass; success = the kept program passes every hidden test. A resumable run directory.
"""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rsi_workbench.domains.code_repair.coder import MutationCoder, RepairFeedback, apply_incumbent_rule
from rsi_workbench.domains.code_repair.sandbox import Sandbox, pass_count
from rsi_workbench.domains.code_repair.tasks import RepairTask

KIND = "code_repair_oracle"
EVENT = "oracle_task"


def repair_with_oracle(
    task: RepairTask, sandbox: Sandbox, *, seed: int, rounds: int = 3, k: int = 4
) -> dict[str, Any]:
    """Run the oracle-budget loop on one task; returns the event payload (no side effects)."""
    rng = random.Random(f"{seed}:{task.task_id}")
    coder = MutationCoder(sandbox=sandbox)
    public, ep = task.public_tests, task.entry_point
    t0 = time.monotonic()
    inc = task.program
    inc_outs = sandbox.run_suite(inc, public, ep, trace=True)  # the initial (keep_initial) execution
    inc_pass = initial_pass = pass_count(inc_outs)
    executions, replaced, used = len(public), 0, 0
    history: list[dict[str, Any]] = []
    for rnd in range(rounds):
        if inc_pass == len(public):
            break
        used += 1
        cands = coder.propose(task, inc, RepairFeedback(inc, tuple(inc_outs)), k, rng)
        if not cands:
            break
        outs = sandbox.run_many([c.program for c in cands], public, ep, trace=True)
        executions += len(cands) * len(public)
        scores = [pass_count(o) for o in outs]
        best = max(range(len(cands)), key=lambda i: (scores[i], -i))
        keep = apply_incumbent_rule(inc_pass, scores[best])
        history.append(
            {
                "round": rnd,
                "scores": scores,
                "selected": best,
                "kept": keep,
                "operator": cands[best].meta["operator"],
            }
        )
        if keep:
            inc, inc_outs, inc_pass = cands[best].program, outs[best], scores[best]
            replaced += 1
    hidden = sandbox.run_suite(inc, task.hidden_tests, ep)
    hidden_pass = pass_count(hidden)
    return {
        "seed": seed,
        "task_id": task.task_id,
        "success": hidden_pass == len(hidden),
        "hidden_pass": hidden_pass,
        "n_hidden": len(hidden),
        "public_pass_initial": initial_pass,
        "public_pass_final": inc_pass,
        "n_public": len(public),
        "rounds_used": used,
        "replacements": replaced,
        "public_executions": executions,
        "hidden_statuses": [o.status.value for o in hidden],
        "changed": inc != task.program,
        "history": history,
        "seconds": round(time.monotonic() - t0, 3),
    }


def _one(args: tuple[RepairTask, Sandbox, int, int, int]) -> dict[str, Any]:
    task, sb, seed, rounds, k = args
    return repair_with_oracle(task, sb, seed=seed, rounds=rounds, k=k)


def run_oracle(
    out: str | Path,
    tasks: Sequence[RepairTask],
    *,
    seeds: Sequence[int] = (0, 1, 2),
    rounds: int = 3,
    k: int = 4,
    workers: int = 2,
    sandbox: Sandbox | None = None,
) -> Path:
    """Run (or resume) the reference over ``tasks`` x ``seeds``; one event per finished (seed, task),
    committed as it lands, so an interrupted run continues where it stopped."""
    from tqdm import tqdm

    from rsi_workbench.execute import make_executor
    from rsi_workbench.records import Run

    cfg = {
        "experiment": KIND,
        "seeds": list(seeds),
        "rounds": rounds,
        "k": k,
        "tasks": [t.task_id for t in tasks],
        "selection": "public_pass_count",
    }
    sb = sandbox or Sandbox()
    run = Run.create(out, cfg, kind=KIND, exist_ok=True)
    done = {(e.payload["seed"], e.payload["task_id"]) for e in run.events(EVENT)}
    todo = [(t, sb, s, rounds, k) for s in seeds for t in tasks if (s, t.task_id) not in done]
    with make_executor("process", workers) as ex, tqdm(total=len(todo), desc="oracle reference") as bar:
        for payload in ex.map(_one, todo):
            payload["isolation"] = sb.isolation.record()
            run.append(EVENT, payload, cycle=int(payload["seed"]))
            run.commit()
            bar.update(1)
    run.close()
    return Path(out)


def oracle_summary(path: str | Path) -> dict[str, Any]:
    """Per-seed solved counts over finished tasks, with mean and spread across complete seeds."""
    from rsi_workbench.records import Run

    run = Run.open(path)
    n_tasks = len(run.config["tasks"])
    per: dict[int, list[dict[str, Any]]] = {}
    for e in run.events(EVENT):
        per.setdefault(int(e.payload["seed"]), []).append(e.payload)
    seeds = {}
    for s in run.config["seeds"]:
        rows = per.get(int(s), [])
        seeds[int(s)] = {
            "finished": len(rows),
            "solved": sum(r["success"] for r in rows),
            "changed": sum(r["changed"] for r in rows),
            "public_all_pass": sum(r["public_pass_final"] == r["n_public"] for r in rows),
            "public_executions": sum(r["public_executions"] for r in rows),
            "complete": len(rows) == n_tasks,
        }
    full = [v["solved"] for v in seeds.values() if v["complete"]]
    return {
        "n_tasks": n_tasks,
        "seeds": seeds,
        "complete_seeds": len(full),
        "mean_solved": statistics.mean(full) if full else None,
        "std_solved": statistics.stdev(full) if len(full) > 1 else 0.0 if full else None,
        "min_solved": min(full) if full else None,
        "max_solved": max(full) if full else None,
    }


def oracle_report(path: str | Path) -> str:
    """A printable table of the reference (viewing never writes; a run of the oracle saves it)."""
    s = oracle_summary(path)
    n = s["n_tasks"]
    lines = [f"Oracle-budget reference (MutationCoder, all k candidates executed) over {n} tasks", ""]
    lines.append(
        f"{'seed':>4} {'finished':>9} {'solved':>7} {'rate':>7} {'public all-pass':>16} {'pub. execs':>11}"
    )
    for seed, v in s["seeds"].items():
        rate = f"{100 * v['solved'] / max(1, v['finished']):.1f}%"
        lines.append(
            f"{seed:>4} {v['finished']:>5}/{n:<3} {v['solved']:>7} {rate:>7} {v['public_all_pass']:>16} "
            f"{v['public_executions']:>11}"
        )
    if s["mean_solved"] is not None:
        lines.append(
            f"\nmean over {s['complete_seeds']} complete seed(s): {s['mean_solved']:.2f}/{n} "
            f"({100 * s['mean_solved'] / n:.1f}%), sd {s['std_solved']:.2f}, range {s['min_solved']}-{s['max_solved']}"
        )
    text = "\n".join(lines)
    return text


__all__ = ["oracle_report", "oracle_summary", "repair_with_oracle", "run_oracle"]
