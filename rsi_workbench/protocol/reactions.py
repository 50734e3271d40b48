"""``reactions`` experiment: predictor-guided condition selection vs Bayesian optimisation at matched budget.

RSI-Anything's reaction optimisation ("反应优化") as an offline sequential replay over measured
grids: every run starts from the same ``n_initial`` random conditions (per seed), then spends the
rest of an ``n_total`` experiment budget one condition at a time. Methods, all on one encoding:

- ``predictor_utility``: deep-ensemble yield predictor, eq. 7 utility ranking
  R = w·E[y] − λ·U with U = predictive std (the protocol's :func:`utility`, :class:`UtilityArgmax`);
- ``predictor_information``: the same predictor with the information-acquisition rule (most
  uncertain first, :class:`InformationGain`) — reported separately, as the paper asks;
- ``gp_ei``: BoTorch GP + expected improvement; ``random``: uniform.

The predictor learns under the protocol's trigger: after each measurement its reliability (eq. 10,
here on yield errors of predictions made by the *current* version) is judged, and an adaptation
(eq. 11) runs only when it is unreliable, data suffice and update-compute budget remains; every
prediction carries the version that made it. Runs of one (grid, method) advance in lockstep in
cohorts (chunks) that are committed as they finish; ``--resume`` skips finished cohorts.
"""

from __future__ import annotations

import math
import os
import random
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
from pydantic import Field, field_validator, model_validator

from rsi_workbench.budget import EXTERNAL_FEEDBACK, UPDATE_COMPUTE, BudgetLedger
from rsi_workbench.config import StrictModel
from rsi_workbench.domains.reactions.baselines import BOConfig, GPExpectedImprovement, RandomSelection
from rsi_workbench.domains.reactions.grid import BUILTIN_GRIDS, ConditionGrid, GridSpec, load_grid
from rsi_workbench.domains.reactions.predictor import DeepEnsembleYieldPredictor, EnsembleConfig
from rsi_workbench.domains.reactions.replay import ReplayEnvironment
from rsi_workbench.protocol.decisions import (
    AdaptationCriteria,
    InformationGain,
    Reliability,
    ReliabilityVerdict,
    ScoredCandidate,
    UtilityArgmax,
    UtilitySpec,
    adaptation_trigger,
    select,
    utility,
)
from rsi_workbench.records import Run, load_events

Method = Literal["predictor_utility", "predictor_information", "gp_ei", "random"]
PREDICTOR_METHODS = ("predictor_utility", "predictor_information")


def _default_grids() -> list[str | GridSpec]:
    return list(BUILTIN_GRIDS)


def _default_methods() -> list[Method]:
    return ["predictor_utility", "predictor_information", "gp_ei", "random"]


