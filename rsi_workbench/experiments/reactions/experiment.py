"""``reactions`` experiment: predictor-guided condition selection vs Bayesian optimisation at matched budget.

RSI-Anything's reaction optimisation ("反应优化") as an offline sequential replay over measured
grids: every run starts from the same ``n_initial`` random conditions (per seed), then spends the
rest of an ``n_total`` experiment budget one condition at a time. Methods, all on one encoding:

- ``predictor_utility``: the protocol engine (:class:`~rsi_workbench.protocol.loop.Loop`) with the
  deep-ensemble yield predictor and eq. 7 utility ranking R = w·E[y] − λ·U (U = predictive std);
- ``predictor_information``: the same loop with the information-acquisition rule (most uncertain
  first) — reported separately, as the paper asks;
- ``gp_ei``: BoTorch GP + expected improvement; ``random``: uniform (both batched over a cohort of
  seeds, outside the loop: they are the baselines, with the same initial conditions and budget).

The predictor methods are driven by the loop (:mod:`rsi_workbench.domains.reactions.binding`):
every cycle is one experiment, then reliability (eq. 10, MAE and mean |z| of the current
version's predictions), the adaptation trigger (eq. 11), the predictor gate (eq. 14, Gaussian NLL
and ranking accuracy on a held-out share of the campaign's own rounds), the pair gate (eq. 17) and
retention (eq. 18). Each run is its own protocol run directory under ``runs/<grid>/<method>-seed<s>``
(resumable mid-run); the experiment log gets one ``run_finished`` per run. A finished protocol run,
and the experiment directory when the experiment ends, are stored compacted
(:mod:`rsi_workbench.records.compact`; resume and ``--extend`` read and grow them as before).
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rsi_workbench.budget import EXTERNAL_FEEDBACK, UPDATE_COMPUTE
from rsi_workbench.domains.reactions.baselines import Events, run_baselines
from rsi_workbench.domains.reactions.binding import (
    AllUnrunPolicy,
    EmbeddingPredictor,
    EnsemblePredictor,
    GPPredictor,
    PriorGPPredictor,
    ReactionEnvironment,
    make_predictor,
    protocol_outcome,
)
from rsi_workbench.domains.reactions.corruption import Corruption, oracle_gate_parts
from rsi_workbench.domains.reactions.grid import ConditionGrid, load_grid
from rsi_workbench.domains.reactions.replay import initial_conditions
from rsi_workbench.domains.reactions.transfer import pretrained_prior, prior_mean
from rsi_workbench.execute import make_executor
from rsi_workbench.experiments.reactions.acquisition import ExpectedImprovement
from rsi_workbench.experiments.reactions.config import (
    PREDICTOR_METHODS,
    Config,
    Method,
    MethodSpec,
    arm_of,
    grid_spec,
)
from rsi_workbench.experiments.reactions.report import (
    curves,
    markdown,
    paired_gain,
    report,
    runs_frame,
    summary,
)
from rsi_workbench.protocol.loop import Loop, ProtocolSettings, effective_events
from rsi_workbench.protocol.spec import TaskSpec
from rsi_workbench.records import Run, child_runs
from rsi_workbench.records.compact import Twins, compact_run

CHILD_RUN_EVENTS = ("run_finished",)  # the events that finish a child run (records.children)

__all__ = [
    "CHILD_RUN_EVENTS",
    "Config",
    "Method",
    "PREDICTOR_METHODS",
    "curves",
    "grid_spec",
    "initial_conditions",
    "markdown",
    "paired_gain",
    "protocol_settings",
    "report",
    "run_cohort",
    "run_experiment",
    "run_protocol",
    "runs_frame",
    "summary",
]


#: ``decision: expected_improvement``: the selection rule, by import path (recorded in the settings)
#: (the path stored records name; it imports the rule from rsi_workbench.domains.reactions.acquisition)
EI_RULE = "rsi_workbench.experiments.reactions.acquisition:ExpectedImprovement"
#: ``updates: every_observation``: every observation but the latest trains each cycle's refit
#: (prequential, one-cycle gate window), the current version is always unreliable (it re-scores its
#: own update data against an MAE bar of 1e-9) and both gates pass whatever they see
UNGATED: dict[str, Any] = {
    "gate_data": "prequential",
    "gate_window": 1,
    "rescore_history": True,
    "regression_reliability": {"min_predictions": 1, "min_groups": 1, "max_mae": 1e-9, "max_mean_abs_z": 2.0},
    "gates": {
        "predictor": {"score": "gaussian_nll", "min_brier_gain": -1e9, "max_ranking_drop": 1e9},
        "pair": {"score": "gaussian_nll", "max_utility_drop": 1e9, "max_brier_increase": 1e9},
    },
}


def protocol_settings(config: Config, method: str | MethodSpec, n_pool: int) -> ProtocolSettings:
    """The loop's declared settings for a predictor method or arm (everything the decisions read): an
    arm's ``lambda`` and ``adaptation`` override the experiment-wide ``uncertainty_penalty`` and the
    always-on adaptation path; ``decision: expected_improvement`` sets the EI rule (λ = 0) and
    ``updates: every_observation`` the ungated refit settings (:data:`UNGATED`)."""
    arm = arm_of(method)
    lam = config.uncertainty_penalty if arm.lambda_ is None else arm.lambda_
    rule = "utility_argmax" if arm.kind.startswith("predictor_utility") else "info_gain"
    if arm.decision == "expected_improvement":  # EI on (mean, σ̂): eq. 7's term at λ = 0 is the mean
        rule, lam = EI_RULE, 0.0
    gating: dict[str, Any] = {
        "regression_reliability": config.reliability.model_dump(),
        "gates": config.gates.model_dump(),
        "gate_data": config.gate_data,
        "gate_fraction": config.gate_fraction,
        **({"gate_window": config.gate_window} if config.gate_window is not None else {}),
    }
    if arm.updates == "every_observation":  # refit every cycle on all but the latest observation
        gating = {**gating, **UNGATED}
    return ProtocolSettings.model_validate(
        {
            "k": n_pool,
            "max_rounds": config.n_total,
            "batch_size": 1,
            "rule": rule,
            "utility": {"weights": {"yield": 1.0}, "uncertainty_penalty": lam},
            "readout": "gaussian",
            "adaptation": {"enabled": arm.adaptation, "min_examples": config.min_adapt_examples},
            **gating,
            "initial_design": config.n_initial,
            "record_candidates": config.record_candidates,
            "audit": False,
            "metrics_version": config.metrics_version,
        }
    )


def run_protocol(
    grid: ConditionGrid,
    method: str | MethodSpec,
    seed: int,
    config: Config,
    path: Path,
    cache_dir: Path | None = None,
) -> dict[str, Any]:
    """One predictor-method (or arm) run through the protocol loop in ``path`` (resumed if it exists);
    an arm with a ``prior`` starts from the pretrained φ0 (cached in ``cache_dir``), its provenance in
    the summary's ``prior``."""
    arm = arm_of(method)
    kind = arm.kind
    task = grid.spec.name
    bad = None if config.corruption is None else Corruption(config.corruption, task, seed, config.n_total)
    env = ReactionEnvironment(grid, bad)
    settings = protocol_settings(config, arm, env.n)
    prior: dict[str, Any] | None = None
    predictor: EnsemblePredictor | GPPredictor | EmbeddingPredictor | PriorGPPredictor
    load: Any
    if arm.prior is not None:
        init = initial_conditions(grid.n, config.n_initial, seed, task)
        phi0, prior = pretrained_prior(grid, arm.prior, seed, config.predictor, cache_dir, init)
        if kind.endswith("_gp"):  # the prior-mean GP: φ0's predictive mean is the GP's mean function
            predictor = PriorGPPredictor(env.features, prior_mean(phi0), seed, config.prior_gp)
            load = lambda b: PriorGPPredictor.from_bytes(b, env.features)  # noqa: E731
        else:
            predictor = phi0
            load = lambda b: EnsemblePredictor.from_bytes(b, env.features)  # noqa: E731
    else:
        predictor, load = make_predictor(env, grid, kind, seed, config.predictor, config.bo, config.embed)
    spec = TaskSpec(
        name=f"reactions/{task}",
        tasks=[task],
        environment=env,
        policy=AllUnrunPolicy(env.n),
        predictor=predictor,
        load_policy=AllUnrunPolicy.from_bytes,
        load_predictor=load,
        budgets={EXTERNAL_FEEDBACK: float(config.n_total), UPDATE_COMPUTE: float(config.update_budget)},
    )
    run_cfg: dict[str, Any] = {
        "grid": task,
        "method": arm.name,
        "seed": seed,
        "protocol": settings.model_dump(mode="json"),
    }
    if arm.name != kind:
        run_cfg["arm_kind"] = kind
    if arm.updates != "gated" or arm.decision != "eq7":  # the arm's factorial settings, recorded
        run_cfg.update(updates=arm.updates, decision=arm.decision)
    if arm.gates != "observed":
        run_cfg["gates"] = arm.gates
    if bad is not None:
        run_cfg["corruption"] = bad.describe()
    if prior is not None:  # the prior's provenance, without what differs between a fit and a cache hit
        run_cfg["prior"] = {k: v for k, v in prior.items() if k != "cached"}
    with Run.create(path, run_cfg, kind="protocol", exist_ok=True) as run:
        parts = oracle_gate_parts(env.uncorrupted) if arm.gates == "oracle" else None
        loop = Loop.open(spec, run, settings, seed=seed, parts=parts)
        if isinstance(loop.rule, ExpectedImprovement):  # EI's incumbent: this run's best observed yield
            loop.rule.incumbent = lambda: max(loop.states[task].yields)
        loop.run()
        outcome = protocol_outcome(effective_events(run))  # a cut-off cycle attempt does not count
        ledger = loop.ledger.report()
    # finished: stored compactly; checkpoints identical to one in runs/<any grid>/<any run> are hard links
    compact_run(path, Twins.near(path, depth=2))
    return {
        "grid": task,
        "method": arm.name,
        "arm_kind": kind,
        "seed": seed,
        "pool_size": env.n,
        "pool_max": env.pool_max,
        **outcome,
        "adaptation": arm.adaptation,
        "final_predictor": loop.predictor.version if loop.predictor else None,
        "run_dir": str(path),
        "budgets": ledger,
        **({"prior": prior} if prior is not None else {}),
        **({"corruption": bad.describe()} if bad is not None else {}),
    }


