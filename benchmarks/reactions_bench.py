"""Reactions: cost per selection of the GP-EI baseline and the deep-ensemble predictor, side by side.

Compares, on the same runs (Perera headline campaign, 8 initial + ``--steps`` selections):
  - GP-EI, per run, BoTorch's default fit (scipy L-BFGS-B via ``fit_gpytorch_mll``) every step;
  - GP-EI as the experiment runs it: the cohort's GPs as one batched model, 100 Adam steps, warm start;
  - the deep ensemble fitted run by run vs as one batched cohort.
Prints seconds per selection and the ratios.  Usage: python benchmarks/reactions_bench.py [--runs 8]
"""

from __future__ import annotations

import argparse
import platform
import time
import warnings

import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=8)
    ap.add_argument("--steps", type=int, default=8)
    args = ap.parse_args()

    import torch
    from botorch.acquisition.analytic import _log_ei_helper
    from botorch.fit import fit_gpytorch_mll
    from botorch.models import SingleTaskGP
    from botorch.models.transforms import Standardize
    from gpytorch.mlls import ExactMarginalLogLikelihood

    from rsi_workbench.budget import BudgetLedger
    from rsi_workbench.domains.reactions import ReplayEnvironment, load_grid
    from rsi_workbench.domains.reactions.baselines import GPExpectedImprovement
    from rsi_workbench.domains.reactions.predictor import DeepEnsembleYieldPredictor
    from rsi_workbench.experiments.reactions.experiment import initial_conditions

    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    grid = load_grid("perera2018-suzuki")
    seeds = list(range(4001, 4001 + args.runs))

    def envs() -> list[ReplayEnvironment]:
        out = []
        for s in seeds:
            e = ReplayEnvironment(grid, BudgetLedger.open(None, {"external_feedback": 8 + args.steps}))
            for i in initial_conditions(grid.n, 8, s, grid.spec.name):
                e.run_experiment(int(i))
            out.append(e)
        return out

    # GP-EI: per-run scipy L-BFGS fit each step (BoTorch default), EI argmax over the pool
    es = envs()
    t = time.perf_counter()
    for e in es:
        for _ in range(args.steps):
            v = e.view()
            x = torch.as_tensor(np.array(v.features))
            gp = SingleTaskGP(
                x[torch.as_tensor(np.array(v.observed_index))],
                torch.as_tensor(np.array(v.observed_yield))[:, None],
                outcome_transform=Standardize(m=1),
            )
            fit_gpytorch_mll(ExactMarginalLogLikelihood(gp.likelihood, gp))
            with torch.no_grad():
                post = gp.posterior(x)
                sd = post.variance[:, 0].clamp_min(1e-12).sqrt()
                best = float(np.max(v.observed_yield))
                ei = _log_ei_helper((post.mean[:, 0] - best) / sd) + sd.log()
            ei[torch.as_tensor(np.array(v.observed_index))] = -np.inf
            e.run_experiment(int(torch.argmax(ei)))
    t_seq = (time.perf_counter() - t) / (args.runs * args.steps)

    es = envs()
    sel = GPExpectedImprovement(seeds)
    t = time.perf_counter()
    for _ in range(args.steps):
        for e, (i, _) in zip(es, sel.select([e.view() for e in es])):
            e.run_experiment(i)
    t_batch = (time.perf_counter() - t) / (args.runs * args.steps)

    # deep ensemble: run by run vs one batched cohort (same per-run result, see tests)
    es = envs()
    x_pool = np.array(es[0].view().features)
    xs = np.stack([x_pool[np.array(e.view().observed_index)] for e in es])
    ys = np.stack([np.array(e.view().observed_yield) for e in es])
    t = time.perf_counter()
    for r, s in enumerate(seeds):
        p = DeepEnsembleYieldPredictor(x_pool.shape[1], [s])
        p.fit([0], xs[r : r + 1], ys[r : r + 1])
        p.predict(x_pool)
    t_ens_seq = (time.perf_counter() - t) / args.runs
    t = time.perf_counter()
    p = DeepEnsembleYieldPredictor(x_pool.shape[1], seeds)
    p.fit(list(range(args.runs)), xs, ys)
    p.predict(x_pool)
    t_ens_batch = (time.perf_counter() - t) / args.runs

    print(f"machine: {platform.machine()} {platform.processor() or ''}, torch threads 1, runs {args.runs}")
    print(f"{'what':<58} {'s / selection':>14} {'ratio':>7}")
    print(f"{'GP-EI, per run, scipy L-BFGS fit every step (default)':<58} {t_seq:>14.3f} {1.0:>7.2f}")
    print(
        f"{'GP-EI, cohort-batched GP, 100 Adam steps, warm start':<58} {t_batch:>14.3f} {t_seq / t_batch:>7.2f}"
    )
    print(f"{'ensemble fit + predict, run by run (per run)':<58} {t_ens_seq:>14.3f} {1.0:>7.2f}")
    print(
        f"{'ensemble fit + predict, one batched cohort (per run)':<58} {t_ens_batch:>14.3f} {t_ens_seq / t_ens_batch:>7.2f}"
    )


if __name__ == "__main__":
    main()
