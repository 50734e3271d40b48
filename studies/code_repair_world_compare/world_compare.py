"""Encoders x training recipes, cross-fitted against the capacity-matched static verifier.

For each encoder (``minilm``, ``lm:default``, ...) and recipe variant (``base``; ``listwise``: the
listwise KL over each state's candidate pool, tau = 0.1; ``staged``: initial -> semantic (heads,
joint) -> expanded -> incumbent; ``both``) the world model is trained on the training folds of the
K-fold cross-fitting by problem (:func:`~rsi_workbench.domains.code_repair.world_crossfit.cross_fit_splits`), its temperature fitted
on the gate fold, and scored on the audit fold's HumanEvalFix states: ranking accuracy (suite
utility within a state), 5-class Brier, ECE and NLL on the hidden suite, 5-class Brier on public
tests. The static verifier (cross-entropy only, same features, same folds) is trained once per
encoder, seed and fold. No Adapt step here (see ``world_adapter evaluate`` for that).

Transitions: a ``world_adapter build`` run directory (``--coder llm`` for the LLM coder's), a
code-repair experiment directory (its recorded valid candidates, :mod:`.world_from_experiment`), or a
JSONL file with one :class:`~rsi_workbench.domains.code_repair.world_transitions.Transition` per line (its field names); several
sources joined with commas are read together. Features are cached on disk per backbone fingerprint (:mod:`rsi_workbench.world.feature_store`).

``python -m studies.code_repair_world_compare.world_compare TRANSITIONS --out results.json``
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import fields
from pathlib import Path
from typing import Any

import numpy as np

from rsi_workbench.config import StrictModel
from rsi_workbench.domains.code_repair.world_crossfit import (
    CrossFitSplit,
    _fold_transitions,
    _metrics,
    _quality,
    cross_fit_splits,
)
from rsi_workbench.domains.code_repair.world_rows import (
    check_no_leakage,
    rows_to_batch,
    transition_rows,
)
from rsi_workbench.domains.code_repair.world_transitions import Transition, load_transitions
from studies.code_repair_world_compare.world_from_experiment import (
    is_experiment_dir,
    transitions_from_experiment,
)

VARIANTS: dict[str, dict[str, Any]] = {
    "base": {},
    "listwise": {"listwise": True},
    "staged": {"staged": True},
    "both": {"listwise": True, "staged": True},
}
METRICS = ("ranking_accuracy", "brier_suite", "ece_suite", "nll_suite", "brier_public")


class CompareConfig(StrictModel):
    """What is compared and how (frozen into the results JSON)."""

    encoders: tuple[str, ...] = ("minilm", "lm:default")
    variants: tuple[str, ...] = ("base", "listwise", "staged", "both")
    seeds: tuple[int, ...] = (0, 1, 2)
    k: int = 4
    epochs: int = 10
    listwise_weight: float = 0.2  # not given in the paper; the hinge's weight
    listwise_tau: float = 0.1
    pool_size: int | None = 4  # the paper's pools: exactly four distinct candidates of one state
    max_problems: int | None = None  # subsample: this many problems (seeded), all their states
    features_dir: str | None = None  # default: $RSI_WORKBENCH_FEATURES or ~/.cache/rsi_workbench/features


def read_transitions(path: str | Path) -> list[Transition]:
    """A ``world_adapter build`` run directory, a code-repair experiment directory, or a JSONL file of
    :class:`Transition` records; comma-joined sources are concatenated."""
    if "," in str(path):
        return [t for part in str(path).split(",") for t in read_transitions(part)]
    p = Path(path)
    if is_experiment_dir(p):
        return transitions_from_experiment(p)[0]
    if p.is_dir():
        return load_transitions(p)
    names = {f.name for f in fields(Transition)}
    out = []
    for i, line in enumerate(p.read_text().splitlines()):
        if not line.strip():
            continue
        d = json.loads(line)
        missing = names - set(d)
        if missing:
            raise ValueError(f"{p}:{i + 1}: transition lacks {sorted(missing)}")
        out.append(Transition(**{k: d[k] for k in names}))
    return out


def subsample(transitions: Sequence[Transition], max_problems: int | None, seed: int = 0) -> list[Transition]:
    """Every transition of ``max_problems`` problems chosen by a seeded hash order (all if None)."""
    probs = sorted({t.problem for t in transitions})
    if max_problems is None or max_problems >= len(probs):
        return list(transitions)
    keep = set(
        sorted(probs, key=lambda p: hashlib.sha256(f"sub{seed}:{p}".encode()).hexdigest())[:max_problems]
    )
    return [t for t in transitions if t.problem in keep]


def _train_config(cfg: CompareConfig, seed: int, variant: str) -> Any:
    from rsi_workbench.world.train import TrainConfig

    v = VARIANTS[variant]
    return TrainConfig(
        seed=seed,
        epochs=cfg.epochs,
        cpu_threads=1,
        progress=False,
        device="cpu",
        listwise_weight=cfg.listwise_weight if v.get("listwise") else 0.0,
        listwise_tau=cfg.listwise_tau,
        listwise_pool_size=cfg.pool_size,
        staged=bool(v.get("staged")),
    )


def _fold(
    split: CrossFitSplit,
    transitions: Sequence[Transition],
    tasks: Mapping[str, Any],
    feats: Callable[[Sequence[str]], np.ndarray],
    input_dim: int,
    cfg: CompareConfig,
    seed: int,
) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """Audit-fold quality of the verifier and of every world-model variant, and the fold's facts."""
    import torch

    from rsi_workbench.world.losses import listwise_pools, observed_utility_of
    from rsi_workbench.world.model import OutcomeWorldModel, WorldModelConfig
    from rsi_workbench.world.train import fit_temperature, paper_stages, train
    from rsi_workbench.world.verifier import StaticVerifier

    tr_t, gate_t, aud_t = _fold_transitions(split, transitions)
    train_rows = transition_rows(tr_t, tasks, role="train")
    check_no_leakage(train_rows, tasks, tr_t)
    gate_rows = transition_rows(gate_t, tasks, role="gate")
    aud_rows = transition_rows(aud_t, tasks, role="audit")
    train_b, gate_b, aud_b = (rows_to_batch(r, feats) for r in (train_rows, gate_rows, aud_rows))
    wcfg = WorldModelConfig(input_dim=input_dim)
    torch.manual_seed(seed)
    ver = StaticVerifier(wcfg)
    train(ver, train_b, _train_config(cfg, seed, "base"))
    fit_temperature(ver, gate_b)
    quality = {"verifier": _quality(ver, aud_b, aud_rows, set())}
    core = np.array([tr_t[i].source == "humanevalfix" for i in train_rows.transition])
    stages = paper_stages(train_b, cfg.epochs, core=core)
    suite = train_b.is_suite
    pools, skipped = listwise_pools(train_b.group[suite], observed_utility_of(train_b)[suite], cfg.pool_size)
    facts: dict[str, Any] = {"train": len(tr_t), "gate": len(gate_t), "audit": len(aud_t)}
    facts["listwise_pools"] = {"pools": len(pools), **skipped}
    for variant in cfg.variants:
        torch.manual_seed(seed)
        wm = OutcomeWorldModel(wcfg)
        rep = train(wm, train_b, _train_config(cfg, seed, variant), stages=stages)
        fit_temperature(wm, gate_b)
        quality[variant] = _quality(wm, aud_b, aud_rows, set())
        if rep.stages:
            facts[f"stages_{variant}"] = [(s["stage"], s["part"], s["rows"], s["epochs"]) for s in rep.stages]
    return quality, facts


