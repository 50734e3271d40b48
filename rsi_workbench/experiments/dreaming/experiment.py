"""``dreaming`` experiment: Dream-RSI's online-explore / replay / dream loop against fixed baselines.

For each seed and arm, one sub-run (``<out>/arms/<arm>-s<seed>/``) spends ``calls`` agent calls in
rounds of at most ``calls_per_round``; each round grows one real discovery tree (built-in SciPy
agent, W parallel workers). The ``dreaming`` arm then replays π0 and M−1 proposed revisions on all
its trees and deploys the argmax (ties to π0); ``dreaming_diverse`` also offers the fixed families
(``dreaming.candidates``, :mod:`rsi_workbench.domains.math.candidates`; replay fidelity:
:mod:`rsi_workbench.domains.math.fidelity`); fixed arms keep
their policy. Everything is an event,
so the run resumes from its records and the replay-to-real gap is visible per round.

Event kinds (payload fields; every sub-run row also carries ``arm`` and ``seed``):
``tree_started`` (tree, grid_width, grid_depth, root_payload, root_score, policy, params, beta1, beta2),
``tree_node`` (tree, id, parent, created_seq, round, depth, score, value, valid, fail_class, error,
payload, move, seconds, calls, best_so_far), ``tree_recorded`` (tree, artifact, nodes, depth, branches,
best_score, invalid, errors, calls, best_so_far, rounds, V_online, wall_s), ``replay_scored`` (tree,
candidate, V — null when undefined, beta1, beta2, params — null for a program, program — the
artifact of a written policy, origin, failure — kind/reason/tree/round or null, label — the
family's name, pi0 or mutation, deployed), ``replay_tree_scored`` (tree = the dreaming round, candidate, tree_index, tree_name,
quality, n, k, V — both null when that replay revealed no valid node, grid_width, grid_depth), ``policy_deployed`` (tree, chosen, V_chosen, V_pi0, params — with a
program deployed, its fallback, program, failed — candidates that failed, family — the
fixed family deployed by ``dreaming_diverse`` or null, label, beta1, beta2),
``policy_failed_online`` (tree, kind, reason, round: a deployed program failed in a real round), on an
OpenEvolve task (``task: {kind: openevolve, dir: PATH}``: each attempt mutates the parent's evolve
block and runs the evaluator in the sandbox) ``sandbox_isolation`` and ``openevolve_task`` (dir, files'
sha256, evaluator settings), ``arm_finished`` (arm, seed, calls, best, calls_to_target, rounds, wall_s; the experiment's copy adds
``child_runs``: the arm sub-run's fingerprint, see :mod:`rsi_workbench.records.children`).

The parts: :mod:`.config` (the validated config), the math domain's components
(:mod:`~rsi_workbench.domains.math.dream_arm`: one arm's sub-run — online exploration, recording,
dreaming; :mod:`~rsi_workbench.domains.math.online`: the online rollout;
:mod:`~rsi_workbench.domains.math.policy_writer`: the writer arm's model), :mod:`.results` (frames and
trees read back) and :mod:`.report` (the table); their public names are importable from here, the
module the CLI's ``experiment: dreaming`` dispatch points at.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from rsi_workbench.domains.math.dream_arm import ArmRun
from rsi_workbench.domains.openevolve import OpenEvolveTask
from rsi_workbench.execute import Executor, make_executor, resolve_executor
from rsi_workbench.experiments.dreaming.config import (
    ALL_ARMS,
    Arm,
    Config,
    TaskConfig,
    arm_policy,
    check_candidates,
    make_task,
    target_score,
)
from rsi_workbench.experiments.dreaming.report import report
from rsi_workbench.experiments.dreaming.results import (
    best_at,
    calls_to_reach,
    load_frames,
    load_trees,
    rescore_frame,
)
from rsi_workbench.records import Run, child_runs

CHILD_RUN_EVENTS = ("arm_finished",)  # the experiment's events that finish a child run (records.children)


def check_config(config: Config, source: str) -> None:
    """The checks ``rsi-workbench run`` makes before creating anything (the CLI's per-kind hook):
    the ``dreaming:`` candidate set and the ``fidelity:`` declaration (:func:`.config.check_candidates`)."""
    check_candidates(config, source)


def run_arm(cfg: Config, arm: str, seed: int, path: Path, executor: Executor) -> dict[str, Any]:
    """Run (or resume) one arm for one seed in its own sub-run; returns its ``arm_finished`` payload."""
    sub = Run.create(
        path, {"arm": arm, "seed": seed, **cfg.model_dump(mode="json")}, kind="dreaming_arm", exist_ok=True
    )
    with sub:
        done = sub.events("arm_finished")
        if done:
            return dict(done[-1].payload)
        return ArmRun(cfg, make_task(cfg.task), arm, seed, path, sub).run(executor)


def run_arm_task(cfg: Config, arm: str, seed: int, path: Path) -> dict[str, Any]:
    """One arm as a Ray task: under the sub-run's writer lock (a retry after a dead worker takes it
    over and resumes the sub-run), its attempts in-process."""
    from rsi_workbench.execute.writer_lock import WriterLock

    with WriterLock(path), make_executor("serial") as ex:
        return run_arm(cfg, arm, seed, path, ex)


def run_experiment(config: Config, out: Path, *, resume: bool = False) -> Path:
    """Every (seed, arm) pair in turn, each in a resumable sub-run; summary events in ``out``."""
    task = make_task(config.task)
    # an OpenEvolve evaluator runs only in the sandbox: a plan weaker than the mode is refused here
    grant = task.isolation_grant() if isinstance(task, OpenEvolveTask) else None
    run = Run.create(out, config, kind="dreaming", exist_ok=resume)
    with run:
        if isinstance(task, OpenEvolveTask) and grant is not None:
            grant.record_in(run)
            if not any(e.payload == task.record() for e in run.events("openevolve_task")):
                run.append("openevolve_task", task.record())
            run.commit()
        finished = {(e.payload["arm"], e.payload["seed"]) for e in run.events("arm_finished")}
        t0 = time.perf_counter()
        todo = [(arm, seed) for seed in config.seeds for arm in config.arms if (arm, seed) not in finished]
        paths = [Path(out) / "arms" / f"{arm}-s{seed}" for arm, seed in todo]
        with make_executor(config.executor, config.workers) as ex:
            if resolve_executor(config.executor, config.workers).kind == "ray":  # one Ray task per arm
                calls = [(config, a, s, p) for (a, s), p in zip(todo, paths)]
                fins: Any = ex.run_tasks(run_arm_task, calls)  # type: ignore[attr-defined]
            else:
                fins = (run_arm(config, a, s, p, ex) for (a, s), p in zip(todo, paths))
            for fin, p in zip(fins, paths, strict=True):  # appended by this driver only, in (seed, arm) order
                run.append("arm_finished", {**fin, **child_runs(out, p)})
                run.commit()
        run.append("experiment_session", {"wall_s": time.perf_counter() - t0})
        run.commit()
    return Path(out)


__all__ = [
    "CHILD_RUN_EVENTS",
    "ALL_ARMS",
    "Arm",
    "ArmRun",
    "Config",
    "TaskConfig",
    "arm_policy",
    "best_at",
    "calls_to_reach",
    "check_config",
    "load_frames",
    "load_trees",
    "make_task",
    "report",
    "rescore_frame",
    "run_arm",
    "run_experiment",
    "target_score",
]
