"""The predictor φ for code repair behind the engine's ``Predictor`` protocol: a cross-fitted set of
world models (or static verifiers) from :mod:`rsi_workbench.world`, one per fold of problems.

What is encoded (eq. 2–5): the state s_t is the kept program with its public tests' latest
statuses; the action a_t is the candidate's unified diff; the context c is one public test (per-test
rows, 5-class status readout) or the whole public suite (suite row: P(all pass), pass fraction).
Hidden tests never enter any text. K-fold cross-fitting by problem: a task is always scored by the
fold model whose training, calibration and adaptation data exclude that task.
"""

from __future__ import annotations

import hashlib
import io
import json
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from rsi_workbench.agents import Candidate
from rsi_workbench.domains.code_repair import (
    MutationCoder,
    RepairFeedback,
    RepairTask,
    TestOutcome,
    inject_bugs,
)
from rsi_workbench.domains.code_repair.signature import render_before, render_suite
from rsi_workbench.protocol.code_repair.binding import (
    STATUS_INDEX,
    CodeRepairEnvironment,
    RepairState,
    entropy,
)
from rsi_workbench.protocol.decisions import derive_seed
from rsi_workbench.protocol.spec import PairRecord, Prediction
from rsi_workbench.records import Run

if TYPE_CHECKING:
    from rsi_workbench.protocol.code_repair.experiment import Config


# ------------------------------------------------------------------------------------ rendering
def render_state(task: RepairTask, program: str, outcomes: Sequence[Any]) -> str:
    """s_t: task, spec, the kept program and its public tests' latest statuses (no hidden tests)."""
    res = "\n".join(f"{_get(o, 'test_id')}: {_status(o)}" for o in outcomes)
    return render_before(task.task_id, program, task.prompt) + "\nPublic test results:\n" + res


def render_action(diff: str) -> str:
    return "Candidate action:\n" + diff


def render_contexts(task: RepairTask) -> list[str]:
    """One context per public test, then the whole public suite (the suite row)."""
    per_test = ["Public test:\n" + render_suite([t]) for t in task.public_tests]
    return per_test + ["Official public test suite:\n" + render_suite(task.public_tests)]


def render_outcome(outcomes: Sequence[Any]) -> str:
    """The observed next state for the EMA target: statuses, messages, runtimes — never the code."""
    return "\n".join(
        f"{_get(o, 'test_id')}: {_status(o)} {float(_get(o, 'runtime_s')):.2f}s {str(_get(o, 'message'))[:120]}"
        for o in outcomes
    )


def _get(o: Any, k: str) -> Any:
    return o[k] if isinstance(o, Mapping) else getattr(o, k)


def _status(o: Any) -> str:
    s = _get(o, "status")
    return str(getattr(s, "value", s))


def suite_label(labels: Sequence[int]) -> int:
    """Whole-suite status: AC when every test passes, else the first failing test's status."""
    return next((x for x in labels if x != 0), 0)


