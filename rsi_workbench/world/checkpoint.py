"""Checkpoints as sha256 artifacts, with the reload-reproduces-scores check.

:func:`save_checkpoint` serialises a predictor, reloads it from those exact bytes, and compares the
scores of a probe batch (rtol 2e-5, atol 2e-6); only if they match are the bytes stored in the
run's artifact store (content-addressed), otherwise :class:`CheckpointMismatch` is raised and
nothing is stored.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from torch import nn

from rsi_workbench.records import ArtifactStore
from rsi_workbench.world.data import TransitionBatch
from rsi_workbench.world.model import _ARRAY_FIELDS, OutcomeWorldModel, WorldModelConfig
from rsi_workbench.world.train import predict_batch
from rsi_workbench.world.verifier import StaticVerifier

RTOL, ATOL = 2e-5, 2e-6


class CheckpointMismatch(RuntimeError):
    """The reloaded model does not reproduce the saved model's scores on the probe batch."""


def checkpoint_bytes(model: nn.Module) -> bytes:
    buf = io.BytesIO()
    payload = {
        "kind": getattr(model, "kind", type(model).__name__),
        "config": model.config.model_dump(),  # type: ignore[operator, union-attr]
        "version": getattr(model, "version", ""),
        "state_dict": {k: v.detach().cpu() for k, v in model.state_dict().items()},
    }
    torch.save(payload, buf)
    return buf.getvalue()


def load_checkpoint_bytes(
    data: bytes, build: Callable[[dict[str, Any]], nn.Module] | None = None
) -> nn.Module:
    """Rebuild a predictor from checkpoint bytes; ``build(config)`` for custom (non-default) models."""
    payload = torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
    if build is not None:
        model = build(payload["config"])
    elif payload["kind"] == "world_model":
        model = OutcomeWorldModel(WorldModelConfig(**payload["config"]))
    elif payload["kind"] == "static_verifier":
        model = StaticVerifier(WorldModelConfig(**payload["config"]))
    else:
        raise ValueError(f"checkpoint of kind {payload['kind']!r}: pass build= to reconstruct it")
    try:
        model.load_state_dict(payload["state_dict"])
    except RuntimeError as e:
        raise ValueError(
            f"checkpoint {payload.get('version', '?')} does not fit a default {payload['kind']} "
            "(saved with a custom encoder, e.g. text_encoder + LoRA?): pass build=config -> model"
        ) from e
    model.version = payload["version"]
    model.eval()
    return model


def scores_match(a: nn.Module, b: nn.Module, probe: TransitionBatch) -> tuple[bool, float]:
    """Whether two predictors give the same scores on ``probe`` (rtol 2e-5, atol 2e-6); max abs diff."""
    pa, pb = predict_batch(a, probe), predict_batch(b, probe)
    worst = 0.0
    ok = True
    for f in _ARRAY_FIELDS:
        x, y = getattr(pa, f), getattr(pb, f)
        ok &= bool(np.allclose(x, y, rtol=RTOL, atol=ATOL, equal_nan=True))
        d = np.abs(np.nan_to_num(x) - np.nan_to_num(y))
        worst = max(worst, float(d.max()) if d.size else 0.0)
    return ok, worst


def save_checkpoint(model: nn.Module, store: ArtifactStore, probe: TransitionBatch, *, name: str = "") -> str:
    """Store ``model`` as an artifact after verifying the reload reproduces ``probe`` scores; its sha256."""
    data = checkpoint_bytes(model)
    build = getattr(model, "build_from_config", None)
    reloaded = load_checkpoint_bytes(data, build)
    reloaded.to(next(model.parameters()).device)
    ok, worst = scores_match(model, reloaded, probe)
    if not ok:
        raise CheckpointMismatch(
            f"checkpoint of {getattr(model, 'version', '?')}: reloaded scores differ by up to {worst:.3g} "
            f"(allowed rtol {RTOL}, atol {ATOL}); nothing was stored"
        )
    return store.put(
        data,
        name=name or f"{getattr(model, 'kind', 'model')}-{getattr(model, 'version', '')}.pt",
        kind="world_checkpoint",
        version=getattr(model, "version", ""),
        probe_rows=len(probe),
    )


def load_checkpoint(
    store: ArtifactStore, sha: str, build: Callable[[dict[str, Any]], nn.Module] | None = None
) -> nn.Module:
    """Load a checkpoint artifact (sha256-verified by the store)."""
    return load_checkpoint_bytes(store.get(sha), build)
