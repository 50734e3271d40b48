"""Cross-fitted acceptance of the code-repair world model (RSI-Anything code-repair W1).

HumanEvalFix and HumanEval share their 164 problems, so evaluation uses K-fold cross-fitting by
problem (:func:`cross_fit_splits`): for evaluation fold f the gate fold is f+1 and the rest train;
training states are the training folds' HumanEvalFix bugs plus bugs injected into their reference
solutions; gate and audit labels never enter training (manifest flags, checked). On each audit fold
the static verifier is compared with the world model before and after one Adapt on the public-test
feedback of the candidates the world model selects (:func:`evaluate_crossfit`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rsi_workbench.config import StrictModel
from rsi_workbench.domains.code_repair.world_rows import (
    Rows,
    check_no_leakage,
    rows_to_batch,
    subset_rows,
    transition_rows,
)
from rsi_workbench.domains.code_repair.world_transitions import Transition, load_transitions
from rsi_workbench.records import Run


@dataclass(frozen=True)
class CrossFitSplit:
    """Problems for one evaluation fold: audit (evaluated), gate (calibration/gates), train."""

    fold: int
    audit: frozenset[str]
    gate: frozenset[str]
    train: frozenset[str]

    def __post_init__(self) -> None:
        assert not (self.audit & self.gate or self.audit & self.train or self.gate & self.train), (
            f"fold {self.fold}: train/gate/audit problems overlap"
        )

    def role(self, problem: str) -> str:
        return "audit" if problem in self.audit else "gate" if problem in self.gate else "train"


def cross_fit_splits(problems: Iterable[str], k: int = 4, seed: int = 0) -> list[CrossFitSplit]:
    """K folds by problem (seeded); fold f is audit, fold f+1 gate, the others train."""
    if k < 3:
        raise ValueError(f"cross-fitting needs k >= 3 (audit, gate, train folds); got {k}")
    probs = sorted(set(problems), key=lambda p: hashlib.sha256(f"{seed}:{p}".encode()).hexdigest())
    folds = [frozenset(probs[i::k]) for i in range(k)]
    out = []
    for f in range(k):
        train = frozenset().union(*(folds[j] for j in range(k) if j not in (f, (f + 1) % k)))
        out.append(CrossFitSplit(f, folds[f], folds[(f + 1) % k], train))
    covered = [p for s in out for p in s.audit]
    assert sorted(covered) == sorted(probs), "every problem is audited exactly once"
    return out


# ------------------------------------------------------------------ cross-fitted acceptance
def _quality(model: Any, batch: Any, rows: Rows, exclude: set[int]) -> dict[str, Any]:
    """Predictions on audit rows -> (suite utility, suite probs, public probs/runtimes) for pooling."""
    from rsi_workbench.world.train import predict_batch

    p = predict_batch(model, batch)
    suite = np.array(rows.is_suite)
    pub = ~suite & ~np.isin(np.array(rows.transition), list(exclude))
    return {
        "suite_pred_utility": p.utility[suite],
        "suite_obs_utility": np.array(rows.observed_utility)[suite],
        "suite_group": np.array(rows.group)[suite],
        "suite_probs": p.suite_status_probs[suite],
        "suite_status": np.array(rows.status)[suite],
        "public_probs": p.status_probs[pub],
        "public_status": np.array(rows.status)[pub],
        "public_runtime_pred": p.runtime_s[pub],
        "public_runtime_obs": np.array(rows.runtime_s)[pub],
    }


def _metrics(parts: Sequence[dict[str, Any]]) -> dict[str, float]:
    from rsi_workbench.world import brier_5class, ece, nll, ranking_accuracy, runtime_error

    cat = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
    return {
        "ranking_accuracy": ranking_accuracy(
            cat["suite_pred_utility"], cat["suite_obs_utility"], cat["suite_group"]
        ),
        "brier_suite": brier_5class(cat["suite_probs"], cat["suite_status"]),
        "brier_public": brier_5class(cat["public_probs"], cat["public_status"]),
        "ece_suite": ece(cat["suite_probs"], cat["suite_status"]).ece,
        "nll_suite": nll(cat["suite_probs"], cat["suite_status"]),
        "runtime_mae_public": runtime_error(cat["public_runtime_pred"], cat["public_runtime_obs"]),
        "suite_rows": float(len(cat["suite_status"])),
        "public_rows": float(len(cat["public_status"])),
    }


class CrossFitConfig(StrictModel):
    """The HumanEvalFix cross-fitted acceptance: folds, seeds, training and adaptation settings."""

    backbone: str = "minilm"
    k: int = 4
    seeds: tuple[int, ...] = (0, 1, 2)
    epochs: int = 10
    adapt_epochs: int = 20
    adapt_trainable: tuple[str, ...] = ("opf", "readout")


def _cached_features(
    run_dir: str | Path, backbone: Any, rows: Rows, progress: bool
) -> Callable[[Sequence[str]], np.ndarray]:
    """Featurize every text of ``rows`` once with ``backbone``; the cache is an artifact of the
    dataset run (written again only when it grew)."""
    from rsi_workbench.world.encoders import FeatureCache

    run = Run.open(run_dir, mode="a")
    key = f"feature_cache_{backbone.fingerprint}"
    cache = (
        FeatureCache.from_bytes(run.artifacts.get(run.manifest[key]))
        if key in run.manifest
        else FeatureCache(backbone.fingerprint, backbone.hidden_size)
    )
    texts = list(dict.fromkeys(rows.state + rows.action + rows.context + rows.outcome))
    n_before = len(cache.vectors)
    cache.featurize(backbone, texts, progress=progress)
    if len(cache.vectors) != n_before or key not in run.manifest:
        run.update_manifest(**{key: run.artifacts.put(cache.to_bytes(), name=f"{key}.npz")})
    run.close()

    def feats(ts: Sequence[str]) -> np.ndarray:
        return cache.featurize(backbone, ts)

    return feats


def _fold_transitions(
    split: CrossFitSplit, transitions: Sequence[Transition]
) -> tuple[list[Transition], list[Transition], list[Transition]]:
    """(train, gate, audit) transitions of one fold: train from every source, gate and audit from
    HumanEvalFix bugs only; train problems never meet gate or audit problems."""
    role = [split.role(t.problem) for t in transitions]
    tr_idx = [i for i, r in enumerate(role) if r == "train"]
    gate_idx = [i for i, r in enumerate(role) if r == "gate" and transitions[i].source == "humanevalfix"]
    aud_idx = [i for i, r in enumerate(role) if r == "audit" and transitions[i].source == "humanevalfix"]
    assert not (
        {transitions[i].problem for i in tr_idx} & {transitions[i].problem for i in gate_idx + aud_idx}
    )
    return (
        [transitions[i] for i in tr_idx],
        [transitions[i] for i in gate_idx],
        [transitions[i] for i in aud_idx],
    )


def _adapt_selection(world_model: Any, aud_b: Any, aud_rows: Rows) -> set[int]:
    """D_adapt's transitions: the candidate the world model selects (highest predicted suite
    utility) in each audit state; their public-test feedback is what Adapt sees."""
    from rsi_workbench.world.train import predict_batch

    pred = predict_batch(world_model, aud_b)
    best: dict[str, tuple[float, int]] = {}
    for i in range(len(aud_rows)):
        if aud_rows.is_suite[i]:
            g, u = aud_rows.group[i], float(pred.utility[i])
            if g not in best or u > best[g][0]:
                best[g] = (u, aud_rows.transition[i])
    return {t for _, t in best.values()}


def _evaluate_fold(
    split: CrossFitSplit,
    transitions: Sequence[Transition],
    tasks: Mapping[str, Any],
    feats: Callable[[Sequence[str]], np.ndarray],
    input_dim: int,
    cfg: CrossFitConfig,
    seed: int,
) -> tuple[dict[str, dict[str, Any]], tuple[int, int, int]]:
    """Train the world model and the static verifier on the train folds, calibrate on the gate fold,
    Adapt the world model once on audit feedback; their audit-fold quality and the fold's sizes."""
    from rsi_workbench.world.model import OutcomeWorldModel, WorldModelConfig
    from rsi_workbench.world.train import TrainConfig, adapt, fit_temperature, train
    from rsi_workbench.world.verifier import StaticVerifier

    tr_t, gate_t, aud_t = _fold_transitions(split, transitions)
    train_rows = transition_rows(tr_t, tasks, role="train")
    check_no_leakage(train_rows, tasks, tr_t)
    gate_rows = transition_rows(gate_t, tasks, role="gate")
    aud_rows = transition_rows(aud_t, tasks, role="audit")
    train_b, gate_b, aud_b = (rows_to_batch(r, feats) for r in (train_rows, gate_rows, aud_rows))
    wcfg = WorldModelConfig(input_dim=input_dim)
    tcfg = TrainConfig(seed=seed, epochs=cfg.epochs, cpu_threads=1, progress=False)
    torch_seed(seed)
    wm = OutcomeWorldModel(wcfg)
    train(wm, train_b, tcfg)
    fit_temperature(wm, gate_b)
    torch_seed(seed)
    ver = StaticVerifier(wcfg)
    train(ver, train_b, tcfg)
    fit_temperature(ver, gate_b)
    chosen = _adapt_selection(wm, aud_b, aud_rows)
    adapt_keep = [
        i for i in range(len(aud_rows)) if not aud_rows.is_suite[i] and aud_rows.transition[i] in chosen
    ]
    adapt_rows = subset_rows(aud_rows, adapt_keep)
    acfg = TrainConfig(seed=seed, epochs=cfg.adapt_epochs, cpu_threads=1, progress=False)
    wm2, _ = adapt(wm, rows_to_batch(adapt_rows, feats), trainable=cfg.adapt_trainable, config=acfg)
    quality = {
        "verifier": _quality(ver, aud_b, aud_rows, chosen),
        "world_before": _quality(wm, aud_b, aud_rows, chosen),
        "world_after": _quality(wm2, aud_b, aud_rows, chosen),
    }
    return quality, (len(tr_t), len(gate_t), len(aud_t))