class YieldReliabilityCriteria(StrictModel):
    """Declared thresholds of the yield predictor's tri-state reliability (eq. 10)."""

    min_predictions: int = Field(
        default=2, ge=1, description="fewer new measurements predicted by the current version: insufficient"
    )
    max_mae: float = Field(
        default=10.0, gt=0, description="mean |y − ŷ| (yield points) above this: unreliable"
    )
    max_mean_abs_z: float = Field(
        default=2.0, gt=0, description="mean |y − ŷ|/σ̂ above this (overconfident): unreliable"
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
    update_budget: float = Field(default=32.0, ge=0.0, description="update-compute units per run (1 per fit)")
    reliability: YieldReliabilityCriteria = Field(default_factory=YieldReliabilityCriteria)
    predictor: EnsembleConfig = Field(default_factory=EnsembleConfig)
    bo: BOConfig = Field(default_factory=BOConfig)
    bootstrap: int = Field(default=2000, ge=100, description="bootstrap resamples for the intervals")
    threads: int = Field(default=1, ge=1, description="torch threads (the machine is shared)")

    @model_validator(mode="after")
    def _check(self) -> Config:
        if self.n_initial >= self.n_total:
            raise ValueError(f"n_initial ({self.n_initial}) must be < n_total ({self.n_total})")
        bad = [n for n in self.report_at if not 1 <= n <= self.n_total]
        if bad:
            raise ValueError(f"report_at {bad} outside 1..n_total ({self.n_total})")
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
# decisions specific to a regression readout
# ---------------------------------------------------------------------------------------------
def yield_reliability(
    units: Sequence[tuple[str, str, float, float, float]], version: str, criteria: YieldReliabilityCriteria
) -> ReliabilityVerdict:
    """ρ^W ∈ {reliable, unreliable, insufficient} (eq. 10) from (run, version, ŷ, σ̂, y) units.

    Only predictions made by ``version`` count (attributable to the current predictor); too few is
    *insufficient*, never reliable. Unreliable when the mean absolute error or the mean |z| exceeds
    its declared threshold.
    """
    mine = [u for u in units if u[1] == version]
    n = len(mine)
    mae = float(np.mean([abs(u[4] - u[2]) for u in mine])) if mine else None
    z = float(np.mean([abs(u[4] - u[2]) / max(u[3], 1e-9) for u in mine])) if mine else None
    reasons: list[str] = []
    verdict: Reliability
    if n < criteria.min_predictions:
        reasons.append(f"{n} measured predictions < min_predictions {criteria.min_predictions}")
        verdict = "insufficient"
    else:
        assert mae is not None and z is not None
        if mae > criteria.max_mae:
            reasons.append(f"mae {mae:.2f} > max_mae {criteria.max_mae}")
        if z > criteria.max_mean_abs_z:
            reasons.append(f"mean |z| {z:.2f} > max_mean_abs_z {criteria.max_mean_abs_z}")
        verdict = "unreliable" if reasons else "reliable"
    return ReliabilityVerdict(
        verdict, version, n, 1, len(units) - n, {"mae": mae, "mean_abs_z": z}, criteria.model_dump(), reasons
    )


# ---------------------------------------------------------------------------------------------
# one cohort: runs of one (grid, method) in lockstep
# ---------------------------------------------------------------------------------------------
def initial_conditions(n_pool: int, n_initial: int, seed: int) -> np.ndarray:
    """The seeded initial observations, identical for every method of a given seed."""
    return np.random.default_rng([seed, 0]).choice(n_pool, size=n_initial, replace=False)


def run_cohort(
    grid: ConditionGrid, method: str, seeds: Sequence[int], config: Config
) -> tuple[list[tuple[str, dict[str, Any], int | None]], list[dict[str, Any]]]:
    """Run ``seeds`` of one method on one grid; returns (events to append, per-run summaries)."""
    events: list[tuple[str, dict[str, Any], int | None]] = []
    gname = grid.spec.name
    budgets = {EXTERNAL_FEEDBACK: float(config.n_total), UPDATE_COMPUTE: float(config.update_budget)}
    envs = [ReplayEnvironment(grid, BudgetLedger.open(None, budgets)) for _ in seeds]
    for s, env in zip(seeds, envs):
        for i in initial_conditions(grid.n, config.n_initial, s):
            o = env.run_experiment(int(i), reason="initial observation")
            events.append(("observation", _obs_payload(gname, method, s, o, env, None), o.step))
    x_pool = np.array(envs[0].view().features)
    is_pred = method in PREDICTOR_METHODS
    predictor = DeepEnsembleYieldPredictor(x_pool.shape[1], seeds, config.predictor) if is_pred else None
    rule = UtilityArgmax() if method == "predictor_utility" else InformationGain()
    uspec = UtilitySpec(weights={"yield": 1.0}, uncertainty_penalty=config.uncertainty_penalty)
    acrit = AdaptationCriteria(enabled=True, min_examples=config.n_initial)
    baseline: GPExpectedImprovement | RandomSelection | None = None
    if method == "gp_ei":
        baseline = GPExpectedImprovement(seeds, config.bo)
    elif method == "random":
        baseline = RandomSelection(seeds)
    units: list[list[tuple[str, str, float, float, float]]] = [[] for _ in seeds]
    adaptations = [0] * len(seeds)
    if predictor is not None:
        _learn(predictor, envs, list(range(len(seeds))), fresh=True)
        for env in envs:
            env.ledger.spend(UPDATE_COMPUTE, 1.0, reason="initial predictor fit")
    for step in range(config.n_initial + 1, config.n_total + 1):
        views = [e.view() for e in envs]
        preds: list[dict[str, Any] | None] = [None] * len(seeds)
        if predictor is not None:
            yp = predictor.predict(x_pool)
            choices = []
            for r, v in enumerate(views):
                idx, info = _predictor_choice(yp.mean[r], yp.std[r], v.unrun, rule, uspec, envs[r])
                info["version"] = yp.version[r]
                preds[r] = {"mean": info["mean"], "std": info["std"], "version": yp.version[r]}
                choices.append((idx, info))
        else:
            assert baseline is not None
            choices = baseline.select(views)
        adapt_rows: list[int] = []
        for r, (s, env) in enumerate(zip(seeds, envs)):
            idx, info = choices[r]
            events.append(("selection", {"grid": gname, "method": method, "seed": s, **info}, step))
            o = env.run_experiment(idx, reason=f"{method} selection")
            events.append(("observation", _obs_payload(gname, method, s, o, env, preds[r]), step))
            if predictor is None:
                continue
            p = preds[r]
            assert p is not None
            units[r].append((f"{gname}/{s}", p["version"], p["mean"], p["std"], o.yield_))
            if step == config.n_total:
                continue  # nothing left to select: no adaptation is worth its cost
            verdict = yield_reliability(units[r], predictor.version(r), config.reliability)
            trig = adaptation_trigger(
                verdict.verdict,
                len(env.observations),
                env.ledger.remaining(UPDATE_COMPUTE),
                1.0,
                acrit,
            )
            events.append(
                (
                    "learn",
                    {
                        "grid": gname,
                        "method": method,
                        "seed": s,
                        "reliability": verdict.to_event(),
                        "trigger": trig.to_event(),
                    },
                    step,
                )
            )
            if trig.triggered:
                env.ledger.spend(UPDATE_COMPUTE, 1.0, reason="predictor adaptation (eq. 11)", cycle=step)
                adapt_rows.append(r)
        if predictor is not None and adapt_rows:
            _learn(predictor, envs, adapt_rows, fresh=False)
            for r in adapt_rows:
                adaptations[r] += 1
                events.append(
                    (
                        "predictor_adapted",
                        {"grid": gname, "method": method, "seed": seeds[r], "version": predictor.version(r)},
                        step,
                    )
                )
    summaries = []
    for r, (s, env) in enumerate(zip(seeds, envs)):
        ys = np.array([o.yield_ for o in env.observations])
        best = np.maximum.accumulate(ys)
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
                "best_curve": best.tolist(),
                "first_hit": int(hit[0]) + 1 if len(hit) else None,
                "adaptations": adaptations[r],
                "budgets": env.ledger.report(),
            }
        )
    return events, summaries


