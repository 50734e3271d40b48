"""Baselines on the same encoding, initial observations and budget: BoTorch GP + EI, and random.

Both work on a *cohort* — independent seeded runs advancing in lockstep — and only ever see each
run's :class:`~rsi_workbench.domains.reactions.replay.PoolView`.

:class:`GPExpectedImprovement` is Bayesian optimisation with BoTorch: a ``SingleTaskGP`` (float64,
ARD RBF kernel with BoTorch's default priors, standardised outcomes) per run, fitted by
``fit_gpytorch_mll`` on the observed conditions, then the unrun condition with the largest log
expected improvement over that run's best observed yield, exhaustively over the discrete pool.
The cohort's GPs form one batched model (batch = runs) optimised with BoTorch's torch optimiser
for a fixed number of Adam steps, so each run's fit is independent of the others; hyperparameters
are warm-started from the previous step's fit.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
from pydantic import Field

from rsi_workbench.budget import EXTERNAL_FEEDBACK, BudgetLedger
from rsi_workbench.config import StrictModel
from rsi_workbench.domains.reactions.corruption import Corruption, CorruptionSpec
from rsi_workbench.domains.reactions.grid import ConditionGrid
from rsi_workbench.domains.reactions.replay import PoolView, ReplayEnvironment, initial_conditions


class BOConfig(StrictModel):
    """GP-EI settings: hyperparameter optimisation steps and warm start."""

    fit_steps: int = Field(default=100, ge=1, description="Adam steps of the marginal-likelihood fit")
    lr: float = Field(default=0.05, gt=0, description="Adam learning rate of the hyperparameter fit")
    warm_start: bool = Field(default=True, description="start each fit from the previous hyperparameters")


class RandomSelection:
    """Uniformly random unrun condition per run (seeded per run)."""

    name = "random"

    def __init__(self, seeds: Sequence[int]) -> None:
        self.rngs = [np.random.default_rng([int(s), 17]) for s in seeds]

    def select(self, views: Sequence[PoolView]) -> list[tuple[int, dict[str, Any]]]:
        return [(int(rng.choice(v.unrun)), {}) for rng, v in zip(self.rngs, views)]


class GPExpectedImprovement:
    """Bayesian optimisation: per-run GP posterior over the pool, argmax of log expected improvement."""

    name = "gp_ei"

    def __init__(
        self,
        seeds: Sequence[int],
        config: BOConfig | None = None,
        prior_means: Sequence[np.ndarray] | None = None,
    ) -> None:
        """``prior_means``: per run, a mean function over the pool (a transfer prior's predicted yield);
        the GP then models the residual y − m(x) and its posterior mean is m(x) + the residual's."""
        self.config = config or BOConfig()
        self.seeds = [int(s) for s in seeds]
        self.prior_means = (
            None if prior_means is None else np.stack([np.asarray(m, float) for m in prior_means])
        )
        self._hyper: tuple[dict[str, Any], dict[str, Any]] | None = None
        self.fits = 0

    def select(self, views: Sequence[PoolView]) -> list[tuple[int, dict[str, Any]]]:
        """One EI choice per run; all runs must have the same number of observations (lockstep)."""
        import torch
        from botorch.acquisition.analytic import _log_ei_helper
        from botorch.models import SingleTaskGP
        from botorch.models.transforms import Standardize

        sizes = {len(v.observed_index) for v in views}
        if len(sizes) != 1:
            raise ValueError(f"GP-EI cohort runs must advance in lockstep; observation counts {sizes}")
        r = len(views)
        x = torch.as_tensor(np.array(views[0].features), dtype=torch.float64)
        xo = torch.stack([x[torch.as_tensor(np.array(v.observed_index))] for v in views])
        yo = torch.stack([torch.as_tensor(np.array(v.observed_yield), dtype=torch.float64) for v in views])
        pm = torch.zeros(r, x.shape[0], dtype=torch.float64)
        if self.prior_means is not None:
            pm = torch.as_tensor(self.prior_means, dtype=torch.float64)
        pmo = torch.stack([pm[i, torch.as_tensor(np.array(v.observed_index))] for i, v in enumerate(views)])
        torch.manual_seed(self.seeds[0] * 1009 + xo.shape[1])
        gp = SingleTaskGP(
            xo, (yo - pmo)[..., None], outcome_transform=Standardize(m=1, batch_shape=torch.Size([r]))
        )
        if self._hyper is not None and self.config.warm_start:
            gp.covar_module.load_state_dict(self._hyper[0])
            gp.likelihood.load_state_dict(self._hyper[1])
        fit_gp(gp, self.config)
        self.fits += 1
        self._hyper = (gp.covar_module.state_dict(), gp.likelihood.state_dict())
        gp.eval()
        means, sds = [], []
        with torch.no_grad():
            for chunk in torch.split(x, 256):  # marginal posteriors, a chunk of the pool at a time
                post = gp.posterior(chunk.expand(r, -1, -1))
                means.append(post.mean[..., 0])
                sds.append(post.variance[..., 0].clamp_min(1e-12).sqrt())
            mean, sd = torch.cat(means, dim=1) + pm, torch.cat(sds, dim=1)
            log_ei = _log_ei_helper((mean - yo.max(dim=1).values[:, None]) / sd) + sd.log()
        out: list[tuple[int, dict[str, Any]]] = []
        for i, v in enumerate(views):
            unrun = torch.as_tensor(v.unrun)
            k = int(unrun[torch.argmax(log_ei[i, unrun])])
            out.append(
                (k, {"log_ei": float(log_ei[i, k]), "mean": float(mean[i, k]), "std": float(sd[i, k])})
            )
        return out


def fit_gp(gp: Any, config: BOConfig) -> None:
    """Fit a GP's hyperparameters by the exact marginal log likelihood, as GP-EI does: Adam at
    ``config.lr`` for ``config.fit_steps`` steps (no early stop). Shared by the GP-EI baseline and the
    GP predictor under the protocol, so both fit one model family the same way."""
    import torch
    from botorch.fit import fit_gpytorch_mll
    from botorch.optim.fit import fit_gpytorch_mll_torch
    from botorch.optim.stopping import ExpMAStoppingCriterion
    from gpytorch.mlls import ExactMarginalLogLikelihood

    mll = ExactMarginalLogLikelihood(gp.likelihood, gp)
    steps = config.fit_steps
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit_gpytorch_mll(
            mll,
            optimizer=fit_gpytorch_mll_torch,
            optimizer_kwargs={
                "step_limit": steps,
                "stopping_criterion": ExpMAStoppingCriterion(maxiter=steps, rel_tol=0.0),
                "optimizer": lambda params: torch.optim.Adam(params, lr=config.lr),
            },
        )


Events = list[tuple[str, dict[str, Any], int | None]]


def run_baselines(
    grid: ConditionGrid,
    kind: str,
    name: str,
    seeds: Sequence[int],
    *,
    n_initial: int,
    n_total: int,
    bo: BOConfig,
    means: list[np.ndarray] | None = None,
    corruption: CorruptionSpec | None = None,
) -> tuple[Events, list[dict[str, Any]]]:
    """Runs ``seeds`` of a baseline ``kind`` (``gp_ei`` or ``random``) called ``name`` on one grid in
    lockstep from the shared initial conditions to ``n_total`` experiments; returns (events, per-run
    summaries). ``means``: per seed, the GP's prior mean over the pool (a transfer prior's);
    ``corruption``: the declared misreading of the measurements (the same experiments of a seed as in
    every other arm); the summaries' ``yields`` are then the true yields, ``readings`` what ran saw."""
    gname = grid.spec.name
    events: Events = []
    bad = [None if corruption is None else Corruption(corruption, gname, s, n_total) for s in seeds]
    envs = [
        ReplayEnvironment(grid, BudgetLedger.open(None, {EXTERNAL_FEEDBACK: float(n_total)}), corruption=c)
        for c in bad
    ]
    for s, env in zip(seeds, envs):
        for i in initial_conditions(grid.n, n_initial, s, gname):
            o = env.run_experiment(int(i), reason="initial observation")
            events.append(("observation", observation_payload(gname, name, s, o, env), o.step))
    baseline = GPExpectedImprovement(seeds, bo, means or None) if kind == "gp_ei" else RandomSelection(seeds)
    for step in range(n_initial + 1, n_total + 1):
        choices = baseline.select([e.view() for e in envs])
        for (s, env), (idx, info) in zip(zip(seeds, envs), choices):
            events.append(("selection", {"grid": gname, "method": name, "seed": s, **info}, step))
            o = env.run_experiment(idx, reason=f"{name} selection")
            events.append(("observation", observation_payload(gname, name, s, o, env), step))
    summaries = []
    for s, env, c in zip(seeds, envs, bad):
        ys = np.array([o.actual for o in env.observations])
        hit = np.flatnonzero(ys >= grid.pool_max - 1e-9)
        misread = {}
        if c is not None:
            misread = {"readings": [o.yield_ for o in env.observations], "corruption": c.describe()}
        summaries.append(
            {
                "grid": gname,
                "method": name,
                "seed": s,
                "pool_size": grid.n,
                "pool_max": grid.pool_max,
                "indices": [o.index for o in env.observations],
                "yields": ys.tolist(),
                "best_curve": np.maximum.accumulate(ys).tolist(),
                "first_hit": int(hit[0]) + 1 if len(hit) else None,
                "adaptations": 0,
                "budgets": env.ledger.report(),
                **misread,
            }
        )
    return events, summaries


def observation_payload(gname: str, method: str, seed: int, o: Any, env: ReplayEnvironment) -> dict[str, Any]:
    """The ``observation`` event of a baseline run."""
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
        "prediction": None,
        **({"corrupted": o.step in env.corruption.experiments} if env.corruption else {}),
    }