def evaluate_crossfit(
    run_dir: str | Path, config: CrossFitConfig | None = None, progress: bool = True
) -> dict[str, Any]:
    """Static verifier vs world model (before / after one Adapt on audit tasks' public-test feedback),
    K-fold cross-fitted by problem, per seed; features cached once as an artifact of the dataset run."""
    from rsi_workbench.domains.code_repair.tasks import load_humanevalfix
    from rsi_workbench.world.encoders import load_backbone

    cfg = config or CrossFitConfig()
    tasks = {t.task_id: t for t in load_humanevalfix()}
    transitions = load_transitions(run_dir)
    rows_all = transition_rows(transitions, tasks, role="all")
    backbone = load_backbone(cfg.backbone)
    feats = _cached_features(run_dir, backbone, rows_all, progress)
    problems = sorted({t.problem for t in transitions})
    results: dict[str, Any] = {
        "config": cfg.model_dump(),
        "backbone_stats": dict(backbone.stats),
        "seeds": {},
    }
    for seed in cfg.seeds:
        pooled: dict[str, list[dict[str, Any]]] = {"verifier": [], "world_before": [], "world_after": []}
        for split in cross_fit_splits(problems, cfg.k, seed):
            quality, (n_tr, n_gate, n_aud) = _evaluate_fold(
                split, transitions, tasks, feats, backbone.hidden_size, cfg, seed
            )
            for name, q in quality.items():
                pooled[name].append(q)
            if progress:
                print(
                    f"seed {seed} fold {split.fold}: train {n_tr} gate {n_gate} audit {n_aud} transitions",
                    flush=True,
                )
        results["seeds"][str(seed)] = {name: _metrics(parts) for name, parts in pooled.items()}
    return results


def torch_seed(seed: int) -> None:
    import torch

    torch.manual_seed(seed)


def format_crossfit(results: Mapping[str, Any]) -> str:
    """A table: metric x (verifier, world model before/after Adapt), mean +- sd over seeds."""
    seeds = list(results["seeds"].values())
    names = ["verifier", "world_before", "world_after"]
    metrics = [
        "ranking_accuracy",
        "brier_suite",
        "brier_public",
        "ece_suite",
        "nll_suite",
        "runtime_mae_public",
    ]
    lines = [f"{'metric':<20}" + "".join(f"{n:>22}" for n in names)]
    for m in metrics:
        cells = []
        for n in names:
            v = np.array([s[n][m] for s in seeds], dtype=float)
            cells.append(
                f"{np.nanmean(v):>14.4f} +- {np.nanstd(v):.4f}" if np.isfinite(v).any() else f"{'n/a':>22}"
            )
        lines.append(f"{m:<20}" + "".join(f"{c:>22}" for c in cells))
    return "\n".join(lines)