def _predictor_choice(
    mean: np.ndarray,
    std: np.ndarray,
    unrun: np.ndarray,
    rule: UtilityArgmax | InformationGain,
    uspec: UtilitySpec,
    env: ReplayEnvironment,
) -> tuple[int, dict[str, Any]]:
    """Score every unrun condition (eq. 7 or acquisition), let the protocol's ``select`` pick one.

    Only the top few by the rule's own key are handed to ``select`` (the ranking is the same; it
    keeps the decision record small on pools of thousands).
    """
    u = uspec.weights["yield"] * mean - uspec.uncertainty_penalty * std
    key = u if rule.kind == "utility" else std
    top = unrun[np.lexsort((unrun, -key[unrun]))[:5]]
    cands = [
        ScoredCandidate(
            int(i), True, "", utility({"yield": float(mean[i])}, uspec, float(std[i])), float(std[i])
        )
        for i in top
    ]
    dec = select(
        cands,
        rule,
        budget_remaining=env.ledger.remaining(EXTERNAL_FEEDBACK),
        rng=random.Random(0),  # unused by utility / information ranking (ties: lowest index)
    )
    k = dec.selected[0]
    return k, {
        "rule": dec.rule,
        "rule_kind": dec.rule_kind,
        "order": dec.order,
        "utility": float(u[k]),
        "mean": float(mean[k]),
        "std": float(std[k]),
        "budget_remaining": dec.budget_remaining,
    }


def _learn(
    predictor: DeepEnsembleYieldPredictor, envs: Sequence[ReplayEnvironment], rows: list[int], *, fresh: bool
) -> None:
    x = np.stack([np.array(envs[r].view().features)[np.array(envs[r].view().observed_index)] for r in rows])
    y = np.stack([np.array(envs[r].view().observed_yield) for r in rows])
    (predictor.fit if fresh else predictor.adapt)(rows, x, y)


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
    with run:
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
        for spec, m, c in tqdm(todo, desc="reactions cohorts", unit="cohort"):
            if spec.name not in grids:
                grids[spec.name] = cg = load_grid(spec)
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
            events, summaries = run_cohort(grids[spec.name], m, c, config)
            wall = time.perf_counter() - t0
            for kind, payload, cycle in events:
                run.append(kind, payload, cycle=cycle)
            for s in summaries:
                run.append("run_finished", s)
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