def run_cohort(
    grid: ConditionGrid,
    method: str | MethodSpec,
    seeds: Sequence[int],
    config: Config,
    cache_dir: Path | None = None,
) -> tuple[Events, list[dict[str, Any]]]:
    """Run ``seeds`` of a baseline (``gp_ei`` or ``random``, or an arm of one) on one grid in lockstep;
    returns (events to append, per-run summaries). Predictor methods go through :func:`run_protocol`.
    A ``gp_ei`` arm with a ``prior`` uses the pretrained prior's mean as each run's GP mean function."""
    arm = arm_of(method)
    if arm.kind in PREDICTOR_METHODS:
        raise ValueError(f"{arm.name} runs through the protocol loop (run_protocol), not a baseline cohort")
    events: Events = []
    gname = grid.spec.name
    priors: list[dict[str, Any]] = []
    means = []
    if arm.prior is not None:
        for s in seeds:
            init = initial_conditions(grid.n, config.n_initial, s, gname)
            pred, prov = pretrained_prior(grid, arm.prior, s, config.predictor, cache_dir, init)
            means.append(prior_mean(pred))
            priors.append(prov)
            events.append(("prior_pretrained", {"grid": gname, "method": arm.name, **prov}, None))
    ran, summaries = run_baselines(
        grid,
        arm.kind,
        arm.name,
        seeds,
        n_initial=config.n_initial,
        n_total=config.n_total,
        bo=config.bo,
        means=means,
        corruption=config.corruption,
    )
    extra = [
        {
            **({"arm_kind": arm.kind} if arm.name != arm.kind else {}),
            **({"prior": priors[j]} if priors else {}),
        }
        for j in range(len(seeds))
    ]
    return events + ran, [{**summ, **x} for summ, x in zip(summaries, extra)]


