"""The predictor φ for code repair behind the engine's ``Predictor`` protocol: a cross-fitted set of
world models (or static verifiers) from :mod:`rsi_workbench.world`, one per fold of problems.

Encoding, transition dataset and cross-fitting are the world-model issue's
(:mod:`rsi_workbench.domains.code_repair.world_adapter`): state = program + public tests with their
latest statuses, action = the candidate's unified diff, context = one public test (per-test
5-status readout) or the whole suite (P(all pass), pass fraction, utility of eq. 7). Hidden tests
never enter any text. A task is scored by the model of the split whose *audit* fold holds its
problem: trained on the train folds, temperature fitted on the gate fold, adapted only on online
feedback of other folds' tasks — so cross-fitting holds through adaptation.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import pickle
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from rsi_workbench.agents import Candidate
from rsi_workbench.domains.code_repair import RepairTask
from rsi_workbench.domains.code_repair.binding import RepairState, entropy
from rsi_workbench.domains.code_repair.world_adapter import (
    SUITE_CONTEXT,
    CrossFitSplit,
    Transition,
    TransitionConfig,
    build_transitions,
    cross_fit_splits,
    encode_action,
    encode_state,
    load_transitions,
    problem_of,
    rows_to_batch,
    score_candidates,
    test_context,
    transition_rows,
)
from rsi_workbench.protocol.decisions import derive_seed
from rsi_workbench.protocol.spec import PairRecord, Prediction
from rsi_workbench.records import Run

if TYPE_CHECKING:
    from rsi_workbench.domains.code_repair.world_settings import WorldSettings


# ------------------------------------------------------------------------------------ featurizing
class Featurizer:
    """A text backbone + its feature cache; featurizes one text at a time so a feature never depends
    on which other texts were missing (identical numbers in fresh and resumed runs)."""

    def __init__(self, encoder: str, device: str, path: Path | None):
        from rsi_workbench.world.encoders import FeatureCache, load_backbone

        self.backbone = load_backbone(encoder, device=device if device != "auto" else "cpu", seed=0)
        self.path = path
        if path is not None and path.exists():
            self.cache = FeatureCache.from_bytes(path.read_bytes())
        else:
            self.cache = FeatureCache(self.backbone.fingerprint, self.backbone.hidden_size)
        self._dirty = False

    def seed_from(self, run_dir: Path) -> None:
        """Reuse features a transitions run already computed for this backbone (same fingerprint)."""
        from rsi_workbench.world.encoders import FeatureCache

        run = Run.open(run_dir)
        sha = run.manifest.get(f"feature_cache_{self.backbone.fingerprint}")
        if sha:
            other = FeatureCache.from_bytes(run.artifacts.get(sha))
            for k, v in other.vectors.items():
                self.cache.vectors.setdefault(k, v)
            self._dirty = True

    def world_model(self, predictor: Any) -> Any:
        from rsi_workbench.world.api import WorldModel

        return WorldModel(predictor, self.backbone, self.cache)

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        from rsi_workbench.world.encoders import text_sha

        for t in dict.fromkeys(texts):
            if text_sha(t) not in self.cache.vectors:
                self.cache.featurize(self.backbone, [t])
                self._dirty = True
        return self.cache.lookup([text_sha(t) for t in texts])

    def save(self) -> None:
        if self.path is not None and self._dirty:
            tmp = self.path.with_suffix(f".{os.getpid()}.tmp")  # fanned-out runs save side by side
            tmp.write_bytes(self.cache.to_bytes())
            tmp.replace(self.path)
            self._dirty = False


# ------------------------------------------------------------------------------------ the predictor
class CrossFitPredictor:
    """φ as the engine sees it: one model per cross-fitting split; a task goes to its audit split's model."""

    def __init__(
        self,
        kind: str,
        models: Mapping[int, Any],
        fold_of: Mapping[str, int],
        tasks: Mapping[str, RepairTask],
        feat: Featurizer,
        settings: Mapping[str, Any],
        generation: int = 0,
    ):
        self.kind, self.models, self.fold_of = kind, dict(models), dict(fold_of)
        self.tasks, self.feat, self.settings, self.generation = tasks, feat, dict(settings), generation
        vs = "|".join(f"{f}:{getattr(m, 'version', '')}" for f, m in sorted(self.models.items()))
        tag = "wm" if kind == "world_model" else "sv"
        self.version = f"{tag}-{generation}-{hashlib.sha256(vs.encode()).hexdigest()[:10]}"

    def predict(self, task_id: str, state: RepairState, actions: Sequence[Candidate]) -> list[Prediction]:
        if not actions:
            return []
        task = self.tasks[task_id]
        outs = [{"test_id": o.test_id, "status": o.status.value} for o in state.outcomes]
        st = encode_state(task, state.program, outs)
        ctxs = [SUITE_CONTEXT] + [test_context(t) for t in task.public_tests]
        self.feat([st, *ctxs, *(encode_action(state.program, a.program) for a in actions)])  # one by one
        model = self.models[self.fold_of[task_id]]
        sc = score_candidates(
            self.feat.world_model(model), task, state.program, state.outcomes, [a.program for a in actions]
        )
        out = []
        for i in range(len(actions)):
            probs = [[float(x) for x in p] for p in sc.public_status_probs[i]]
            out.append(
                Prediction(
                    utility_terms={
                        "p_all_pass": float(sc.p_all_pass[i]),
                        "pass_fraction": float(sc.pass_fraction[i]),
                    },
                    version=self.version,
                    probs=probs,
                    uncertainty=float(np.mean([entropy(p) for p in probs])) if probs else None,
                    extra={"fold": self.fold_of[task_id], "fold_version": sc.component_version},
                )
            )
        return out

    def adapt(self, records: Sequence[PairRecord], *, seed: int) -> CrossFitPredictor:
        """Adapt(φ, D_adapt) (eq. 12): each split's model on the public-test feedback of tasks outside
        its audit fold (per-test rows; hidden labels are never observed online), declared roles only."""
        from rsi_workbench.world.train import TrainConfig, adapt

        trans = [
            Transition(
                f"{r.task_id}#c{r.cycle}",
                r.task_id,
                problem_of(r.task_id),
                "online",
                r.state["program"],
                [
                    {k: o[k] for k in ("test_id", "status", "runtime_s", "message")}
                    for o in r.state["outcomes"]
                ],
                r.action["program"],
                [
                    {k: o[k] for k in ("test_id", "status", "runtime_s", "message")}
                    for o in r.observation.detail["outcomes"]
                ],
                [],
            )
            for r in records
        ]
        new = {}
        for f, m in sorted(self.models.items()):
            mine = [t for t in trans if self.fold_of[t.task_id] != f]
            if not mine:
                new[f] = m
                continue
            rows = transition_rows(mine, self.tasks, role="adapt", suite=False)
            cfg = TrainConfig(
                epochs=int(self.settings["adapt_epochs"]),
                seed=derive_seed(seed, f) % 2**31,
                device="cpu",
                progress=False,
                cpu_threads=int(self.settings.get("threads", 1)),
                **(_lr_fields(self.settings.get("lr")) if self.kind == "world_model" else {}),
            )
            new[f], _ = adapt(m, rows_to_batch(rows, self.feat), tuple(self.settings["adapt_trainable"]), cfg)
        return CrossFitPredictor(
            self.kind, new, self.fold_of, self.tasks, self.feat, self.settings, self.generation + 1
        )

    def adapt_cost(self, n_records: int) -> float:
        """ĉ_adapt: rows × epochs × models × the declared cost per row-epoch (update-compute units)."""
        per = float(self.settings["adapt_cost_per_row_epoch"])
        return n_records * int(self.settings["adapt_epochs"]) * len(self.models) * per

    def to_bytes(self) -> bytes:
        import torch

        from rsi_workbench.world.checkpoint import checkpoint_bytes

        buf = io.BytesIO()
        torch.save(
            {
                "kind": self.kind,
                "generation": self.generation,
                "fold_of": self.fold_of,
                "settings": json.dumps(self.settings, sort_keys=True),
                "models": {int(f): checkpoint_bytes(m) for f, m in self.models.items()},
            },
            buf,
        )
        return buf.getvalue()