def compare(
    transitions_path: str | Path, config: CompareConfig | None = None, progress: bool = True
) -> dict[str, Any]:
    """Cross-fitted metrics per encoder x (verifier, variants), per seed; see the module docstring."""
    from rsi_workbench.domains.code_repair.tasks import load_humanevalfix
    from rsi_workbench.world.encoders import load_backbone
    from rsi_workbench.world.feature_store import DiskFeatures

    cfg = config or CompareConfig()
    tasks = {t.task_id: t for t in load_humanevalfix()}
    every = read_transitions(transitions_path)
    transitions = subsample(every, cfg.max_problems)
    rows_all = transition_rows(transitions, tasks, role="all")
    texts = list(dict.fromkeys(rows_all.state + rows_all.action + rows_all.context + rows_all.outcome))
    problems = sorted({t.problem for t in transitions})
    res: dict[str, Any] = {
        "config": cfg.model_dump(),
        "transitions_path": str(transitions_path),
        "transitions": {"all": len(every), "used": len(transitions), "problems": len(problems)},
        "texts": len(texts),
        "encoders": {},
    }
    for enc in cfg.encoders:
        t0 = time.time()
        bb = load_backbone(enc, device="cpu")
        store = DiskFeatures(bb, cfg.features_dir, progress=progress)
        store(texts)
        info: dict[str, Any] = {
            "fingerprint": bb.fingerprint,
            "dim": bb.hidden_size,
            "encoded": store.computed,
        }
        info["encode_s"] = round(time.time() - t0, 1)
        t1 = time.time()
        per_seed: dict[str, Any] = {}
        for seed in cfg.seeds:
            pooled: dict[str, list[dict[str, Any]]] = {}
            facts = []
            for split in cross_fit_splits(problems, cfg.k, seed):
                q, f = _fold(split, transitions, tasks, store, bb.hidden_size, cfg, seed)
                facts.append(f)
                for name, part in q.items():
                    pooled.setdefault(name, []).append(part)
                if progress:
                    print(
                        f"{enc} seed {seed} fold {split.fold}: {f['train']}/{f['gate']}/{f['audit']}",
                        flush=True,
                    )
            per_seed[str(seed)] = {"metrics": {n: _metrics(p) for n, p in pooled.items()}, "folds": facts}
        info["train_s"] = round(time.time() - t1, 1)
        info["seeds"] = per_seed
        res["encoders"][enc] = info
        del bb, store
    return res


