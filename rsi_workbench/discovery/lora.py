"""theta+ as a LoRA adapter: credit-weighted SFT (eq. 8) of low-rank adapters on a frozen base model.

On CPU a full fine-tune of even the 135M default is slow; the adapter (rank ``r`` on the attention
projections q/k/v/o) is what trains, under a declared token cap per trajectory (longer transcripts
keep their tail, as :func:`rsi_workbench.discovery.sft.encode` does). The adapter is saved as one tar
artifact of the round's run and unpacked into a directory a ``model: {adapter: ...}`` block can name,
so the next campaign's model-backed roles load base + theta+ through the model room (recorded,
replayable: the adapter's files are part of every replay key). peft / torch are imported lazily.
"""

from __future__ import annotations

import io
import tarfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rsi_workbench.records import Run

TARGET_MODULES = ("q_proj", "k_proj", "v_proj", "o_proj")


def lora_model(base: Any, *, r: int = 8, alpha: int = 16, adapter: str | Path | None = None) -> Any:
    """``base`` with trainable LoRA adapters: fresh ones (rank ``r``), or an existing ``adapter``
    directory loaded trainable (theta_k was itself a LoRA: theta+ continues from it)."""
    try:
        from peft import LoraConfig, PeftModel, get_peft_model
    except ImportError as e:
        raise ImportError(f"a LoRA theta+ needs peft (the 'models' extra): {e}") from e
    if adapter is not None:
        return PeftModel.from_pretrained(base, str(adapter), is_trainable=True)
    cfg = LoraConfig(r=r, lora_alpha=alpha, lora_dropout=0.0, target_modules=list(TARGET_MODULES))
    return get_peft_model(base, cfg)


def trainable_parameters(model: Any) -> int:
    """How many parameters the fine-tune updates (the adapter's, for a LoRA model)."""
    return int(sum(p.numel() for p in model.parameters() if p.requires_grad))


def save_adapter(run: Run, model: Any, *, name: str = "theta_plus_lora", **meta: Any) -> str:
    """The adapter's files (``save_pretrained`` of a peft model) as one tar artifact; its sha256."""
    from rsi_workbench.discovery.sft import saved_tar

    return run.artifacts.put(saved_tar(model), name=f"{name}.tar", **meta)


def adapter_dir(run: Run, sha: str) -> Path:
    """The adapter artifact unpacked (once, sha256-verified) under ``<run>/adapters/<sha[:12]>``."""
    dest = run.path / "adapters" / sha[:12]
    if not (dest / "adapter_config.json").exists():
        data = run.artifacts.get(sha)
        tmp = dest.with_name(f".{dest.name}.tmp")
        tmp.mkdir(parents=True, exist_ok=True)
        with tarfile.open(fileobj=io.BytesIO(data), mode="r") as tar:
            tar.extractall(tmp, filter="data")
        tmp.replace(dest)
    return dest
