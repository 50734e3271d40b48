"""The LM-likelihood readout as the code-repair experiment's protocol predictor:
methods ``lm_fixed`` and ``lm_adaptive`` with a ``world.lm_readout`` block.

:class:`CrossFitReadout` holds one :class:`~rsi_workbench.domains.code_repair.lm_ranker.
ReadoutPredictor` per task fold. The readout of fold ``f`` is fitted on the pooled candidates of a
pools directory (``rsi-workbench tasks pools``; label: the candidate passes every hidden test) of
the tasks outside fold ``f``, so a task is ranked by a readout that never saw its candidates' labels
(pooled tasks outside the experiment always train). φ's prediction for a candidate is its P(pass);
its per-test class
probabilities (what reliability, eq. 10, scores against the public tests' statuses) put P(pass) on
AC and the rest on WA for every public test, a readout of "all pass" read per test; its
``pass_fraction`` term (eq. 7's second utility term) is P(pass) too, a lower bound of the expected
pass fraction that keeps the utility monotone in P(pass). Adaptation (eq. 12) refits each fold's readout on its training rows plus the records'
executed candidates of tasks outside the fold (label: the public suite's all-pass; hidden tests
are never observed online).

LM scores come from one :class:`~rsi_workbench.domains.code_repair.lm_ranker.LMScorer` per
experiment directory, cached on disk in ``<out>/lm_scores.jsonl`` keyed by (model identity, prompt,
program), so every seed, method and round that meets a candidate again reuses its score; the pools
directory's ``lm_scores.jsonl`` (or ``scores_from``) seeds it where the keys match (the model's
identity is part of the key, so another model's scores are never used).
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rsi_workbench.domains.code_repair.lm_ranker import LMScorer, ReadoutPredictor
from rsi_workbench.protocol.spec import PairRecord, Prediction

Row = tuple[dict[str, float], float]


class CrossFitReadout:
    """φ for the LM methods: one readout per task fold (module doc); ``fold_of`` maps each of the
    experiment's tasks to its fold; ``train`` holds each fold's (features, label) training rows."""

    def __init__(
        self,
        readouts: Mapping[int, ReadoutPredictor],
        fold_of: Mapping[str, int],
        tasks: Mapping[str, Any],
        scorer: LMScorer | None,
        *,
        use_lm: bool = True,
        generation: int = 0,
    ):
        self.readouts, self.fold_of = dict(readouts), dict(fold_of)
        self.tasks, self.scorer, self.use_lm, self.generation = tasks, scorer, use_lm, generation
        vs = "|".join(f"{f}:{r.version}" for f, r in sorted(self.readouts.items()))
        tag = "lmr" if use_lm else "fr"
        self.version = f"{tag}-{generation}-{hashlib.sha256(vs.encode()).hexdigest()[:10]}"

    def _readout(self, task_id: str) -> ReadoutPredictor:
        return self.readouts[self.fold_of[task_id]]

    def _wrap(self, task_id: str, preds: Sequence[Prediction]) -> list[Prediction]:
        n_public = len(getattr(self.tasks[task_id], "public_tests", ()) or ())
        out = []
        for p in preds:
            q = float(p.utility_terms["p_all_pass"])
            out.append(
                Prediction(
                    utility_terms={"p_all_pass": q, "pass_fraction": q},
                    version=self.version,
                    probs=[[q, 1.0 - q, 0.0, 0.0, 0.0] for _ in range(n_public)],
                    extra={**p.extra, "fold": self.fold_of[task_id]},
                )
            )
        return out

    def predict(self, task_id: str, state: Any, actions: Sequence[Any]) -> list[Prediction]:
        """P(pass) of each candidate from its task fold's readout (one scoring call per state)."""
        return self._wrap(task_id, self._readout(task_id).predict(task_id, state, actions))

    def predict_many(self, items: Sequence[tuple[str, Any, Sequence[Any]]]) -> list[list[Prediction]]:
        """``predict`` for several tasks' candidates (the batched interface); records nothing."""
        return [self.predict(t, s, acts) for t, s, acts in items]

    def adapt(self, records: Sequence[PairRecord], *, seed: int) -> CrossFitReadout:
        """φ' of eq. 12: each fold's readout refitted on its rows plus the records of the tasks
        outside the fold (label: the public suite's all-pass); deterministic."""
        new: dict[int, ReadoutPredictor] = {}
        for f, r in sorted(self.readouts.items()):
            mine = [x for x in records if self.fold_of.get(x.task_id) != f]
            new[f] = r.adapt(mine, seed=seed) if mine else r
        return CrossFitReadout(
            new, self.fold_of, self.tasks, self.scorer, use_lm=self.use_lm, generation=self.generation + 1
        )

    def adapt_cost(self, n_records: int) -> float:
        """ĉ_adapt: one scoring pass per record (cached: the records' candidates were scored when
        predicted); the logistic refits are negligible beside it."""
        return float(n_records) if self.use_lm else 0.0

    def to_bytes(self) -> bytes:
        """Weights and training rows of every fold, the folds and the generation (JSON)."""
        return json.dumps(
            {
                "use_lm": self.use_lm,
                "generation": self.generation,
                "fold_of": self.fold_of,
                "folds": {
                    str(f): {"weights": r.weights, "train": [[row, y] for row, y in r.train]}
                    for f, r in sorted(self.readouts.items())
                },
            },
            sort_keys=True,
        ).encode()

    def load_bytes(self, data: bytes) -> CrossFitReadout:
        """The readout saved by :meth:`to_bytes`, sharing this one's tasks and scorer."""
        d = json.loads(data)
        readouts = {
            int(f): ReadoutPredictor(
                self.tasks,
                self.scorer,
                v["weights"],
                use_lm=bool(d["use_lm"]),
                train=[(dict(row), float(y)) for row, y in v["train"]],
            )
            for f, v in d["folds"].items()
        }
        return CrossFitReadout(
            readouts,
            {str(k): int(v) for k, v in d["fold_of"].items()},
            self.tasks,
            self.scorer,
            use_lm=bool(d["use_lm"]),
            generation=int(d["generation"]),
        )