def summary(res: Mapping[str, Any]) -> dict[str, dict[str, dict[str, tuple[float, float]]]]:
    """encoder -> model -> metric -> (mean, sd over seeds)."""
    out: dict[str, dict[str, dict[str, tuple[float, float]]]] = {}
    for enc, info in res["encoders"].items():
        seeds = [s["metrics"] for s in info["seeds"].values()]
        out[enc] = {}
        for model in seeds[0]:
            out[enc][model] = {}
            for m in METRICS:
                v = np.array([s[model][m] for s in seeds], dtype=float)
                out[enc][model][m] = (float(np.nanmean(v)), float(np.nanstd(v)))
    return out


def merge_results(parts: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """One result from several runs of :func:`compare` (e.g. one encoder or seed per process): the
    encoders side by side, each with the union of its seeds; the runs must agree on everything
    else (config apart from encoders and seeds, transitions)."""

    def key(r: Mapping[str, Any]) -> Any:
        return {**r["config"], "encoders": (), "seeds": ()}, r["transitions"], r["transitions_path"]

    base = dict(parts[0])
    if any(key(r) != key(base) for r in parts[1:]):
        raise ValueError("merge_results: the runs differ in config or transitions")
    encoders: dict[str, Any] = {}
    for r in parts:
        for enc, info in r["encoders"].items():
            if enc not in encoders:
                encoders[enc] = {**info, "seeds": dict(info["seeds"])}
                continue
            if set(info["seeds"]) & set(encoders[enc]["seeds"]):
                raise ValueError(f"merge_results: {enc} seed(s) {sorted(info['seeds'])} appear twice")
            encoders[enc]["seeds"].update(info["seeds"])
            for k in ("encode_s", "train_s", "encoded"):
                encoders[enc][k] = encoders[enc].get(k, 0) + info.get(k, 0)
    seeds = sorted({int(s) for info in encoders.values() for s in info["seeds"]})
    base["encoders"] = encoders
    base["config"] = {**base["config"], "encoders": list(encoders), "seeds": seeds}
    return base


def format_compare(res: Mapping[str, Any]) -> str:
    """A markdown table: encoder x model rows, metric columns, mean ± sd over seeds."""
    head = ["ranking acc ↑", "Brier suite ↓", "ECE suite ↓", "NLL suite ↓", "Brier public ↓"]
    lines = ["| encoder | model | " + " | ".join(head) + " |", "|---|---|" + "---:|" * len(head)]
    for enc, models in summary(res).items():
        for model, ms in models.items():
            name = "static verifier" if model == "verifier" else f"world model, {model}"
            cells = [f"{ms[m][0]:.3f} ± {ms[m][1]:.3f}" for m in METRICS]
            lines.append(f"| {enc} | {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    import argparse

    ap = argparse.ArgumentParser(prog="world_compare", description=__doc__.split("\n")[0])
    ap.add_argument(
        "transitions",
        nargs="?",
        help="a world_adapter build run dir, an experiment dir or a JSONL file of transitions (a,b: both)",
    )
    ap.add_argument("--encoders", default="minilm,lm:default")
    ap.add_argument("--variants", default="base,listwise,staged,both")
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--max-problems", type=int, default=None, help="subsample: this many problems")
    ap.add_argument("--pool-size", type=int, default=4, help="listwise pools of exactly N (0: any >= 2)")
    ap.add_argument("--listwise-weight", type=float, default=0.2)
    ap.add_argument("--features-dir", default=None)
    ap.add_argument("--out", default=None, help="write the results JSON here")
    ap.add_argument("--table", nargs="+", default=None, help="print the table of result JSONs (merged)")
    a = ap.parse_args(argv)
    if a.table:
        print(format_compare(merge_results([json.loads(Path(f).read_text()) for f in a.table])))
        return
    if not a.transitions:
        ap.error("a transitions run dir or JSONL file is needed")
    cfg = CompareConfig(
        encoders=tuple(a.encoders.split(",")),
        variants=tuple(a.variants.split(",")),
        seeds=tuple(int(x) for x in a.seeds.split(",")),
        epochs=a.epochs,
        max_problems=a.max_problems,
        pool_size=a.pool_size or None,
        listwise_weight=a.listwise_weight,
        features_dir=a.features_dir,
    )
    unknown = set(cfg.variants) - set(VARIANTS)
    if unknown:
        raise SystemExit(f"unknown variants {sorted(unknown)}; choose from {sorted(VARIANTS)}")
    res = compare(a.transitions, cfg)
    if a.out:
        Path(a.out).write_text(json.dumps(res, indent=1, default=float))
    print(format_compare(res))


if __name__ == "__main__":
    main()
