"""Training, ``Adapt`` (equation 12) and temperature calibration for predictors.

* :func:`train` — AdamW (weight decay 0.01) with per-role parameter groups at the paper's rates
  (backbone/LoRA 5e-6, OPF 1e-5, readout 1e-4), gradient clipping at norm 1 (non-finite norms
  raise), an EMA target update after every step, group-aware batches so ranking pairs meet, tqdm.
* :func:`adapt` — a copy of phi with exactly the declared roles trainable (asserted), fine-tuned on
  D_adapt; the static verifier refuses (it is trained once, never adapted).
* :func:`fit_temperature` — the calibration temperature (clamped to [0.2, 5]) fitted by NLL on gate
  data; it belongs to no optimizer group.

The paper's training recipe, switchable and off by default (defaults train exactly as before):
``listwise_weight > 0`` adds the listwise KL over each state's candidate pool (tau = 0.1) beside the
pairwise hinge; ``staged=True`` runs :func:`paper_stages` (initial -> semantic (heads, then joint)
-> expanded -> incumbent, each continuing from the previous stage's weights) through
:func:`train_staged`, which records every stage in ``TrainReport.stages`` and calls ``log``.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from rsi_workbench.config import StrictModel
from rsi_workbench.world.data import TransitionBatch, group_batches
from rsi_workbench.world.encoders import resolve_device
from rsi_workbench.world.losses import listwise_loss, observed_utility_of, outcome_losses, select_head
from rsi_workbench.world.model import (
    TEMPERATURE_RANGE,
    Predictions,
    _to_predictions,
    concat_predictions,
    state_dict_version,
)


class TrainConfig(StrictModel):
    """Optimisation settings; defaults are the paper's code-repair W1 values."""

    epochs: int = 30
    batch_size: int = 64
    lr_backbone: float = 5e-6
    lr_opf: float = 1e-5
    lr_readout: float = 1e-4
    weight_decay: float = 0.01
    grad_clip: float = 1.0
    runtime_weight: float = 0.1
    ranking_weight: float = 0.2
    ranking_margin: float = 0.1
    representation_weight: float = 1.0
    seed: int = 0
    device: str = "auto"
    cpu_threads: int | None = None  # e.g. 1 for small heads on a shared CPU (restored afterwards)
    progress: bool = True
    # the paper's recipe (off by default): listwise KL over candidate pools, staged training
    listwise_weight: float = 0.0  # 0: off; the weight is not given in the paper (0.2 = the hinge's is used)
    listwise_tau: float = 0.1
    listwise_pool_size: int | None = 4  # pools of exactly this many candidates (None: any >= 2)
    staged: bool = False  # initial -> semantic (heads, joint) -> expanded -> incumbent


@dataclass
class TrainReport:
    """Per-step losses (means per epoch) and what was trained."""

    steps: int = 0
    examples: int = 0
    trainable: tuple[str, ...] = ()
    history: list[dict[str, float]] = field(default_factory=list)
    stages: list[dict[str, Any]] = field(default_factory=list)  # staged training: one entry per stage

    def last(self, key: str) -> float:
        return self.history[-1][key]


def _lr(cfg: TrainConfig, role: str) -> float:
    return {"backbone": cfg.lr_backbone, "opf": cfg.lr_opf, "readout": cfg.lr_readout}[role]


def param_groups(model: Any, cfg: TrainConfig) -> list[dict[str, Any]]:
    """AdamW groups by role; only parameters with ``requires_grad``; the temperature never."""
    groups: dict[str, list[nn.Parameter]] = {}
    roles = model.roles()
    for name, p in model.named_parameters():
        role = roles.get(name)
        if role is None or role == "temperature" or not p.requires_grad:
            continue
        groups.setdefault(role, []).append(p)
    return [{"params": ps, "lr": _lr(cfg, r), "role": r} for r, ps in groups.items()]