def _timed_cohort(
    grid: ConditionGrid,
    method: str | MethodSpec,
    seeds: Sequence[int],
    config: Config,
    cache_dir: Path | None = None,
) -> tuple[Events, list[dict[str, Any]], float]:
    """:func:`run_cohort` on an executor's worker: its results and its own wall time (no events written)."""
    import torch

    torch.set_num_threads(config.threads)
    t0 = time.perf_counter()
    events, summaries = run_cohort(grid, method, seeds, config, cache_dir)
    return events, summaries, time.perf_counter() - t0


# ---------------------------------------------------------------------------------------------
# the experiment
# ---------------------------------------------------------------------------------------------
def run_experiment(config: Config, out: Path, *, resume: bool = False) -> Path:
    """Run every (grid, method, cohort of seeds) not yet finished in ``out``; returns ``out``."""
    import torch
    from tqdm.auto import tqdm

    torch.set_num_threads(config.threads)
    out = Path(out)
    priors = out / "priors"  # pretrained transfer priors, one file per (target, source set, seed)
    run = Run.create(out, config, kind="reactions", exist_ok=resume)
    with run, contextlib.ExitStack() as stack:
        done = {
            (e.payload["grid"], e.payload["method"], e.payload["seed"]) for e in run.events("run_finished")
        }
        seeds = [config.first_seed + i for i in range(config.runs)]
        cohorts = [seeds[i : i + config.cohort_size] for i in range(0, len(seeds), config.cohort_size)]
        if not run.events("experiment_started"):
            run.append(
                "experiment_started", {"grids": [grid_spec(g).name for g in config.grids], "pid": os.getpid()}
            )
            run.commit()
        todo = []  # cohort-major: at any moment every (grid, method) cell has the same number of runs
        for c in cohorts:
            for g in config.grids:
                spec = grid_spec(g)
                for m in map(arm_of, config.methods):
                    if not all((spec.name, m.name, s) in done for s in c):
                        todo.append((spec, m, c))
        grids: dict[str, ConditionGrid] = {}
        # with an executor block, baseline cohorts (pure: they return their events) run ahead on the
        # pool while the driver runs the protocol runs; everything is appended in ``todo`` order
        fan_out = config.executor is not None and any(m.kind not in PREDICTOR_METHODS for _, m, _ in todo)
        pool = stack.enter_context(make_executor(config.executor)) if fan_out and config.executor else None
        ahead: dict[int, Any] = {}
        loaded: dict[str, ConditionGrid] = {}
        for i, (spec, m, c) in enumerate(todo):
            if pool is not None and m.kind not in PREDICTOR_METHODS:
                if spec.name not in loaded:
                    loaded[spec.name] = load_grid(spec)
                ahead[i] = pool.submit(_timed_cohort, loaded[spec.name], m, c, config, priors)
        for i, (spec, m, c) in enumerate(tqdm(todo, desc="reactions cohorts", unit="cohort")):
            if spec.name not in grids:
                grids[spec.name] = cg = loaded.get(spec.name) or load_grid(spec)
                run.append(
                    "grid_loaded",
                    {
                        "grid": spec.name,
                        "source": cg.source,
                        "pool_size": cg.n,
                        "pool_max": cg.pool_max,
                        "spec": spec.model_dump(mode="json"),
                    },
                )
            t0 = time.perf_counter()
            if m.kind in PREDICTOR_METHODS:  # one protocol run per seed, each committed as it finishes
                for s in tqdm(c, desc=f"{spec.name} {m.name}", unit="run", leave=False):
                    if (spec.name, m.name, s) in done:
                        continue
                    summ = run_protocol(
                        grids[spec.name], m, s, config, out / "runs" / spec.name / f"{m.name}-seed{s}", priors
                    )
                    if "prior" in summ:
                        run.append("prior_pretrained", {"grid": spec.name, "method": m.name, **summ["prior"]})
                    child = Path(summ["run_dir"])
                    run.append(
                        "run_finished",
                        {**summ, "run_dir": str(child.relative_to(out)), **child_runs(out, child)},
                    )
                    run.commit()
                wall = time.perf_counter() - t0
            else:  # a cohort that ran ahead on the pool reports its worker's own wall time
                fut = ahead.pop(i, None)
                events, summaries, wall = (
                    fut.result() if fut is not None else _timed_cohort(grids[spec.name], m, c, config, priors)
                )
                for kind, payload, cycle in events:
                    run.append(kind, payload, cycle=cycle)
                for summ in summaries:  # its events are the experiment's own: no child run
                    run.append("run_finished", {**summ, **child_runs(out)})
            run.append(
                "cohort_finished", {"grid": spec.name, "method": m.name, "seeds": list(c), "wall_s": wall}
            )
            run.commit()
        if todo:
            run.append("experiment_finished", {"cohorts_run": len(todo)})
            run.commit()
        run.artifacts.put_json(curves(out).to_dict(orient="list"), name="curves.json")
    return compact_run(out).path  # its own log and artifacts (a resume expands the log again)


# ---------------------------------------------------------------------------------------------
# results
# ---------------------------------------------------------------------------------------------
