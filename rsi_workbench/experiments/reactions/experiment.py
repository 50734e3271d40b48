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

The predictor methods are driven by the loop (:mod:`rsi_workbench.experiments.reactions.binding`):
every cycle is one experiment, then reliability (eq. 10, MAE and mean |z| of the current
version's predictions), the adaptation trigger (eq. 11), the predictor gate (eq. 14, Gaussian NLL
and ranking accuracy on a held-out share of the campaign's own rounds), the pair gate (eq. 17) and
retention (eq. 18). Each run is its own protocol run directory under ``runs/<grid>/<method>-seed<s>``
(resumable mid-run); the experiment log gets one ``run_finished`` per run.
"""

from __future__ import annotations

import contextlib
import math
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
from pydantic import Field, SerializerFunctionWrapHandler, field_validator, model_serializer, model_validator

from rsi_workbench.budget import EXTERNAL_FEEDBACK, UPDATE_COMPUTE, BudgetLedger
from rsi_workbench.config import StrictModel
from rsi_workbench.domains.reactions.baselines import BOConfig, GPExpectedImprovement, RandomSelection
from rsi_workbench.domains.reactions.grid import BUILTIN_GRIDS, ConditionGrid, GridSpec, load_grid
from rsi_workbench.domains.reactions.replay import ReplayEnvironment
from rsi_workbench.execute import ExecutorConfig, make_executor, omit_unset_executor
from rsi_workbench.experiments.reactions.binding import (
    AllUnrunPolicy,
    EnsemblePredictor,
    GPPredictor,
    ReactionEnvironment,
)
from rsi_workbench.experiments.walltime import wall_lines
from rsi_workbench.metrics import METRICS_VERSION
from rsi_workbench.metrics.bootstrap import interval
from rsi_workbench.protocol.decisions import (
    PairGateCriteria,
    PredictorGateCriteria,
    RegressionReliabilityCriteria,
    ScoredCandidate,
    initial_design_select,
)
from rsi_workbench.protocol.loop import GateSettings, Loop, ProtocolSettings, effective_events
from rsi_workbench.protocol.spec import TaskSpec
from rsi_workbench.records import Run, load_events
from rsi_workbench.world.ensemble import EnsembleConfig

Method = Literal[
    "predictor_utility",
    "predictor_information",
    "predictor_utility_gp",
    "predictor_information_gp",
    "gp_ei",
    "random",
]
#: the methods run through the protocol loop; ``_gp``: with the GP predictor (:class:`GPPredictor`,
#: the GP-EI baseline's model family and ``bo`` fit settings) instead of the deep ensemble
PREDICTOR_METHODS = (
    "predictor_utility",
    "predictor_information",
    "predictor_utility_gp",
    "predictor_information_gp",
)


def _default_grids() -> list[str | GridSpec]:
    return list(BUILTIN_GRIDS)


def _default_methods() -> list[Method]:
    return ["predictor_utility", "predictor_information", "gp_ei", "random"]


def _gaussian_gates() -> GateSettings:
    return GateSettings(
        predictor=PredictorGateCriteria(score="gaussian_nll"), pair=PairGateCriteria(score="gaussian_nll")
    )


class Config(StrictModel):
    """The ``reactions`` experiment: grids × methods × seeded runs at a matched experiment budget."""

    experiment: Literal["reactions"] = "reactions"
    grids: list[str | GridSpec] = Field(
        default_factory=lambda: _default_grids(),
        description="built-in grid names or full grid specs (path, factors, yield column)",
    )
    methods: list[Method] = Field(default_factory=lambda: _default_methods())
    runs: int = Field(default=100, ge=1, description="seeded runs per method per grid")
    first_seed: int = Field(default=4001, description="runs use seeds first_seed .. first_seed+runs−1")
    cohort_size: int = Field(default=25, ge=1, description="runs advanced together and committed as a chunk")
    n_initial: int = Field(default=8, ge=1, description="random initial observations (same for every method)")
    n_total: int = Field(default=40, ge=2, description="experiment budget per run, initial ones included")
    report_at: list[int] = Field(default_factory=lambda: [10, 20, 40])
    uncertainty_penalty: float = Field(default=0.5, ge=0.0, description="λ of eq. 7 (Δ = λ·σ̂)")
    update_budget: float = Field(
        default=40.0, ge=0.0, description="update-compute units per run (1 per fit, 0.01 per gate prediction)"
    )
    reliability: RegressionReliabilityCriteria = Field(default_factory=RegressionReliabilityCriteria)
    min_adapt_examples: int = Field(
        default=3, ge=1, description="D_adapt is sufficient with this many observations"
    )
    gate_fraction: float = Field(
        default=0.25, ge=0.0, lt=1.0, description="share of each run's rounds held out as gate data"
    )
    gates: GateSettings = Field(default_factory=_gaussian_gates, description="gate thresholds (eq. 14, 17)")
    record_candidates: int = Field(
        default=5, ge=1, description="best-ranked candidates kept per proposal event"
    )
    predictor: EnsembleConfig = Field(default_factory=EnsembleConfig)
    bo: BOConfig = Field(default_factory=BOConfig)
    bootstrap: int = Field(default=2000, ge=100, description="bootstrap resamples for the intervals")
    metrics_version: Literal[1, 2] = Field(
        default=METRICS_VERSION, description="metrics rules the protocol runs use (rsi_workbench.metrics)"
    )
    threads: int = Field(default=1, ge=1, description="torch threads (the machine is shared)")
    gate_data: Literal["held_out_observations", "prequential"] = Field(
        default="held_out_observations",
        exclude_if=lambda v: v == "held_out_observations",  # configs without it dump as before
        description=(
            "the predictor methods' gate data: a held-out share (gate_fraction) of each run's rounds, "
            "or prequential (rsi_workbench.protocol.prequential: every measurement first judges, then trains)"
        ),
    )
    gate_window: int | None = Field(
        default=None,
        ge=1,
        exclude_if=lambda v: v is None,
        description="prequential: gate window in cycles (unset: max(1, ⌊gate_fraction·k + ½⌋) at cycle k)",
    )
    executor: ExecutorConfig | None = Field(
        default=None, description="where baseline cohorts (gp_ei, random) run; null: in the driver, in turn"
    )

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> Any:
        return omit_unset_executor(handler(self))  # configs without the block dump as they always did

    @model_validator(mode="before")
    @classmethod
    def _gaussian_scores(cls, data: Any) -> Any:
        """Gates compare Gaussian NLL unless a config sets a gate's score explicitly."""
        if isinstance(data, dict) and isinstance(data.get("gates"), dict):
            gates = dict(data["gates"])
            for g in ("predictor", "pair"):
                if isinstance(gates.get(g, {}), dict):
                    gates[g] = {"score": "gaussian_nll", **gates.get(g, {})}
            data = {**data, "gates": gates}
        return data

    @model_validator(mode="after")
    def _check(self) -> Config:
        if self.n_initial >= self.n_total:
            raise ValueError(f"n_initial ({self.n_initial}) must be < n_total ({self.n_total})")
        bad = [n for n in self.report_at if not 1 <= n <= self.n_total]
        if bad:
            raise ValueError(f"report_at {bad} outside 1..n_total ({self.n_total})")
        if any(m.endswith("_gp") for m in self.methods) and self.min_adapt_examples < 2:
            raise ValueError(
                "the GP predictor methods need min_adapt_examples >= 2 (a GP fit needs 2 points)"
            )
        return self

    @field_validator("grids")
    @classmethod
    def _known_grids(cls, grids: list[str | GridSpec]) -> list[str | GridSpec]:
        for g in grids:
            if isinstance(g, str) and g not in BUILTIN_GRIDS:
                raise ValueError(f"unknown built-in grid {g!r}; allowed: {sorted(BUILTIN_GRIDS)} or a spec")
        names = [grid_spec(g).name for g in grids]
        if len(set(names)) != len(names):
            raise ValueError(f"grid names must be unique, got {names}")
        return grids


def grid_spec(g: str | GridSpec) -> GridSpec:
    return BUILTIN_GRIDS[g] if isinstance(g, str) else g


# ---------------------------------------------------------------------------------------------
# the initial design shared by every method, and one protocol run
# ---------------------------------------------------------------------------------------------
def initial_conditions(n_pool: int, n_initial: int, seed: int, task_id: str) -> list[int]:
    """The seeded initial conditions, identical for every method of a seed: exactly what the loop's
    ``initial_design`` cycles pick (:func:`initial_design_select` over the unrun pool in order)."""
    run: list[int] = []
    for k in range(1, n_initial + 1):
        unrun = [i for i in range(n_pool) if i not in set(run)]
        dec = initial_design_select(
            [ScoredCandidate(p, True) for p in range(len(unrun))],
            seed=seed,
            cycle=k,
            task_id=task_id,
            budget_remaining=float("inf"),
        )
        run.append(unrun[dec.selected[0]])
    return run


def protocol_settings(config: Config, method: str, n_pool: int) -> ProtocolSettings:
    """The loop's declared settings for a predictor method (everything the decisions read)."""
    return ProtocolSettings.model_validate(
        {
            "k": n_pool,
            "max_rounds": config.n_total,
            "batch_size": 1,
            "rule": "utility_argmax" if method.startswith("predictor_utility") else "info_gain",
            "utility": {"weights": {"yield": 1.0}, "uncertainty_penalty": config.uncertainty_penalty},
            "readout": "gaussian",
            "regression_reliability": config.reliability.model_dump(),
            "adaptation": {"enabled": True, "min_examples": config.min_adapt_examples},
            "gates": config.gates.model_dump(),
            "gate_data": config.gate_data,
            "gate_fraction": config.gate_fraction,
            **({"gate_window": config.gate_window} if config.gate_window is not None else {}),
            "initial_design": config.n_initial,
            "record_candidates": config.record_candidates,
            "audit": False,
            "metrics_version": config.metrics_version,
        }
    )


def run_protocol(grid: ConditionGrid, method: str, seed: int, config: Config, path: Path) -> dict[str, Any]:
    """One predictor-method run through the protocol loop in ``path`` (resumed if it exists)."""
    env = ReactionEnvironment(grid)
    features = env.features
    settings = protocol_settings(config, method, env.n)
    task = grid.spec.name
    predictor: EnsemblePredictor | GPPredictor
    if method.endswith("_gp"):
        predictor = GPPredictor(features, seed, config.bo)
        load: Any = lambda b: GPPredictor.from_bytes(b, features)  # noqa: E731
    else:
        predictor = EnsemblePredictor(features, seed, config.predictor)
        load = lambda b: EnsemblePredictor.from_bytes(b, features)  # noqa: E731
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
    run_cfg = {"grid": task, "method": method, "seed": seed, "protocol": settings.model_dump(mode="json")}
    with Run.create(path, run_cfg, kind="protocol", exist_ok=True) as run:
        loop = Loop.open(spec, run, settings, seed=seed)
        loop.run()
        eff = effective_events(run)  # a cut-off cycle attempt (kill mid-cycle) does not count
        evs = {k: [e.payload for e in eff if e.kind == k] for k in ("adaptation_trigger", "gate", "retain")}
        audit = [e.payload for e in eff if e.kind == "final_audit"][-1]
        ledger = loop.ledger.report()
    ys = np.array(audit["yields"], dtype=float)
    gates = evs["gate"]
    return {
        "grid": task,
        "method": method,
        "seed": seed,
        "pool_size": env.n,
        "pool_max": env.pool_max,
        "indices": audit["indices"],
        "yields": ys.tolist(),
        "best_curve": np.maximum.accumulate(ys).tolist(),
        "first_hit": audit["first_hit"],
        "adaptations": sum(  # proposed predictors that the retained pair now holds (eq. 18)
            1
            for r in evs["retain"]
            if r["proposed_predictor_version"] is not None
            and r["predictor_version"] == r["proposed_predictor_version"]
        ),
        "adaptations_triggered": sum(1 for t in evs["adaptation_trigger"] if t["triggered"]),
        "predictor_gate_passed": sum(1 for g in gates if g["gate"] == "predictor" and g["passed"]),
        "pair_gate_failed": sum(
            1 for g in gates if g["gate"] == "pair" and not g["skipped"] and not g["passed"]
        ),
        "final_predictor": loop.predictor.version if loop.predictor else None,
        "run_dir": str(path),
        "budgets": ledger,
    }


def run_cohort(
    grid: ConditionGrid, method: str, seeds: Sequence[int], config: Config
) -> tuple[list[tuple[str, dict[str, Any], int | None]], list[dict[str, Any]]]:
    """Run ``seeds`` of a baseline (``gp_ei`` or ``random``) on one grid in lockstep; returns
    (events to append, per-run summaries). Predictor methods go through :func:`run_protocol`."""
    if method in PREDICTOR_METHODS:
        raise ValueError(f"{method} runs through the protocol loop (run_protocol), not a baseline cohort")
    events: list[tuple[str, dict[str, Any], int | None]] = []
    gname = grid.spec.name
    budgets = {EXTERNAL_FEEDBACK: float(config.n_total)}
    envs = [ReplayEnvironment(grid, BudgetLedger.open(None, budgets)) for _ in seeds]
    for s, env in zip(seeds, envs):
        for i in initial_conditions(grid.n, config.n_initial, s, gname):
            o = env.run_experiment(int(i), reason="initial observation")
            events.append(("observation", _obs_payload(gname, method, s, o, env, None), o.step))
    baseline: GPExpectedImprovement | RandomSelection
    baseline = GPExpectedImprovement(seeds, config.bo) if method == "gp_ei" else RandomSelection(seeds)
    for step in range(config.n_initial + 1, config.n_total + 1):
        choices = baseline.select([e.view() for e in envs])
        for (s, env), (idx, info) in zip(zip(seeds, envs), choices):
            events.append(("selection", {"grid": gname, "method": method, "seed": s, **info}, step))
            o = env.run_experiment(idx, reason=f"{method} selection")
            events.append(("observation", _obs_payload(gname, method, s, o, env, None), step))
    summaries = []
    for s, env in zip(seeds, envs):
        ys = np.array([o.yield_ for o in env.observations])
        hit = np.flatnonzero(ys >= grid.pool_max - 1e-9)
        summaries.append(
            {
                "grid": gname,
                "method": method,
                "seed": s,
                "pool_size": grid.n,
                "pool_max": grid.pool_max,
                "indices": [o.index for o in env.observations],
                "yields": ys.tolist(),
                "best_curve": np.maximum.accumulate(ys).tolist(),
                "first_hit": int(hit[0]) + 1 if len(hit) else None,
                "adaptations": 0,
                "budgets": env.ledger.report(),
            }
        )
    return events, summaries


def _timed_cohort(
    grid: ConditionGrid, method: str, seeds: Sequence[int], config: Config
) -> tuple[list[tuple[str, dict[str, Any], int | None]], list[dict[str, Any]], float]:
    """:func:`run_cohort` on an executor's worker: its results and its own wall time (no events written)."""
    import torch

    torch.set_num_threads(config.threads)
    t0 = time.perf_counter()
    events, summaries = run_cohort(grid, method, seeds, config)
    return events, summaries, time.perf_counter() - t0


def _obs_payload(
    gname: str, method: str, seed: int, o: Any, env: ReplayEnvironment, pred: dict[str, Any] | None
) -> dict[str, Any]:
    return {
        "grid": gname,
        "method": method,
        "seed": seed,
        "index": o.index,
        "condition": o.condition,
        "yield": o.yield_,
        "evidence": o.evidence,
        "experiment": o.step,
        "budget_remaining": env.ledger.remaining(EXTERNAL_FEEDBACK),
        "prediction": pred,
    }


# ---------------------------------------------------------------------------------------------
# the experiment
# ---------------------------------------------------------------------------------------------
def run_experiment(config: Config, out: Path, *, resume: bool = False) -> Path:
    """Run every (grid, method, cohort of seeds) not yet finished in ``out``; returns ``out``."""
    import torch
    from tqdm.auto import tqdm

    torch.set_num_threads(config.threads)
    out = Path(out)
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
                for m in config.methods:
                    if not all((spec.name, m, s) in done for s in c):
                        todo.append((spec, m, c))
        grids: dict[str, ConditionGrid] = {}
        # with an executor block, baseline cohorts (pure: they return their events) run ahead on the
        # pool while the driver runs the protocol runs; everything is appended in ``todo`` order
        fan_out = config.executor is not None and any(m not in PREDICTOR_METHODS for _, m, _ in todo)
        pool = stack.enter_context(make_executor(config.executor)) if fan_out and config.executor else None
        ahead: dict[int, Any] = {}
        loaded: dict[str, ConditionGrid] = {}
        for i, (spec, m, c) in enumerate(todo):
            if pool is not None and m not in PREDICTOR_METHODS:
                if spec.name not in loaded:
                    loaded[spec.name] = load_grid(spec)
                ahead[i] = pool.submit(_timed_cohort, loaded[spec.name], m, c, config)
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
            if m in PREDICTOR_METHODS:  # one protocol run per seed, each committed as it finishes
                for s in tqdm(c, desc=f"{spec.name} {m}", unit="run", leave=False):
                    if (spec.name, m, s) in done:
                        continue
                    summ = run_protocol(
                        grids[spec.name], m, s, config, out / "runs" / spec.name / f"{m}-seed{s}"
                    )
                    run.append(
                        "run_finished", {**summ, "run_dir": str(Path(summ["run_dir"]).relative_to(out))}
                    )
                    run.commit()
                wall = time.perf_counter() - t0
            else:  # a cohort that ran ahead on the pool reports its worker's own wall time
                fut = ahead.pop(i, None)
                events, summaries, wall = (
                    fut.result() if fut is not None else _timed_cohort(grids[spec.name], m, c, config)
                )
                for kind, payload, cycle in events:
                    run.append(kind, payload, cycle=cycle)
                for summ in summaries:
                    run.append("run_finished", summ)
            run.append("cohort_finished", {"grid": spec.name, "method": m, "seeds": list(c), "wall_s": wall})
            run.commit()
        if todo:
            run.append("experiment_finished", {"cohorts_run": len(todo)})
            run.commit()
        run.artifacts.put_json(curves(out).to_dict(orient="list"), name="curves.json")
    return out


# ---------------------------------------------------------------------------------------------
# results
# ---------------------------------------------------------------------------------------------
def runs_frame(path: str | Path) -> pd.DataFrame:
    """One row per finished run (last record wins on a rerun cohort)."""
    df = load_events(path, kind="run_finished")
    if df.empty:
        return df
    return df.drop_duplicates(subset=["grid", "method", "seed"], keep="last").reset_index(drop=True)


def curves(path: str | Path) -> pd.DataFrame:
    """Mean best observed yield per experiment count, per grid and method (for the dashboards)."""
    df = runs_frame(path)
    rows = []
    for (g, m), d in df.groupby(["grid", "method"], sort=False):
        arr = np.array(d["best_curve"].tolist(), dtype=float)
        for n in range(arr.shape[1]):
            rows.append(
                {
                    "grid": g,
                    "method": m,
                    "experiments": n + 1,
                    "mean_best": float(arr[:, n].mean()),
                    "runs": len(arr),
                }
            )
    return pd.DataFrame(rows, columns=["grid", "method", "experiments", "mean_best", "runs"])


def summary(path: str | Path, runs: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per grid × method: mean best yield at each report point, hit fraction, first-hit stats, with 95% CIs."""
    run = Run.open(path)
    cfg = Config.model_validate(run.config)
    df = runs_frame(path) if runs is None else runs
    rows = []
    for (g, m), d in df.groupby(["grid", "method"], sort=False):
        best = np.array(d["best_curve"].tolist(), dtype=float)
        fh = np.array([np.nan if v is None or v != v else float(v) for v in d["first_hit"]])
        row: dict[str, Any] = {
            "grid": g,
            "method": m,
            "runs": len(d),
            "pool_max": float(d["pool_max"].iloc[0]),
        }
        for n in cfg.report_at:
            col = best[:, n - 1]
            row[f"best@{n}"] = float(col.mean())
            row[f"best@{n}_ci"] = interval(col, n_resamples=cfg.bootstrap)
        hit = ~np.isnan(fh)
        row["hit_frac"] = float(hit.mean())
        row["hit_frac_ci"] = interval(hit.astype(float), n_resamples=cfg.bootstrap)
        hits = fh[hit]
        row["first_hit_mean"] = float(hits.mean()) if len(hits) else math.nan
        row["first_hit_mean_ci"] = interval(hits, n_resamples=cfg.bootstrap)
        row["first_hit_median"] = float(np.median(hits)) if len(hits) else math.nan
        row["first_hit_max"] = float(hits.max()) if len(hits) else math.nan
        row["adaptations_mean"] = float(d["adaptations"].mean())
        trig = d["adaptations_triggered"] if "adaptations_triggered" in d else None
        row["triggered_mean"] = float(np.nanmean(trig)) if trig is not None and trig.notna().any() else 0.0
        for name in ("predictor_gate_passed", "pair_gate_failed"):
            row[f"{name}_sum"] = int(np.nansum(d[name])) if name in d else 0
        row["triggered_sum"] = int(np.nansum(trig)) if trig is not None else 0
        rows.append(row)
    return pd.DataFrame(rows)


def paired_gain(path: str | Path, a: str, b: str, n: int, runs: pd.DataFrame | None = None) -> pd.DataFrame:
    """Mean best@n of method ``a`` minus method ``b``, paired by seed (same initial observations)."""
    run = Run.open(path)
    cfg = Config.model_validate(run.config)
    df = runs_frame(path) if runs is None else runs
    rows = []
    for g, d in df.groupby("grid", sort=False):
        da = d[d.method == a].set_index("seed")["best_curve"]
        db = d[d.method == b].set_index("seed")["best_curve"]
        common = sorted(set(da.index) & set(db.index))
        if not common:
            continue
        diff = np.array([da[s][n - 1] - db[s][n - 1] for s in common])
        lo, hi = interval(diff, n_resamples=cfg.bootstrap)
        rows.append(
            {
                "grid": g,
                "a": a,
                "b": b,
                "n": n,
                "pairs": len(common),
                "gain": float(diff.mean()),
                "lo": lo,
                "hi": hi,
            }
        )
    return pd.DataFrame(rows)


def report(path: str | Path) -> str:
    """Results table per grid (mean best yield at report points, pool-maximum hits, first hit) and wall
    times; printed only (a run or ``report --save`` writes ``report.txt``)."""
    run = Run.open(path)
    cfg = Config.model_validate(run.config)
    frame = runs_frame(path)
    s = summary(path, frame)
    lines = [f"reactions — {path}"]
    if s.empty:
        lines.append("(no finished runs yet)")
    walls = [e.payload["wall_s"] for e in run.events("cohort_finished")]
    use = _data_use(path, frame)
    for g, d in s.groupby("grid", sort=False):
        lines.append(f"\n## {g}  (pool max {d['pool_max'].iloc[0]:.2f})")
        head = f"{'method':<22} {'runs':>4}"
        for n in cfg.report_at:
            head += f" {'best@' + str(n):>22}"
        head += f" {'hit max':>20} {'first hit mean':>22} {'med':>5} {'max':>5} {'adapt trig/kept':>16}"
        lines.append(head)
        for _, r in d.iterrows():
            line = f"{r['method']:<22} {r['runs']:>4}"
            for n in cfg.report_at:
                lo, hi = r[f"best@{n}_ci"]
                line += f" {r[f'best@{n}']:>7.2f} [{lo:6.2f},{hi:6.2f}]"
            lo, hi = r["hit_frac_ci"]
            line += f" {r['hit_frac']:>6.2f} [{lo:4.2f},{hi:4.2f}]"
            lo, hi = r["first_hit_mean_ci"]
            line += f" {r['first_hit_mean']:>7.2f} [{lo:5.2f},{hi:5.2f}]"
            line += f" {r['first_hit_median']:>5.0f} {r['first_hit_max']:>5.0f}"
            line += f" {r['triggered_mean']:>9.1f}/{r['adaptations_mean']:<6.1f}"
            lines.append(line)
        for _, r in d[d["method"].isin(PREDICTOR_METHODS)].iterrows():
            lines.append(
                f"  {r['method']}: {r['triggered_sum']} adaptations triggered; predictor gate (eq. 14) passed "
                f"{r['predictor_gate_passed_sum']}, pair gate (eq. 17) rolled back {r['pair_gate_failed_sum']}"
            )
            lines.append("    " + _data_use_line(use, g, r["method"]))
    methods = set(s["method"]) if not s.empty else set()
    for a in ("predictor_utility", "predictor_utility_gp"):
        if {a, "gp_ei"} <= methods:
            lines.append(f"\n{a} − gp_ei, mean best yield paired by seed [95% bootstrap CI]:")
            for n in cfg.report_at:
                for _, r in paired_gain(path, a, "gp_ei", n, frame).iterrows():
                    verdict = "better" if r["lo"] > 0 else ("worse" if r["hi"] < 0 else "no clear difference")
                    lines.append(
                        f"  {r['grid']:<30} @{n:<3} {r['gain']:+6.2f} [{r['lo']:+6.2f},{r['hi']:+6.2f}]  {verdict}"
                    )
    lines.append(
        f"\nfirst hit = experiment index (1-based, initial ones included) of the first yield ≥ pool max − 1e-9; "
        f"mean/median/max over runs that hit. adapt trig/kept: adaptations triggered (eq. 11) / "
        f"retained after both gates (eq. 14, 17), mean per run; gate data = "
        f"{'prequential window of the latest rounds' if cfg.gate_data == 'prequential' else 'held-out rounds'} "
        f"of the run. Data use per run: trained = observations the final predictor was trained on; "
        f"judged only = gate data that never trained it; prior rounds = guided rounds the prior φ0 selected. "
        f"{len(walls)} cohorts, {sum(walls):.0f} s compute."
    )
    cohorts = [
        (f"{e.payload['grid']}/{e.payload['method']} ×{len(e.payload['seeds'])}", e.payload["wall_s"])
        for e in run.events("cohort_finished")
    ]
    how = "from the cohort_finished events; a cohort's runs (×seeds) run together"
    lines += ["", *wall_lines(cohorts, sum(walls) if walls else None, how, per="cohort")]
    return "\n".join(lines)


def _data_use(path: str | Path, frame: pd.DataFrame) -> pd.DataFrame:
    """Per predictor run (read from its protocol events): observations that trained the final predictor,
    that only judged it, and the guided rounds the prior stayed in use (``diagnostics.run_diagnostics``)."""
    from rsi_workbench.experiments.reactions.diagnostics import _effective, run_diagnostics

    rows = []
    for r in frame[frame["method"].isin(PREDICTOR_METHODS)].itertuples() if not frame.empty else []:
        prun = Run.open(Path(path) / str(r.run_dir))
        d = run_diagnostics(_effective(prun), int(prun.config["protocol"]["initial_design"]))
        rows.append({"grid": r.grid, "method": r.method, "seed": r.seed, **d})
    return pd.DataFrame(rows, columns=["grid", "method", "seed", "trained", "judged_only", "prior_rounds"])


def _data_use_line(use: pd.DataFrame, grid: str, method: str) -> str:
    d = use[(use["grid"] == grid) & (use["method"] == method)]
    if d.empty:
        return "data use: -"

    def dist(col: str) -> str:
        v = d[col].to_numpy(dtype=float)
        return f"{v.mean():.1f} (min {v.min():.0f}, max {v.max():.0f})"

    on_prior = int((d["prior_rounds"] > 0).sum())
    return (
        f"data use per run: trained the final predictor {dist('trained')}; only judged it "
        f"{dist('judged_only')}; guided rounds on the prior {dist('prior_rounds')}, {on_prior}/{len(d)} runs > 0"
    )


def markdown(path: str | Path) -> str:
    """The results as Markdown tables (one per grid) for ``benchmarks/RESULTS.md``."""
    run = Run.open(path)
    cfg = Config.model_validate(run.config)
    frame = runs_frame(path)
    s = summary(path, frame)
    out: list[str] = []
    for g, d in s.groupby("grid", sort=False):
        out.append(
            f"**{g}** — {int(d['runs'].iloc[0])} runs per method, pool max {d['pool_max'].iloc[0]:.2f}\n"
        )
        cols = [f"best@{n}" for n in cfg.report_at]
        out.append(
            "| method | "
            + " | ".join(cols)
            + " | reach pool max | first hit mean | median | max | adapt trig/kept |"
        )
        out.append("|---" * (len(cols) + 6) + "|")
        for _, r in d.iterrows():
            cells = [f"{r[c]:.2f} [{r[c + '_ci'][0]:.2f}, {r[c + '_ci'][1]:.2f}]" for c in cols]
            lo, hi = r["hit_frac_ci"]
            flo, fhi = r["first_hit_mean_ci"]
            out.append(
                f"| {r['method']} | " + " | ".join(cells) + f" | {r['hit_frac']:.2f} [{lo:.2f}, {hi:.2f}]"
                f" | {r['first_hit_mean']:.1f} [{flo:.1f}, {fhi:.1f}] | {r['first_hit_median']:.0f}"
                f" | {r['first_hit_max']:.0f} | {r['triggered_mean']:.1f} / {r['adaptations_mean']:.1f} |"
            )
        out.append("")
    if not s.empty and {"predictor_utility", "gp_ei"} <= set(s["method"]):
        out.append("| grid | n | predictor_utility − gp_ei (paired by seed) | 95% CI |")
        out.append("|---|---|---|---|")
        for n in cfg.report_at:
            for _, r in paired_gain(path, "predictor_utility", "gp_ei", n, frame).iterrows():
                out.append(f"| {r['grid']} | {n} | {r['gain']:+.2f} | [{r['lo']:+.2f}, {r['hi']:+.2f}] |")
    return "\n".join(out)