def compute_loss(
    model: Any, batch: TransitionBatch, cfg: TrainConfig
) -> tuple[torch.Tensor, dict[str, float]]:
    """The full objective for a world model, cross-entropy only for the static verifier."""
    out = model(batch.state, batch.action, batch.context, batch.outcome)
    parts = outcome_losses(out, batch, ranking_margin=cfg.ranking_margin)
    if getattr(model, "kind", "") == "static_verifier":
        total = parts["ce"]
        parts = {"ce": parts["ce"]}
    else:
        total = parts["ce"] + cfg.runtime_weight * parts["runtime"] + cfg.ranking_weight * parts["ranking"]
        if cfg.listwise_weight > 0:
            lw, counts = listwise_loss(out, batch, cfg.listwise_tau, cfg.listwise_pool_size)
            parts["listwise"] = lw
            parts["listwise_pools"] = lw.new_tensor(float(counts["pools"]))
            total = total + cfg.listwise_weight * lw
        if "target" in out:
            rep = model.core.representation_loss(out["z"], out["z_hat"], out["u_hat"], out["target"])
            parts.update(rep)
            total = total + cfg.representation_weight * rep["representation"]
    parts["total"] = total
    return total, {k: float(v.detach()) for k, v in parts.items()}


def train(
    model: Any,
    data: TransitionBatch,
    config: TrainConfig | None = None,
    *,
    stages: Sequence[Stage] | None = None,
    log: Callable[[str, dict[str, Any]], None] | None = None,
) -> TrainReport:
    """Train ``model`` in place on ``data``; sets ``model.version`` to the hash of the new weights.

    With ``config.staged`` the stages run in order (``stages``, else :func:`paper_stages` of ``data``).
    """
    cfg = config or TrainConfig()
    if len(data) == 0:
        raise ValueError("train: no transitions")
    threads = torch.get_num_threads()
    if cfg.cpu_threads:
        torch.set_num_threads(cfg.cpu_threads)
    try:
        if cfg.staged:
            return train_staged(model, data, stages or paper_stages(data, cfg.epochs), cfg, log)
        return _train(model, data, cfg)
    finally:
        torch.set_num_threads(threads)


def _train(model: Any, data: TransitionBatch, cfg: TrainConfig) -> TrainReport:
    torch.manual_seed(cfg.seed)
    rng = np.random.default_rng(cfg.seed)
    device, dtype = resolve_device(cfg.device)
    model.to(device)
    groups = param_groups(model, cfg)
    if not groups:
        raise ValueError("train: no trainable parameters")
    opt = torch.optim.AdamW(groups, weight_decay=cfg.weight_decay)
    params = [p for g in groups for p in g["params"]]
    report = TrainReport(trainable=tuple(sorted({g["role"] for g in groups})))
    groups_np = data.group.cpu().numpy()
    epochs: Any = range(cfg.epochs)
    if cfg.progress:
        from tqdm.auto import tqdm

        epochs = tqdm(epochs, desc=f"train[{getattr(model, 'kind', 'model')}]", unit="epoch")
    model.train()
    for _ in epochs:
        sums: dict[str, float] = {}
        nb = 0
        for idx in group_batches(groups_np, cfg.batch_size, rng):
            batch = data.subset(idx).to(device)
            with torch.autocast("cuda", dtype=dtype, enabled=device.startswith("cuda")):
                loss, parts = compute_loss(model, batch, cfg)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, cfg.grad_clip, error_if_nonfinite=True)
            opt.step()
            if hasattr(model, "core"):
                model.core.ema_update()
            report.steps += 1
            report.examples += len(idx)
            nb += 1
            for k, v in parts.items():
                sums[k] = sums.get(k, 0.0) + v
        report.history.append({k: v / max(nb, 1) for k, v in sums.items()})
        if cfg.progress and hasattr(epochs, "set_postfix"):
            epochs.set_postfix(loss=f"{report.history[-1]['total']:.4f}")
    model.eval()
    model.version = state_dict_version(model, getattr(model, "kind", "model"))
    return report


# ---------------------------------------------------------------------------- staged training
STAGE_NAMES = ("initial", "semantic", "expanded", "incumbent")


@dataclass(frozen=True)
class Stage:
    """One stage: its name (``initial``/``semantic``/``expanded``/``incumbent``), part (``heads``
    trains the readout roles only, ``joint`` every trainable role), rows of the data and epochs."""

    name: str
    part: str = "joint"
    rows: np.ndarray | None = None  # None: every row
    epochs: int = 1

    @property
    def trainable(self) -> tuple[str, ...] | None:
        return ("readout",) if self.part == "heads" else None


