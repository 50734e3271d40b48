"""The E0 transition dataset of the code-repair world model (RSI-Anything code-repair W1).

Transitions come from ``MutationCoder`` candidates executed in the sandbox on every public and
hidden test (evidence level E0, with provenance), recorded in a resumable run directory: per state
a ``world_state`` event, a ``world_transition`` per candidate and ``world_group_done``. States are
the HumanEvalFix bugs plus bugs injected into the reference solutions (training states only).
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rsi_workbench.config import StrictModel
from rsi_workbench.domains.code_repair.coder import MutationCoder, RepairFeedback, inject_bugs
from rsi_workbench.domains.code_repair.llm_coder import INVALID
from rsi_workbench.domains.code_repair.sandbox import Sandbox
from rsi_workbench.domains.code_repair.tasks import RepairTask
from rsi_workbench.domains.code_repair.world_encoding import PROVENANCE_FLAGS, outcome_dict
from rsi_workbench.records import Run


def problem_of(task_id: str) -> str:
    """``Python/12`` / ``HumanEval/12`` -> ``12``: HumanEvalFix and HumanEval share problems."""
    return task_id.rsplit("/", 1)[-1]


# ------------------------------------------------------------------------- transition dataset
class TransitionConfig(StrictModel):
    """How the E0 transition dataset is built (frozen into the run's config)."""

    k: int = 4  # candidates per state (the paper's comparison units have 4)
    injected_per_problem: int = 1  # extra training states: bugs injected into the reference solution
    seed: int = 0
    workers: int = 2
    coder: str = "mutation-sbfl"


def _states(tasks: Sequence[RepairTask], cfg: TransitionConfig) -> list[tuple[str, str, RepairTask]]:
    """(group_id, source, task-with-state-program) for every HumanEvalFix bug and injected bug."""
    out: list[tuple[str, str, RepairTask]] = []
    for task in tasks:
        out.append((f"{task.task_id}#humanevalfix", "humanevalfix", task))
        if cfg.injected_per_problem and task.reference:
            rng = random.Random(f"{cfg.seed}:{task.task_id}:inject")
            for i, bug in enumerate(
                inject_bugs(task.reference, task.entry_point, cfg.injected_per_problem, rng)
            ):
                out.append(
                    (
                        f"{task.task_id}#injected{i}",
                        "injected",
                        task.model_copy(update={"program": bug.program}),
                    )
                )
    return out


def _build_state(
    run: Run,
    sb: Sandbox,
    ex: Any,
    coder: Any,
    cfg: TransitionConfig,
    iso: Any,
    group_id: str,
    source: str,
    task: RepairTask,
) -> None:
    """One state's events: ``world_state``, a ``world_transition`` per valid candidate (executed on
    every public and hidden test), a ``world_invalid_candidate`` per invalid model sample (recorded
    with its reason, never executed: eq. 7 removes it before anything else) and ``world_group_done``."""
    public = sb.run_suite(task.program, task.public_tests, task.entry_point, ex, trace=True)
    feedback = RepairFeedback(task.program, tuple(public))
    rng = random.Random(f"{cfg.seed}:{group_id}:propose")
    proposed = coder.propose(task, task.program, feedback, cfg.k, rng)
    cands = [c for c in proposed if not c.meta.get(INVALID)]
    invalid = [c for c in proposed if c.meta.get(INVALID)]
    progs = [c.program for c in cands]
    tests = list(task.public_tests) + list(task.hidden_tests)
    results = sb.run_many(progs, tests, task.entry_point, executor=ex) if progs else []
    n_pub = len(task.public_tests)
    run.append(
        "world_state",
        {
            "group_id": group_id,
            "task_id": task.task_id,
            "problem": problem_of(task.task_id),
            "source": source,
            "program": task.program,
            "public": [outcome_dict(o) for o in public],
        },
    )
    for i, (c, outs) in enumerate(zip(cands, results)):
        run.append(
            "world_transition",
            {
                "group_id": group_id,
                "candidate": i,
                "program": c.program,
                "meta": {k: v for k, v in c.meta.items() if isinstance(v, str | int | float | list)},
                "public": [outcome_dict(o) for o in outs[:n_pub]],
                "hidden": [outcome_dict(o) for o in outs[n_pub:]],
                "evidence": "E0",
                "provenance": {"coder": coder.name, "seed": cfg.seed, "sandbox": iso},
            },
        )
    for c in invalid:
        run.append(
            "world_invalid_candidate",
            {"group_id": group_id, "reason": str(c.meta[INVALID]), "raw": str(c.meta.get("raw", ""))},
        )
    run.append("world_group_done", {"group_id": group_id, "candidates": len(cands), "invalid": len(invalid)})


def build_transitions(
    run_dir: str | Path,
    tasks: Sequence[RepairTask],
    config: TransitionConfig | None = None,
    *,
    sandbox: Sandbox | None = None,
    progress: bool = True,
    executor: Any = None,
    coder: Any = None,
) -> Path:
    """Execute ``k`` candidates per state (``coder``, e.g. an ``LLMCoder``; default MutationCoder) on
    all public + hidden tests; resumable. Executions go through ``executor`` or a pool of ``workers``.

    Events per state (one group commit each): ``world_state`` (program, public outcomes),
    ``world_transition`` per candidate (E0 outcomes on public and hidden tests, provenance) and
    ``world_group_done``. Re-running skips finished groups.
    """
    from rsi_workbench.execute import make_executor

    cfg = config or TransitionConfig()
    run = Run.create(run_dir, cfg, kind="world_transitions", exist_ok=True)
    done = {e.payload["group_id"] for e in run.events("world_group_done")}
    sb = sandbox or Sandbox()
    coder = coder if coder is not None else MutationCoder(sandbox=sb)
    states = [s for s in _states(tasks, cfg) if s[0] not in done]
    it: Any = states
    if progress:
        from tqdm.auto import tqdm

        it = tqdm(states, desc="transitions", unit="state")
    iso = sb.isolation.record()
    with contextlib.ExitStack() as stack:
        ex = (
            executor
            if executor is not None
            else stack.enter_context(make_executor("process" if cfg.workers > 1 else "serial", cfg.workers))
        )
        for group_id, source, task in it:
            _build_state(run, sb, ex, coder, cfg, iso, group_id, source, task)
            run.commit()
    run.update_manifest(
        states=len(run.events("world_group_done")),
        evidence="E0",
        hidden_tests_in_context=False,  # encode_state/test_context only ever render public tests
        **PROVENANCE_FLAGS,
    )
    return Path(run_dir)


@dataclass
class Transition:
    """One executed candidate of one state, as read back from the dataset run."""

    group_id: str
    task_id: str
    problem: str
    source: str
    state_program: str
    state_public: list[dict[str, Any]]
    program: str
    public: list[dict[str, Any]]
    hidden: list[dict[str, Any]]


def load_transitions(run_dir: str | Path) -> list[Transition]:
    """Transitions of finished groups only (a group torn by a crash is ignored and rebuilt on resume)."""
    run = Run.open(run_dir)
    done = {e.payload["group_id"] for e in run.events("world_group_done")}
    states = {
        e.payload["group_id"]: e.payload for e in run.events("world_state") if e.payload["group_id"] in done
    }
    out = []
    for e in run.events("world_transition"):
        p = e.payload
        s = states.get(p["group_id"])
        if s is None:
            continue
        out.append(
            Transition(
                p["group_id"],
                s["task_id"],
                s["problem"],
                s["source"],
                s["program"],
                s["public"],
                p["program"],
                p["public"],
                p["hidden"],
            )
        )
    return out