def load_predictor_bytes(data: bytes, template: Any) -> Any:
    """Rebuild a :class:`CrossFitPredictor` from ``to_bytes()``, sharing the template's featurizer
    (a template with its own ``load_bytes``, e.g. the LM readout, rebuilds itself)."""
    if hasattr(template, "load_bytes"):
        return template.load_bytes(data)
    import torch

    from rsi_workbench.records import RunError
    from rsi_workbench.world.checkpoint import load_checkpoint_bytes

    try:  # plain dicts, strings, numbers and bytes only: an artifact's bytes never run code
        d = torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as e:
        raise RunError(
            f"predictor artifact: not a plain predictor checkpoint (refused to unpickle it): {e}"
        ) from None
    models = {int(f): load_checkpoint_bytes(b) for f, b in d["models"].items()}
    return CrossFitPredictor(
        d["kind"],
        models,
        d["fold_of"],
        template.tasks,
        template.feat,
        json.loads(d["settings"]),
        d["generation"],
    )


# ------------------------------------------------------------------------------------ training
def _transitions(
    w: WorldSettings,
    eval_tasks: Sequence[RepairTask],
    env: Any,
    out: Path,
    *,
    source: str | Path | None = None,
    workers: int = 1,
) -> tuple[list[Transition], dict[str, RepairTask]]:
    """The E0 training transitions: an existing world-transitions run (``world.transitions``, read
    only) or one built (resumably) in ``<out>/transitions`` for the batch plus ``train_pool`` extra
    tasks of the task file ``source`` (None: HumanEvalFix), executed by ``workers`` processes."""
    from rsi_workbench.domains.code_repair import load_humanevalfix, load_task_file

    pool_src = load_task_file(source) if source else load_humanevalfix()
    by_id = {t.task_id: t for t in pool_src}
    if w.transitions:
        trans = load_transitions(w.transitions)
    else:
        ids = {t.task_id for t in eval_tasks}
        extra = [t for t in pool_src if t.task_id not in ids][: w.train_pool]
        cfg = TransitionConfig(k=4, injected_per_problem=w.injected_per_problem, seed=0, workers=workers)
        build_transitions(
            out / "transitions",
            [*eval_tasks, *extra],
            cfg,
            sandbox=env.sandbox,
            progress=True,
            executor=env.executor,  # the experiment's executor block (None: a pool of sandbox.workers)
        )
        trans = load_transitions(out / "transitions")
    return trans, by_id