def _stage_epochs(epochs: int, frac: float) -> int:
    return max(1, math.ceil(epochs * frac))


def paper_stages(data: TransitionBatch, epochs: int, core: np.ndarray | None = None) -> list[Stage]:
    """The paper's four stages over one training set, ``epochs`` split 1/4, 1/8 + 1/8, 1/4, 1/4:

    * ``initial`` — the per-candidate-test world: per-test rows of the core states, joint;
    * ``semantic`` — adds the whole-suite rows (the suite readout): heads first, then joint;
    * ``expanded`` — every row, including the expanded states outside ``core`` (e.g. injected bugs);
    * ``incumbent`` — the comparison units with contrast: suite rows of the pools whose observed
      utilities differ (what ranking learns from), joint.

    ``core`` is a boolean mask of the rows of the original states (default: every row).
    """
    n = len(data)
    core_m = np.ones(n, bool) if core is None else np.asarray(core, bool)
    suite = data.is_suite.cpu().numpy()
    util = observed_utility_of(data).cpu().numpy()
    group = data.group.cpu().numpy()
    contrast = np.zeros(n, bool)
    for g in np.unique(group[suite]):
        m = suite & (group == g)
        contrast |= m & (util[m].max() > util[m].min())
    initial = np.flatnonzero(core_m & ~suite)
    semantic = np.flatnonzero(core_m)
    incumbent = np.flatnonzero(contrast)
    return [
        Stage("initial", "joint", initial if len(initial) else semantic, _stage_epochs(epochs, 0.25)),
        Stage("semantic", "heads", semantic, _stage_epochs(epochs, 0.125)),
        Stage("semantic", "joint", semantic, _stage_epochs(epochs, 0.125)),
        Stage("expanded", "joint", np.arange(n), _stage_epochs(epochs, 0.25)),
        Stage(
            "incumbent", "joint", incumbent if len(incumbent) else np.arange(n), _stage_epochs(epochs, 0.25)
        ),
    ]


def train_staged(
    model: Any,
    data: TransitionBatch,
    stages: Sequence[Stage],
    config: TrainConfig | None = None,
    log: Callable[[str, dict[str, Any]], None] | None = None,
) -> TrainReport:
    """Run ``stages`` in order, each continuing from the previous stage's weights (fresh optimizer);
    a ``heads`` part freezes every non-readout parameter. Each stage is appended to
    ``report.stages`` and sent to ``log("world_stage", {...})``; trainability is restored after."""
    cfg = config or TrainConfig()
    order = [s.name for s in stages]
    if set(order) - set(STAGE_NAMES) or {s.part for s in stages} - {"heads", "joint"}:
        raise ValueError(f"unknown stage or part in {[(s.name, s.part) for s in stages]}")
    if sorted(set(order), key=STAGE_NAMES.index) != list(dict.fromkeys(order)):
        raise ValueError(f"stages out of order: {order} (order: {' -> '.join(STAGE_NAMES)})")
    roles = model.roles()
    orig = {n: p.requires_grad for n, p in model.named_parameters()}
    report = TrainReport()
    try:
        for i, st in enumerate(stages):
            allowed = st.trainable
            for n, p in model.named_parameters():
                p.requires_grad_(orig[n] and (allowed is None or roles.get(n) in allowed))
            rows = np.arange(len(data)) if st.rows is None else np.asarray(st.rows)
            sub = _train(
                model, data.subset(rows), cfg.model_copy(update={"epochs": st.epochs, "seed": cfg.seed + i})
            )
            report.steps += sub.steps
            report.examples += sub.examples
            report.history.extend(sub.history)
            report.trainable = tuple(sorted(set(report.trainable) | set(sub.trainable)))
            entry = {
                "index": i,
                "stage": st.name,
                "part": st.part,
                "rows": int(len(rows)),
                "epochs": st.epochs,
                "steps": sub.steps,
                "trainable": list(sub.trainable),
                "loss": sub.last("total"),
            }
            report.stages.append(entry)
            if log is not None:
                log("world_stage", entry)
    finally:
        for n, p in model.named_parameters():
            p.requires_grad_(orig[n])
    return report