@dataclass
class Rows:
    """Texts and labels of transition rows (n_public per-test rows + 1 suite row per candidate)."""

    state: list[str] = field(default_factory=list)
    action: list[str] = field(default_factory=list)
    context: list[str] = field(default_factory=list)
    outcome: list[str] = field(default_factory=list)
    status: list[int] = field(default_factory=list)
    runtime: list[float] = field(default_factory=list)
    is_suite: list[bool] = field(default_factory=list)
    pass_fraction: list[float] = field(default_factory=list)
    group: list[int] = field(default_factory=list)
    task: list[str] = field(default_factory=list)

    def add(self, task: RepairTask, state_text: str, diff: str, outcomes: Sequence[Any] | None) -> None:
        ctx = render_contexts(task)
        labels = (
            [STATUS_INDEX[_status(o)] for o in outcomes] if outcomes is not None else [0] * (len(ctx) - 1)
        )
        runtimes = (
            [float(_get(o, "runtime_s")) for o in outcomes] if outcomes is not None else [0.0] * len(labels)
        )
        frac = sum(x == 0 for x in labels) / max(len(labels), 1)
        out_text = render_outcome(outcomes) if outcomes is not None else ""
        for j, c in enumerate(ctx):
            suite = j == len(ctx) - 1
            self.state.append(state_text)
            self.action.append(render_action(diff))
            self.context.append(c)
            self.outcome.append(out_text)
            self.status.append(suite_label(labels) if suite else labels[j])
            self.runtime.append(sum(runtimes) if suite else runtimes[j])
            self.is_suite.append(suite)
            self.pass_fraction.append(frac if suite else float("nan"))
            key = hashlib.sha256(f"{task.task_id}\0{state_text}\0{c}".encode()).digest()
            self.group.append(int.from_bytes(key[:6], "big"))
            self.task.append(task.task_id)

    def __len__(self) -> int:
        return len(self.status)

    def select(self, keep: Sequence[bool]) -> Rows:
        out = Rows()
        for name in self.__dataclass_fields__:
            setattr(out, name, [v for v, k in zip(getattr(self, name), keep, strict=True) if k])
        return out


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

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        from rsi_workbench.world.encoders import text_sha

        for t in dict.fromkeys(texts):
            if text_sha(t) not in self.cache.vectors:
                self.cache.featurize(self.backbone, [t])
                self._dirty = True
        return self.cache.lookup([text_sha(t) for t in texts])

    def save(self) -> None:
        if self.path is not None and self._dirty:
            tmp = self.path.with_suffix(".tmp")
            tmp.write_bytes(self.cache.to_bytes())
            tmp.replace(self.path)
            self._dirty = False


def make_batch_from(rows: Rows, feat: Featurizer, with_outcome: bool = True) -> Any:
    from rsi_workbench.world.data import make_batch

    return make_batch(
        feat(rows.state),
        feat(rows.action),
        feat(rows.context),
        rows.status,
        runtime_s=rows.runtime,
        is_suite=rows.is_suite,
        pass_fraction=rows.pass_fraction,
        group=rows.group,
        outcome=feat(rows.outcome) if with_outcome else None,
    )


# ------------------------------------------------------------------------------------ the predictor
class CrossFitPredictor:
    """φ as the engine sees it: per-fold models; ``predict`` routes each task to its own fold's model."""

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
        self.kind, self.models, self.fold_of, self.tasks, self.feat = (
            kind,
            dict(models),
            dict(fold_of),
            tasks,
            feat,
        )
        self.settings = dict(settings)
        self.generation = generation
        vs = "|".join(f"{f}:{getattr(m, 'version', '')}" for f, m in sorted(self.models.items()))
        self.version = f"{'wm' if kind == 'world_model' else 'sv'}-{generation}-{hashlib.sha256(vs.encode()).hexdigest()[:10]}"

    def predict(self, task_id: str, state: RepairState, actions: Sequence[Candidate]) -> list[Prediction]:
        from rsi_workbench.world.train import predict_batch

        task = self.tasks[task_id]
        rows = Rows()
        st = render_state(task, state.program, state.outcomes)
        for a in actions:
            rows.add(task, st, a.diff, None)
        pred = predict_batch(
            self.models[self.fold_of[task_id]], make_batch_from(rows, self.feat, with_outcome=False)
        )
        n = len(task.public_tests) + 1
        out = []
        for i in range(len(actions)):
            per_test = pred.status_probs[i * n : i * n + n - 1]
            s = i * n + n - 1
            probs = [[float(x) for x in p] for p in per_test]
            unc = float(np.mean([entropy(p) for p in probs])) if probs else None
            out.append(
                Prediction(
                    utility_terms={
                        "p_all_pass": float(pred.p_all_pass[s]),
                        "pass_fraction": float(pred.pass_fraction[s]),
                    },
                    version=self.version,
                    probs=probs,
                    uncertainty=unc,
                    extra={"fold": self.fold_of[task_id], "fold_version": pred.component_version},
                )
            )
        return out

    def _rows_from_records(self, records: Sequence[PairRecord]) -> Rows:
        rows = Rows()
        for r in records:
            task = self.tasks[r.task_id]
            st = render_state(task, r.state["program"], r.state["outcomes"])
            rows.add(task, st, r.action.get("diff", ""), r.observation.detail["outcomes"])
        return rows

    def adapt(self, records: Sequence[PairRecord], *, seed: int) -> CrossFitPredictor:
        """Adapt(φ, D_adapt) (eq. 12) per fold on the records of the *other* folds' tasks (cross-fitting
        holds through adaptation), training only the declared roles (default: the readouts)."""
        from rsi_workbench.world.train import TrainConfig, adapt

        rows = self._rows_from_records(records)
        new = {}
        for f, m in sorted(self.models.items()):
            keep = [self.fold_of[t] != f for t in rows.task]
            sub = rows.select(keep)
            if len(sub) == 0:
                new[f] = m
                continue
            cfg = TrainConfig(
                epochs=int(self.settings["adapt_epochs"]),
                seed=derive_seed(seed, f) % 2**31,
                device="cpu",
                progress=False,
            )
            new[f], _ = adapt(
                m, make_batch_from(sub, self.feat), tuple(self.settings["adapt_trainable"]), cfg
            )
        return CrossFitPredictor(
            self.kind, new, self.fold_of, self.tasks, self.feat, self.settings, self.generation + 1
        )

    def adapt_cost(self, n_records: int) -> float:
        """ĉ_adapt: rows × epochs × folds × the declared cost per row-epoch (update-compute units)."""
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