def _train_fold(
    run: Run,
    w: WorldSettings,
    kind: str,
    seed: int,
    split: CrossFitSplit,
    trans: Sequence[Transition],
    all_tasks: Mapping[str, RepairTask],
    problems: Sequence[str],
    feat: Featurizer,
    threads: int,
) -> str:
    """Train φ_0 of ``kind`` for one cross-fitting split (train folds, plus extra-pool problems), fit
    its temperature on the gate fold, store the checkpoint and a ``predictor_trained`` event; its sha."""
    import torch

    from rsi_workbench.world.checkpoint import save_checkpoint
    from rsi_workbench.world.model import OutcomeWorldModel, WorldModelConfig
    from rsi_workbench.world.train import TrainConfig, fit_temperature, paper_stages, train
    from rsi_workbench.world.verifier import StaticVerifier

    f = split.fold
    # problems outside this batch (the extra training pool) can only ever be training data
    role = {t.problem: ("train" if t.problem not in problems else split.role(t.problem)) for t in trans}
    tr = [t for t in trans if role[t.problem] == "train"]
    gate = [t for t in trans if role[t.problem] == "gate" and t.source == "humanevalfix"]
    assert not ({t.problem for t in tr} & (split.audit | split.gate)), "fold leak into training"
    train_rows = transition_rows(tr, all_tasks, role="train")
    gate_rows = transition_rows(gate, all_tasks, role="gate")
    batch = rows_to_batch(train_rows, feat)
    torch.manual_seed(derive_seed("init", seed, f, kind) % 2**31)
    mcfg = WorldModelConfig(input_dim=feat.backbone.hidden_size)
    model = OutcomeWorldModel(mcfg) if kind == "world_model" else StaticVerifier(mcfg)
    tcfg = TrainConfig(
        epochs=w.train_epochs,
        seed=derive_seed("train", seed, f) % 2**31,
        device="cpu",
        progress=False,
        cpu_threads=threads,
        **(_recipe(w) if kind == "world_model" else {}),
    )
    core = np.array([tr[i].source == "humanevalfix" for i in train_rows.transition])
    rep = train(
        model, batch, tcfg, stages=paper_stages(batch, w.train_epochs, core=core) if tcfg.staged else None
    )
    temp = fit_temperature(model, rows_to_batch(gate_rows, feat)) if len(gate_rows) else 1.0
    sha = save_checkpoint(
        model, run.artifacts, batch.subset(np.arange(min(16, len(batch)))), name=f"{kind}-fold{f}.pt"
    )
    run.append(
        "predictor_trained",
        {
            "kind": kind,
            "fold": f,
            "artifact": sha,
            "version": model.version,
            "train_transitions": len(tr),
            "gate_transitions": len(gate),
            "train_rows": len(train_rows),
            "temperature": temp,
            "final_loss": rep.history[-1] if rep.history else {},
            "recipe": _recipe(w) if kind == "world_model" else {},  # the verifier: cross-entropy only
            "stages": list(rep.stages),
            "audit_problems": sorted(split.audit),
            "gate_problems": sorted(split.gate),
            "gate_or_final_labels_used": False,
            "hidden_tests_in_context": False,
        },
    )
    run.commit()
    return sha