def adapt(
    model: Any,
    data: TransitionBatch,
    trainable: Sequence[str] = ("readout",),
    config: TrainConfig | None = None,
) -> tuple[nn.Module, TrainReport]:
    """Adapt(phi, D_adapt) of equation 12: a new phi' with only the declared roles trained.

    The returned model is a copy; the input model is untouched. Raises if the model is not
    adaptable (the static verifier) or a role is unknown.
    """
    if not getattr(model, "adaptable", True):
        raise ValueError(f"{getattr(model, 'kind', type(model).__name__)} is trained once and never adapted")
    roles = model.roles()
    unknown = set(trainable) - (set(roles.values()) - {"temperature"})
    if unknown or not trainable:
        raise ValueError(
            f"adapt: trainable roles {sorted(unknown) or '[]'} not in {sorted(set(roles.values()) - {'temperature'})}"
        )
    new = copy.deepcopy(model)
    for name, p in new.named_parameters():
        p.requires_grad_(roles.get(name) in trainable)
    declared = {n for n, r in roles.items() if r in trainable}
    actual = {n for n, p in new.named_parameters() if p.requires_grad}
    assert actual == declared, (
        f"adapt: trainable set {sorted(actual ^ declared)} differs from the declaration"
    )
    report = train(new, data, config)
    for name, p in new.named_parameters():  # restore the default trainability for later training
        p.requires_grad_(name in roles and roles[name] != "temperature")
    return new, report


def predict_batch(model: Any, data: TransitionBatch, chunk: int = 512) -> Predictions:
    """``model.predict`` over a whole batch in chunks (inputs moved to the model's device)."""
    device = next(model.parameters()).device
    parts = []
    for s in range(0, len(data), chunk):
        b = data.subset(np.arange(s, min(s + chunk, len(data)))).to(str(device))
        parts.append(model.predict(b.state, b.action, b.context))
    return concat_predictions(parts)


def row_probs(pred: Predictions, data: TransitionBatch) -> np.ndarray:
    """Status probabilities of the head each row belongs to (suite rows -> suite head)."""
    suite = data.is_suite.cpu().numpy()
    return np.where(suite[:, None], pred.suite_status_probs, pred.status_probs)


@torch.no_grad()
def fit_temperature(model: Any, gate: TransitionBatch, grid: int = 241) -> float:
    """Fit T in [0.2, 5] minimising NLL of observed statuses on gate data (grid over log T); sets it."""
    if len(gate) == 0:
        raise ValueError("fit_temperature: no gate transitions")
    old = model.log_temperature.data.clone()
    model.log_temperature.data.zero_()
    device = next(model.parameters()).device
    logits = []
    model.eval()
    for s in range(0, len(gate), 512):
        b = gate.subset(np.arange(s, min(s + 512, len(gate)))).to(str(device))
        out = model(b.state, b.action, b.context)
        logits.append(select_head(out, b.is_suite)[0].float().cpu())
    lg = torch.cat(logits)
    y = gate.status.cpu()
    lo, hi = math.log(TEMPERATURE_RANGE[0]), math.log(TEMPERATURE_RANGE[1])
    best, best_nll = 0.0, math.inf
    for lt in np.linspace(lo, hi, grid):
        nll = float(F.cross_entropy(lg / math.exp(lt), y))
        if nll < best_nll - 1e-12:
            best, best_nll = float(lt), nll
    if not math.isfinite(best_nll):
        model.log_temperature.data.copy_(old)
        raise ValueError("fit_temperature: non-finite NLL on gate data")
    model.log_temperature.data.fill_(best)
    model.version = state_dict_version(model, getattr(model, "kind", "model"))
    return math.exp(best)


__all__ = [
    "STAGE_NAMES",
    "Stage",
    "TrainConfig",
    "TrainReport",
    "adapt",
    "compute_loss",
    "fit_temperature",
    "paper_stages",
    "param_groups",
    "predict_batch",
    "row_probs",
    "train",
    "train_staged",
    "_to_predictions",
]