def load_predictor_bytes(data: bytes, template: Any) -> CrossFitPredictor:
    """Rebuild a :class:`CrossFitPredictor` from ``to_bytes()``, sharing the template's featurizer."""
    import torch

    from rsi_workbench.world.checkpoint import load_checkpoint_bytes

    d = torch.load(io.BytesIO(data), map_location="cpu", weights_only=False)
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
def assign_folds(task_ids: Sequence[str], k: int, seed: int) -> dict[str, int]:
    """K-fold assignment by problem, deterministic for a seed."""
    order = sorted(task_ids, key=lambda t: derive_seed("fold", seed, t))
    return {t: i % k for i, t in enumerate(order)}


def transition_rows(
    tasks: Sequence[RepairTask], env: CodeRepairEnvironment, config: Config, seed: int
) -> Rows:
    """Training transitions (E0): for each task, its buggy program and bugs injected into its reference
    are states; ``MutationCoder`` proposes candidates from each, executed on the public tests."""
    from tqdm.auto import tqdm

    coder = MutationCoder(sandbox=env.sandbox)
    rows = Rows()
    w = config.world
    for task in tqdm(tasks, desc="world-model transitions", unit="task", leave=False):
        rng = random.Random(derive_seed("transitions", seed, task.task_id))
        states = [task.program]
        if task.reference and w.injected_bugs_per_task:
            states += [
                c.program
                for c in inject_bugs(task.reference, task.entry_point, w.injected_bugs_per_task, rng)
            ]
        per_state = max(1, w.candidates_per_task // len(states))
        for prog in states:
            outs = env.run(task.task_id, [prog], "public", trace=True)[0]
            cands = coder.propose(task, prog, RepairFeedback(prog, tuple(outs)), per_state, rng)
            st = render_state(task, prog, outs)
            results = env.run(task.task_id, [c.program for c in cands], "public", trace=True)
            for c, r in zip(cands, results, strict=True):
                rows.add(task, st, c.diff, r)
    return rows


def trained_predictor(
    config: Config, kind: str, seed: int, tasks: Sequence[RepairTask], env: CodeRepairEnvironment, out: Path
) -> CrossFitPredictor:
    """Train (or load) the cross-fitted φ_0 of ``kind`` for ``seed``; checkpoints are artifacts of the
    training run ``<out>/predictors/seed<s>`` so a resumed experiment never retrains."""
    from tqdm.auto import tqdm

    from rsi_workbench.world.checkpoint import load_checkpoint_bytes, save_checkpoint
    from rsi_workbench.world.model import OutcomeWorldModel, WorldModelConfig
    from rsi_workbench.world.train import TrainConfig, fit_temperature, train
    from rsi_workbench.world.verifier import StaticVerifier

    w = config.world
    feat = _featurizer(w.encoder, w.device, out)
    by_id = {t.task_id: t for t in tasks}
    fold_of = assign_folds(list(by_id), w.folds, seed)
    settings = w.model_dump(mode="json")
    run = Run.create(
        out / "predictors" / f"seed{seed}",
        {"seed": seed, "world": settings, "tasks": sorted(by_id)},
        kind="code_repair_training",
        exist_ok=True,
    )
    with run:
        done = {(e.payload["kind"], e.payload["fold"]): e.payload for e in run.events("predictor_trained")}
        models: dict[int, Any] = {}
        rows: Rows | None = None
        for f in tqdm(range(w.folds), desc=f"train {kind} (seed {seed})", unit="fold", leave=False):
            if (kind, f) in done:
                models[f] = load_checkpoint_bytes(run.artifacts.get(done[(kind, f)]["artifact"]))
                continue
            if rows is None:
                key = (str(out), seed)
                if key not in _ROWS:
                    _ROWS[key] = transition_rows(tasks, env, config, seed)
                rows = _ROWS[key]
                feat.save()
            others = sorted(t for t in by_id if fold_of[t] != f)
            calib = set(
                sorted(others, key=lambda t: derive_seed("calib", seed, f, t))[: max(1, len(others) // 5)]
            )
            train_rows = rows.select([fold_of[t] != f and t not in calib for t in rows.task])
            calib_rows = rows.select([t in calib for t in rows.task])
            assert not ({*train_rows.task} & {t for t in by_id if fold_of[t] == f}), "fold leak into training"
            batch = make_batch_from(train_rows, feat)
            mcfg = WorldModelConfig(input_dim=feat.backbone.hidden_size)
            import torch

            torch.manual_seed(derive_seed("init", seed, f, kind) % 2**31)
            model = OutcomeWorldModel(mcfg) if kind == "world_model" else StaticVerifier(mcfg)
            tcfg = TrainConfig(
                epochs=w.train_epochs,
                seed=derive_seed("train", seed, f) % 2**31,
                device="cpu",
                progress=False,
            )
            rep = train(model, batch, tcfg)
            temp = fit_temperature(model, make_batch_from(calib_rows, feat)) if len(calib_rows) else 1.0
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
                    "train_rows": len(train_rows),
                    "calibration_rows": len(calib_rows),
                    "temperature": temp,
                    "final_loss": rep.history[-1] if rep.history else {},
                    "fold_tasks": sorted(t for t in by_id if fold_of[t] == f),
                    "gate_or_final_labels_used": False,
                    "hidden_tests_in_context": False,
                },
            )
            run.commit()
            models[f] = load_checkpoint_bytes(run.artifacts.get(sha))
        feat.save()
    return CrossFitPredictor(kind, models, fold_of, by_id, feat, settings)


_FEATURIZERS: dict[tuple[str, str], Featurizer] = {}
_ROWS: dict[tuple[str, int], Rows] = {}


def _featurizer(encoder: str, device: str, out: Path) -> Featurizer:
    key = (encoder, str(out))
    if key not in _FEATURIZERS:
        safe = encoder.replace("/", "_")
        _FEATURIZERS[key] = Featurizer(encoder, device, out / f"features-{safe}.bin")
    return _FEATURIZERS[key]


def save_features() -> None:
    for f in _FEATURIZERS.values():
        f.save()


__all__ = [
    "CrossFitPredictor",
    "Featurizer",
    "Rows",
    "TestOutcome",
    "assign_folds",
    "load_predictor_bytes",
    "render_action",
    "render_contexts",
    "render_outcome",
    "render_state",
    "trained_predictor",
    "transition_rows",
]
