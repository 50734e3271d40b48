"""The Compiler stage: each new version's plan becomes a task that really runs (blocked ones do not).

The compiled task keeps the hypothesis's scientific commitments (population, observable, comparison,
decision rule) next to its inputs. Executable tasks run through the executor seam and each charges
one unit of external feedback; a task blocked on unavailable data records its blocked outcome.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rsi_workbench import budget
from rsi_workbench.discovery.episode.context import EpisodeContext, record_session
from rsi_workbench.discovery.records import CompiledTask, ExecutionEvent, HypothesisVersion
from rsi_workbench.discovery.roles import Session
from rsi_workbench.execute import make_executor


def compile_and_execute(ctx: EpisodeContext, ep: int, new: list[HypothesisVersion]) -> None:
    """The Compiler turns each new version into a task; executable tasks really run (blocked ones do not)."""
    tasks = compile_tasks(ctx, ep, new)
    execute_tasks(ctx, ep, tasks)


def compile_tasks(ctx: EpisodeContext, ep: int, new: list[HypothesisVersion]) -> dict[str, dict[str, Any]]:
    """The Compiler's session: one recorded ``compile_task`` call per new version, then its summary."""
    tasks: dict[str, dict[str, Any]] = {}
    comp = Session(
        f"e{ep:03d}-compiler",
        "compiler",
        "compile: " + ", ".join(h.hypothesis_id for h in new),
        tools={"compile_task": lambda hypothesis_id: tasks[hypothesis_id]},
    )
    for h in new:
        task = ctx.domain.compile_task(h, f"t-{h.hypothesis_id}")
        c = h.content
        # the compiled task keeps the hypothesis's scientific commitments next to its inputs
        task["inputs"]["commitments"] = {
            "population": c.claim.population,
            "observable": c.claim.observable,
            "comparison": c.plan.comparison,
            "decision_rule": {
                "metric": c.criteria.metric,
                "threshold": c.criteria.threshold,
                "interval": c.criteria.interval,
            },
        }
        tasks[h.hypothesis_id] = task
        t = comp.call("compile_task", hypothesis_id=h.hypothesis_id)
        ctx.run.append(
            CompiledTask(
                hypothesis_id=h.hypothesis_id,
                episode=ep,
                **{k: t[k] for k in CompiledTask.model_fields if k in t},
            ),
            cycle=ep,
        )
    comp.reply("; ".join(f"{hid}: {_readiness(t)}" for hid, t in tasks.items()) or "nothing to compile")
    record_session(ctx, comp, ep, list(tasks))
    return tasks


def _readiness(t: dict[str, Any]) -> str:
    if t["executable"]:
        return "executable"
    return "blocked on " + str([d["name"] for d in t["dependencies"] if d["required"] and not d["available"]])


def execute_tasks(ctx: EpisodeContext, ep: int, tasks: dict[str, dict[str, Any]]) -> None:
    """Record blocked tasks' outcomes, then run the executable ones (outputs stored as artifacts)."""
    run, cfg = ctx.run, ctx.config
    work = run.path / "work"
    runnable = [(hid, t) for hid, t in tasks.items() if t["executable"]]
    for hid, t in tasks.items():
        if not t["executable"]:
            res = ctx.domain.run_blocked(t, work / t["task_id"])
            run.append(ExecutionEvent(task_id=t["task_id"], hypothesis_id=hid, episode=ep, **res), cycle=ep)
    with make_executor(cfg.executor, cfg.workers) as pool:
        futures = [
            (hid, t, pool.submit(ctx.domain.execute, t, str(work / t["task_id"]))) for hid, t in runnable
        ]
        for hid, t, fut in futures:
            res = fut.result()
            outputs = {
                name: run.artifacts.put(Path(p).read_bytes(), name=f"{t['task_id']}-{name}")
                for name, p in res.pop("outputs").items()
            }
            ctx.ledger.spend(budget.EXTERNAL_FEEDBACK, 1, reason=f"execute {t['task_id']}", cycle=ep)
            run.append(
                ExecutionEvent(task_id=t["task_id"], hypothesis_id=hid, episode=ep, outputs=outputs, **res),
                cycle=ep,
            )
