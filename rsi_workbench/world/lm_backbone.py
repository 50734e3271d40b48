"""A causal LM as the encoder E: ``encoder: lm:default`` (or ``lm:<alias or path>``).

Texts (state, action, context, outcome) are embedded with a causal LM's hidden states, loaded
through the model room (:func:`rsi_workbench.models.prepare.resolve_name`: the prepared default
SmolLM2-135M by the alias ``default``, a checkpoint directory or a GGUF file; nothing is
downloaded). The spec takes options after ``?``::

    lm:default                      # mean pooling over the final hidden state (after the final norm)
    lm:default?pool=last            # the last real token's state (what a causal LM has "read" fully)
    lm:default?pool=mean&layer=12   # hidden_states[12] (0 = embeddings, n_layers = the final block)

On CPU the LM is frozen and its features are cached (content-addressed by model identity, pooling,
layer, window and dtype: the backbone fingerprint; see :mod:`rsi_workbench.world.feature_store`).
Training through it (LoRA r=16, alpha=32 on q/k/v/o) is the GPU path: measured at 0.1 examples/s
on this CPU, so ``lora=True`` without a GPU raises :class:`LoRANeedsGPU` with that reason.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

LM_PREFIX = "lm:"
POOLINGS = ("mean", "last")
CPU_WINDOW = 2048  # tokens per window on CPU (longer texts are chunked, never truncated)
GPU_WINDOW = 8192


class LoRANeedsGPU(RuntimeError):
    """LoRA training through an LM backbone was asked for on a CPU-only machine."""


@dataclass(frozen=True)
class LMSpec:
    """A parsed ``lm:`` encoder spec."""

    name: str  # model-room alias or path
    pooling: str = "mean"
    layer: int | None = None  # None: the final hidden state (after the final norm)

    @property
    def label(self) -> str:
        opts = [f"pool={self.pooling}"] + ([f"layer={self.layer}"] if self.layer is not None else [])
        return f"{LM_PREFIX}{Path(self.name).name}?{'&'.join(opts)}"


def is_lm_spec(spec: str) -> bool:
    return spec.startswith(LM_PREFIX)


def parse_lm_spec(spec: str, pooling: str | None = None, layer: int | None = None) -> LMSpec:
    """``lm:NAME[?pool=mean|last][&layer=N]`` -> :class:`LMSpec`; keyword arguments override."""
    if not is_lm_spec(spec):
        raise ValueError(f"not an LM encoder spec (lm:<alias or path>): {spec!r}")
    body = spec[len(LM_PREFIX) :]
    name, _, query = body.partition("?")
    if not name:
        raise ValueError(f"{spec!r}: the LM encoder needs a model name, e.g. lm:default")
    opts = dict(parse_qsl(query, keep_blank_values=True, strict_parsing=bool(query)))
    unknown = set(opts) - {"pool", "layer"}
    if unknown:
        raise ValueError(f"{spec!r}: unknown LM encoder option(s) {sorted(unknown)} (pool, layer)")
    pool = pooling or opts.get("pool", "mean")
    if pool not in POOLINGS:
        raise ValueError(f"{spec!r}: pooling must be one of {POOLINGS}, not {pool!r}")
    lay: int | None = layer
    if lay is None and opts.get("layer") not in (None, "", "last"):
        lay = int(opts["layer"])
    return LMSpec(name, pool, lay)


def _load_base(path: Path, dtype: Any) -> tuple[Any, Any]:
    """(decoder stack without the LM head, tokenizer) from a checkpoint directory or GGUF file."""
    from transformers import AutoModel, AutoTokenizer

    if path.suffix == ".gguf":
        from rsi_workbench.models.prepare import load_gguf

        lm, tok = load_gguf(path, dtype)
        model = getattr(lm, lm.base_model_prefix, lm)
    else:
        tok = AutoTokenizer.from_pretrained(path)
        model = AutoModel.from_pretrained(path, dtype=dtype)
    if tok.pad_token_id is None:
        tok.pad_token = tok.eos_token
    return model, tok


def lm_fingerprint(identity: str, spec: LMSpec, window: int, dtype: Any) -> str:
    """Model identity + pooling + layer + window + dtype: what a cached feature depends on."""
    key = f"{identity}|pool={spec.pooling}|layer={spec.layer}|window={window}|dtype={dtype}"
    return "lm-" + hashlib.sha256(key.encode()).hexdigest()[:16]


def load_lm_backbone(
    spec: str,
    *,
    device: str = "auto",
    lora: bool = False,
    max_chunks: int = 64,
    pooling: str | None = None,
    layer: int | None = None,
) -> Any:
    """A :class:`~rsi_workbench.world.encoders.TextBackbone` over a causal LM's hidden states.

    Frozen (no parameter requires grad) unless ``lora=True``, which needs a GPU.
    """
    from rsi_workbench.models.local import local_identity
    from rsi_workbench.models.prepare import resolve_name
    from rsi_workbench.world.encoders import TextBackbone, apply_lora, resolve_device

    s = parse_lm_spec(spec, pooling, layer)
    dev, dtype = resolve_device(device)
    if lora and not dev.startswith("cuda"):
        raise LoRANeedsGPU(
            f"encoder {spec!r} with LoRA: training through the LM backbone is the GPU path "
            "(measured at 0.1 examples/s on CPU); on CPU the backbone stays frozen and its features "
            "are cached -- drop lora, or run on a machine with a GPU (device='cuda')"
        )
    model, tok = _load_base(resolve_name(s.name), dtype)
    n_layers = int(getattr(model.config, "num_hidden_layers", 0) or 0)
    if s.layer is not None and not -(n_layers + 1) <= s.layer <= n_layers:
        raise ValueError(f"{spec!r}: layer {s.layer} outside 0..{n_layers} (or -{n_layers + 1}..-1)")
    mpe = int(getattr(model.config, "max_position_embeddings", GPU_WINDOW) or GPU_WINDOW)
    window = min(mpe, GPU_WINDOW if dev.startswith("cuda") else CPU_WINDOW)
    fp = lm_fingerprint(local_identity(s.name), s, window, dtype)
    for p in model.parameters():
        p.requires_grad_(False)
    if lora:
        model, fp = apply_lora(model), fp + "+lora"
    model.to(dev)
    model.eval()
    return TextBackbone(
        name=s.label,
        model=model,
        tokenizer=tok,
        max_positions=window,
        device=dev,
        dtype=dtype,
        max_chunks=max_chunks,
        lora=lora,
        fingerprint=fp,
        pooling=s.pooling,
        layer=s.layer,
    )