def _recipe(w: Any) -> dict[str, Any]:
    """The world model's TrainConfig fields of the ``world:`` recipe switches (listwise KL, staged)."""
    out: dict[str, Any] = {"staged": bool(w.staged)}
    if w.lr is not None:  # head-regime learning rates (world.lr); absent: the paper's defaults
        out.update(w.lr.train_fields())
    if w.listwise is not None:
        lw = w.listwise
        out.update(listwise_weight=lw.weight, listwise_tau=lw.tau, listwise_pool_size=lw.pool_size)
    return out


def _lr_fields(lr: Any) -> dict[str, Any]:
    """TrainConfig's learning-rate fields from a stored ``world.lr`` block (a dict or None)."""
    if not lr:
        return {}
    return {f"lr_{k}": float(v) for k, v in dict(lr).items() if v is not None}


def trained_predictor(
    w: WorldSettings,
    kind: str,
    seed: int,
    tasks: Sequence[RepairTask],
    env: Any,
    out: Path,
    *,
    threads: int = 1,
    source: str | Path | None = None,
    workers: int = 1,
) -> CrossFitPredictor:
    """Train (or load) the cross-fitted φ_0 of ``kind`` for ``seed`` on the ``world:`` block ``w``
    (torch ``threads``; training transitions: :func:`_transitions` of ``source`` and ``workers``);
    checkpoints are artifacts of the training run ``<out>/predictors/seed<s>`` so a resumed
    experiment never retrains."""
    from tqdm.auto import tqdm

    from rsi_workbench.world.checkpoint import load_checkpoint_bytes

    feat = _featurizer(w.encoder, w.device, out)
    eval_ids = sorted(t.task_id for t in tasks)
    settings = {**w.model_dump(mode="json"), "threads": threads}
    run = Run.create(
        out / "predictors" / f"seed{seed}",
        {"seed": seed, "world": settings, "tasks": eval_ids},
        kind="code_repair_training",
        exist_ok=True,
    )
    with run:
        done = {(e.payload["kind"], e.payload["fold"]): e.payload for e in run.events("predictor_trained")}
        trans: list[Transition] | None = None
        all_tasks: dict[str, RepairTask] = {t.task_id: t for t in tasks}
        problems = sorted({problem_of(t) for t in eval_ids})
        splits = cross_fit_splits(problems, w.folds, seed)
        fold_of = {t: next(s.fold for s in splits if problem_of(t) in s.audit) for t in eval_ids}
        models: dict[int, Any] = {}
        for split in tqdm(splits, desc=f"train {kind} (seed {seed})", unit="fold", leave=False):
            f = split.fold
            if (kind, f) in done:
                models[f] = load_checkpoint_bytes(run.artifacts.get(done[(kind, f)]["artifact"]))
                continue
            if trans is None:
                trans, all_tasks = _transitions(w, tasks, env, out, source=source, workers=workers)
                if w.transitions:
                    feat.seed_from(Path(w.transitions))
            sha = _train_fold(run, w, kind, seed, split, trans, all_tasks, problems, feat, threads)
            feat.save()
            models[f] = load_checkpoint_bytes(run.artifacts.get(sha))
    return CrossFitPredictor(
        kind, models, fold_of, all_tasks if trans else {t.task_id: t for t in tasks}, feat, settings
    )


_FEATURIZERS: dict[tuple[str, str], Featurizer] = {}


def _featurizer(encoder: str, device: str, out: Path) -> Featurizer:
    key = (encoder, str(out))
    if key not in _FEATURIZERS:
        safe = encoder.replace("/", "_")
        _FEATURIZERS[key] = Featurizer(encoder, device, out / f"features-{safe}.bin")
    return _FEATURIZERS[key]


def save_features() -> None:
    for f in _FEATURIZERS.values():
        f.save()


def deterministic_torch(threads: int) -> None:
    """Fixed torch threads and deterministic algorithms, so a resumed run repeats the same numbers."""
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is a declared extra
        return
    torch.set_num_threads(threads)
    torch.use_deterministic_algorithms(True, warn_only=True)
