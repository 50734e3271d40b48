"""Pretrained transfer priors for the ``reactions`` experiment, cached per (target, source set, seed).

:func:`pretrained_prior` builds an arm's φ0: the deep ensemble fitted (``predictor.fit_steps``, from
its seeded initialisation) on the prior's training table
(:func:`~rsi_workbench.domains.reactions.prior.prior_data`: mean yield over the other campaigns of the
target's grid file, leak-checked). The protocol then adapts it on the target's own observations
(the ensemble's warm-started ``adapt``), and GP-EI with a prior uses its predictive mean over the pool
as the GP's mean function. A fitted prior is stored under ``<experiment>/priors/<key>.pt`` (key:
:func:`~rsi_workbench.domains.reactions.prior.prior_cache_key`) and reused by every arm, resume and
extension that asks for the same one. The provenance returned is what the experiment records in its
``prior_pretrained`` event: source campaigns, fit rule, cache key, the fit's error on its own training
table, and the prior's error on the target's first (initial-design) observations.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from rsi_workbench.domains.reactions.binding import EnsemblePredictor
from rsi_workbench.domains.reactions.grid import ConditionGrid, encode_conditions
from rsi_workbench.domains.reactions.prior import PriorSpec, prior_cache_key, prior_data
from rsi_workbench.world.ensemble import EnsembleConfig, GaussianEnsemble

if TYPE_CHECKING:
    from rsi_workbench.domains.reactions.arms import MethodSpec
    from rsi_workbench.domains.reactions.grid import GridSpec
    from rsi_workbench.records import Run


def pretrained_prior(
    grid: ConditionGrid,
    spec: PriorSpec,
    seed: int,
    config: EnsembleConfig,
    cache_dir: Path | None,
    initial: list[int],
) -> tuple[EnsemblePredictor, dict[str, Any]]:
    """φ0 for ``grid`` from its prior ``spec`` (cached in ``cache_dir``) and its provenance; ``initial``
    are the target's initial-design conditions (the prior's error on them is reported, never used)."""
    import torch

    features, _ = encode_conditions(grid)
    features.flags.writeable = False
    data = prior_data(grid, spec, seed=seed)
    key = prior_cache_key(data, seed, config.model_dump(mode="json"))
    path = cache_dir / f"{key}.pt" if cache_dir is not None else None
    cached = path is not None and path.exists()
    if cached:
        assert path is not None
        pred = EnsemblePredictor.from_bytes(path.read_bytes(), features)
    else:
        with torch.random.fork_rng():
            core = GaussianEnsemble(features.shape[1], [seed], config)
            core.fit([0], features[data.index][None], data.y[None])
        pred = EnsemblePredictor(features, seed, config, core)
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".tmp{os.getpid()}")
            tmp.write_bytes(pred.to_bytes())
            tmp.replace(path)
    mean = prior_mean(pred)
    first = np.asarray(initial, dtype=int)
    prov = {
        **data.provenance(),
        "seed": int(seed),
        "cache_key": key,
        "cached": bool(cached),
        "predictor_version": pred.version,
        "fit_mae": float(np.abs(mean[data.index] - data.y).mean()),
        "first_observations": len(first),
        "first_observations_mae": float(np.abs(mean[first] - grid.yields[first]).mean())
        if len(first)
        else None,
    }
    return pred, prov


def prior_mean(pred: EnsemblePredictor) -> np.ndarray:
    """The prior's predictive mean yield at every pool condition (GP-EI's mean function)."""
    return np.asarray(pred.core.predict(np.array(pred.features)).mean[0], dtype=float)


def check_priors(methods: Sequence[str | MethodSpec], grids: Sequence[str | GridSpec], source: str) -> None:
    """Preflight: every arm's prior fits every grid of a reactions config (``share`` a campaign column,
    ``exclude`` campaigns of the file, at least one source campaign left); a ``ConfigError`` names the
    config file, the field (``methods.<i>.prior``) and the grid file."""
    import warnings

    from rsi_workbench.config import config_error
    from rsi_workbench.domains.reactions.arms import arm_of
    from rsi_workbench.domains.reactions.grid import IncompleteGridWarning, grid_spec, load_grid
    from rsi_workbench.domains.reactions.prior import check_prior_spec, read_file_rows, select_sources

    arms = [(i, arm_of(m)) for i, m in enumerate(methods)]
    arms = [(i, a) for i, a in arms if a.prior is not None]
    for g in grids if arms else []:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", IncompleteGridWarning)
            grid = load_grid(grid_spec(g))
        frame = read_file_rows(grid.source)
        for i, a in arms:
            assert a.prior is not None
            try:
                check_prior_spec(a.prior, grid.spec, frame, grid.source)
            except ValueError as e:
                raise config_error(source, f"methods.{i}.prior", f"grid {grid.spec.name!r}: {e}") from None
            if not select_sources(grid, a.prior, frame):
                raise config_error(
                    source,
                    f"methods.{i}.prior",
                    f"{grid.source}: grid {grid.spec.name!r}: no source campaign left for arm {a.name!r}",
                )


def prior_lines(run: Run) -> list[str]:
    """Per grid × arm with a transfer prior: its source campaigns and its mean absolute error on the
    target's first (initial-design) observations, from the ``prior_pretrained`` events."""
    evs = [e.payload for e in run.events("prior_pretrained")]
    if not evs:
        return []
    out = ["\ntransfer priors (φ0 pretrained on other campaigns of the grid file; never the target):"]
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for p in evs:
        groups.setdefault((p["grid"], p["method"]), []).append(p)
    for (g, m), ps in groups.items():
        srcs = sorted({" + ".join(s) for p in ps for s in p["source_campaigns"]})
        errs = [p["first_observations_mae"] for p in ps if p.get("first_observations_mae") is not None]
        err = f"{np.mean(errs):.2f}" if errs else "n/a"
        shuffled = " (shuffled: labels permuted)" if ps[0].get("shuffled") else ""
        out.append(
            f"  {g} / {m}{shuffled}: {len(srcs)} source campaign(s) [{'; '.join(srcs)}]; "
            f"MAE on the target's first {ps[0].get('first_observations')} observations {err} "
            f"(mean over {len(ps)} seeds); fit: {ps[0]['fit']}"
        )
    return out