def _ci(values: np.ndarray, stat: Any, n_boot: int, seed: int = 0) -> tuple[float, float]:
    if len(values) == 0:
        return (math.nan, math.nan)
    rng = np.random.default_rng(seed)
    b = [stat(values[rng.integers(0, len(values), len(values))]) for _ in range(n_boot)]
    return float(np.nanpercentile(b, 2.5)), float(np.nanpercentile(b, 97.5))


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
            row[f"best@{n}_ci"] = _ci(col, np.mean, cfg.bootstrap)
        hit = ~np.isnan(fh)
        row["hit_frac"] = float(hit.mean())
        row["hit_frac_ci"] = _ci(hit.astype(float), np.mean, cfg.bootstrap)
        hits = fh[hit]
        row["first_hit_mean"] = float(hits.mean()) if len(hits) else math.nan
        row["first_hit_mean_ci"] = _ci(hits, np.mean, cfg.bootstrap)
        row["first_hit_median"] = float(np.median(hits)) if len(hits) else math.nan
        row["first_hit_max"] = float(hits.max()) if len(hits) else math.nan
        row["adaptations_mean"] = float(d["adaptations"].mean())
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
        lo, hi = _ci(diff, np.mean, cfg.bootstrap)
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
    """Results table per grid (mean best yield at report points, pool-maximum hits, first hit), saved too."""
    run = Run.open(path)
    cfg = Config.model_validate(run.config)
    frame = runs_frame(path)
    s = summary(path, frame)
    lines = [f"reactions — {path}"]
    if s.empty:
        lines.append("(no finished runs yet)")
    walls = [e.payload["wall_s"] for e in run.events("cohort_finished")]
    for g, d in s.groupby("grid", sort=False):
        lines.append(f"\n## {g}  (pool max {d['pool_max'].iloc[0]:.2f})")
        head = f"{'method':<22} {'runs':>4}"
        for n in cfg.report_at:
            head += f" {'best@' + str(n):>22}"
        head += f" {'hit max':>20} {'first hit mean':>22} {'med':>5} {'max':>5} {'adapt':>6}"
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
            line += f" {r['first_hit_median']:>5.0f} {r['first_hit_max']:>5.0f} {r['adaptations_mean']:>6.1f}"
            lines.append(line)
    methods = set(s["method"]) if not s.empty else set()
    if {"predictor_utility", "gp_ei"} <= methods:
        lines.append("\npredictor_utility − gp_ei, mean best yield paired by seed [95% bootstrap CI]:")
        for n in cfg.report_at:
            for _, r in paired_gain(path, "predictor_utility", "gp_ei", n, frame).iterrows():
                verdict = "better" if r["lo"] > 0 else ("worse" if r["hi"] < 0 else "no clear difference")
                lines.append(
                    f"  {r['grid']:<30} @{n:<3} {r['gain']:+6.2f} [{r['lo']:+6.2f},{r['hi']:+6.2f}]  {verdict}"
                )
    lines.append(
        f"\nfirst hit = experiment index (1-based, initial ones included) of the first yield ≥ pool max − 1e-9; "
        f"mean/median/max over runs that hit. {len(walls)} cohorts, {sum(walls):.0f} s compute."
    )
    text = "\n".join(lines)
    Path(path, "report.txt").write_text(text + "\n")
    return text


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
        out.append("| method | " + " | ".join(cols) + " | reach pool max | first hit mean | median | max |")
        out.append("|---" * (len(cols) + 5) + "|")
        for _, r in d.iterrows():
            cells = [f"{r[c]:.2f} [{r[c + '_ci'][0]:.2f}, {r[c + '_ci'][1]:.2f}]" for c in cols]
            lo, hi = r["hit_frac_ci"]
            flo, fhi = r["first_hit_mean_ci"]
            out.append(
                f"| {r['method']} | " + " | ".join(cells) + f" | {r['hit_frac']:.2f} [{lo:.2f}, {hi:.2f}]"
                f" | {r['first_hit_mean']:.1f} [{flo:.1f}, {fhi:.1f}] | {r['first_hit_median']:.0f}"
                f" | {r['first_hit_max']:.0f} |"
            )
        out.append("")
    if not s.empty and {"predictor_utility", "gp_ei"} <= set(s["method"]):
        out.append("| grid | n | predictor_utility − gp_ei (paired by seed) | 95% CI |")
        out.append("|---|---|---|---|")
        for n in cfg.report_at:
            for _, r in paired_gain(path, "predictor_utility", "gp_ei", n, frame).iterrows():
                out.append(f"| {r['grid']} | {n} | {r['gain']:+.2f} | [{r['lo']:+.2f}, {r['hi']:+.2f}] |")
    return "\n".join(out)