def task_folds(task_ids: Sequence[str], folds: int, seed: int) -> dict[str, int]:
    """Each task's fold: the sorted ids shuffled by ``seed``, dealt round-robin into ``folds``."""
    order = sorted(task_ids)
    random.Random(f"lm-readout-folds|{seed}").shuffle(order)
    k = min(folds, len(order))
    return {t: i % k for i, t in enumerate(order)}


_SCORERS: dict[tuple[str, str], LMScorer] = {}


def experiment_scorer(settings: Any, out: Path) -> LMScorer:
    """The experiment directory's scorer (one per directory and model, loaded on the first miss),
    its disk cache ``<out>/lm_scores.jsonl`` seeded from the pools' score cache (module doc)."""
    from rsi_workbench.models import identity_of

    key = (str(out), json.dumps(identity_of(settings.model), sort_keys=True, default=str))
    if key not in _SCORERS:
        scorer = LMScorer.from_config(
            settings.model, Path(out) / "lm_scores.jsonl", where="world.lm_readout.model"
        )
        seed = settings.scores_from or Path(settings.pools) / "lm_scores.jsonl"
        if Path(seed).exists():
            scorer.seed_from(seed)
        _SCORERS[key] = scorer
    return _SCORERS[key]


def training_rows(
    settings: Any, tasks_by_id: Mapping[str, Any], scorer: LMScorer | None
) -> dict[str, list[Row]]:
    """Per pooled task of ``settings.pools``, the (features, fix label) rows of its pooled candidates."""
    from rsi_workbench.domains.code_repair.pools import load_pools, pooled_candidates
    from rsi_workbench.domains.code_repair.rank_pools import lm_features

    data, rows = load_pools(Path(settings.pools))
    pooled = pooled_candidates(data)
    missing = sorted(t for t in pooled if t not in tasks_by_id)
    if missing:
        raise ValueError(
            f"world.lm_readout.pools: {settings.pools} pools tasks {missing[:3]} that the task source "
            "does not hold (the readout trains on pools of the experiment's own task source)"
        )
    feats = lm_features(rows, pooled, tasks_by_id, scorer if settings.use_lm else None)
    return {
        t: [(dict(feats[t][i]), float(rows[t]["candidates"][i]["fix"])) for i in sorted(feats[t])]
        for t in sorted(feats)
    }


def lm_readout_predictor(
    s: Any,
    seed: int,
    tasks: Sequence[Any],
    out: Path,
    *,
    source: str | Path | None = None,
    env: Any = None,
) -> CrossFitReadout:
    """φ_0 of ``lm_fixed`` / ``lm_adaptive`` (and the ``features_*`` methods) for ``seed`` from the
    ``world.lm_readout`` block ``s`` (:class:`~.world_settings.LMReadoutSettings`): readouts
    cross-fitted over the experiment's tasks (folds seeded by ``seed``) of the task file ``source``
    (None: HumanEvalFix), fitted on the pools' candidates (module doc) or, with ``train_on:
    injected``, on candidates of bugs injected into the references (:mod:`.injected_training`,
    executed with the experiment environment ``env``'s sandbox)."""
    from rsi_workbench.domains.code_repair import load_humanevalfix, load_task_file

    by_id = {t.task_id: t for t in (load_task_file(source) if source else load_humanevalfix())}
    scorer = experiment_scorer(s, out) if s.use_lm else None
    if getattr(s, "train_on", "pools") == "injected":
        from rsi_workbench.domains.code_repair.injected_training import injected_training_rows

        if s.use_lm or env is None:
            raise ValueError("train_on: injected: the features readout (use_lm: false) with an environment")
        per_task = injected_training_rows(s.injected, by_id, out, env)
    else:
        per_task = training_rows(s, by_id, scorer)
    fold_of = task_folds([t.task_id for t in tasks], s.folds, seed)
    readouts = {
        f: ReadoutPredictor.fit(
            by_id,
            scorer,
            [row for t, rs in per_task.items() if fold_of.get(t, -1) != f for row in rs],
            use_lm=s.use_lm,
        )
        for f in sorted(set(fold_of.values()))
    }
    return CrossFitReadout(readouts, fold_of, by_id, scorer, use_lm=s.use_lm)


__all__ = ["CrossFitReadout", "experiment_scorer", "lm_readout_predictor", "task_folds", "training_rows"]
