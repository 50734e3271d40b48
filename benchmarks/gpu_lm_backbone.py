"""GPU check for the LM world-model backbone: batched embedding and one LoRA training step, bf16.

The model is built from the default's config (SmolLM2-135M, written out below: no download and no
prepared checkpoint needed on the device; weights are random, which does not change the timings).
Measures, on one CUDA device:

* embedding: texts/s and tokens/s of masked-mean pooled hidden states, batch sizes 1, 16, 64;
* one LoRA (r=16, alpha=32, q/k/v/o) training step of the world model through the backbone: the
  full objective (CE + runtime + hinge + listwise KL + representation), backward, AdamW step.

Without a GPU it prints a notice and exits 0 (``--cpu-smoke`` runs a 2-layer version on CPU to check
the script itself). Results go to stdout and, when ``$OUT`` is set, ``$OUT/gpu_lm_backbone.json``.

    python benchmarks/gpu_lm_backbone.py [--seq 384] [--n 128] [--cpu-smoke]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

SMOLLM2_135M = {  # the prepared default's config.json (architecture fields)
    "hidden_size": 576,
    "intermediate_size": 1536,
    "num_hidden_layers": 30,
    "num_attention_heads": 9,
    "num_key_value_heads": 3,
    "head_dim": 64,
    "max_position_embeddings": 8192,
    "rms_norm_eps": 1e-5,
    "rope_theta": 100000.0,
    "vocab_size": 49152,
    "tie_word_embeddings": True,
    "hidden_act": "silu",
}
TINY = dict(SMOLLM2_135M, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=2,
            num_key_value_heads=1, head_dim=32)  # fmt: skip


def _sync(torch, device):
    if device == "cuda":
        torch.cuda.synchronize()


def embed_bench(torch, model, device, seq, n, batch_sizes=(1, 16, 64)):
    """texts/s and tokens/s of pooled features for ``n`` random texts of ``seq`` tokens."""
    out = {}
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(3, 49000, (n, seq), generator=g)
    lens = torch.randint(seq // 4, seq + 1, (n,), generator=g)  # ragged texts, right-padded
    mask = (torch.arange(seq)[None, :] < lens[:, None]).long()
    model.eval()
    with torch.no_grad():
        model(input_ids=ids[:2].to(device), attention_mask=mask[:2].to(device))  # warm-up
        for bs in batch_sizes:
            _sync(torch, device)
            t0 = time.perf_counter()
            for s in range(0, n, bs):
                i, m = ids[s : s + bs].to(device), mask[s : s + bs].to(device)
                h = model(input_ids=i, attention_mask=m).last_hidden_state.float()
                _ = (h * m[..., None]).sum(1) / m.sum(1, keepdim=True)
            _sync(torch, device)
            dt = time.perf_counter() - t0
            out[f"batch_{bs}"] = {
                "texts_per_s": round(n / dt, 1),
                "tokens_per_s": round(int(lens.sum()) / dt),
            }
    return out


def lora_step(torch, model, device, dtype, seq, rows=16):
    """Seconds of one world-model training step with LoRA adapters on the backbone (after a warm-up)."""
    from torch import nn

    from rsi_workbench.world.data import TransitionBatch
    from rsi_workbench.world.encoders import apply_lora
    from rsi_workbench.world.model import OutcomeWorldModel, Projection, WorldModelConfig
    from rsi_workbench.world.train import TrainConfig, compute_loss, param_groups

    lora_model = apply_lora(model)

    class IdsEncoder(nn.Module):  # token ids [N, T] (0 = padding) -> pooled -> Linear + LayerNorm
        def __init__(self):
            super().__init__()
            self.backbone_model = lora_model
            self.projection = Projection(model.config.hidden_size, 256)

        def forward(self, ids):
            m = (ids != 0).long()
            h = self.backbone_model(input_ids=ids, attention_mask=m).last_hidden_state.float()
            return self.projection((h * m[..., None]).sum(1) / m.sum(1, keepdim=True).clamp_min(1))

    wm = OutcomeWorldModel(WorldModelConfig(input_dim=model.config.hidden_size), encoder=IdsEncoder()).to(
        device
    )
    n_lora = sum(p.numel() for n, p in wm.named_parameters() if "lora_" in n and p.requires_grad)
    g = torch.Generator().manual_seed(1)

    def ids():
        return torch.randint(3, 49000, (rows, seq), generator=g).to(device)

    group = torch.arange(rows) // 8  # per state: 4 suite rows (a listwise pool) + 4 per-test rows
    is_suite = torch.arange(rows) % 2 == 0
    batch = TransitionBatch(
        ids(), ids(), ids(), torch.randint(0, 5, (rows,), generator=g).to(device),
        torch.rand(rows, generator=g).to(device), is_suite.to(device),
        torch.rand(rows, generator=g).to(device), group.to(device), ids(),
    )  # fmt: skip
    cfg = TrainConfig(listwise_weight=0.2, listwise_pool_size=4, device=device)
    opt = torch.optim.AdamW(param_groups(wm, cfg), weight_decay=cfg.weight_decay)
    times = []
    for _ in range(2):  # warm-up, then the timed step
        _sync(torch, device)
        t0 = time.perf_counter()
        with torch.autocast("cuda", dtype=dtype, enabled=device == "cuda"):
            loss, parts = compute_loss(wm, batch, cfg)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        wm.core.ema_update()
        _sync(torch, device)
        times.append(time.perf_counter() - t0)
    peak = round(torch.cuda.max_memory_allocated() / 2**30, 2) if device == "cuda" else None
    return {
        "rows": rows,
        "seq": seq,
        "step_s": round(times[-1], 3),
        "examples_per_s": round(rows / times[-1], 1),
        "lora_params": n_lora,
        "listwise": round(parts["listwise"], 4),
        "peak_gib": peak,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seq", type=int, default=384, help="tokens per text (states are ~150-380 tokens)")
    ap.add_argument("--n", type=int, default=128, help="texts per embedding measurement")
    ap.add_argument("--cpu-smoke", action="store_true", help="a 2-layer model on CPU (checks the script)")
    a = ap.parse_args()
    try:
        import torch
        from transformers import LlamaConfig, LlamaModel
    except ImportError as e:
        print(f"skipped: {e}")
        return 0
    if a.cpu_smoke:
        device, dtype, cfg_d, seq, n = "cpu", torch.float32, TINY, 32, 8
    elif not torch.cuda.is_available():
        print(
            "no GPU: skipped (this benchmark times the LM backbone on a CUDA device; --cpu-smoke checks it)"
        )
        return 0
    else:
        device, dtype, cfg_d, seq, n = "cuda", torch.bfloat16, SMOLLM2_135M, a.seq, a.n
    torch.manual_seed(0)
    model = LlamaModel(LlamaConfig(**cfg_d)).to(device=device, dtype=dtype)
    res = {
        "device": torch.cuda.get_device_name(0) if device == "cuda" else "cpu (smoke)",
        "dtype": str(dtype),
        "config": "SmolLM2-135M" if cfg_d is SMOLLM2_135M else "tiny",
        "embedding": embed_bench(torch, model, device, seq, n, (1, 4) if a.cpu_smoke else (1, 16, 64)),
    }
    try:
        res["lora_step"] = lora_step(torch, model, device, dtype, seq, rows=8 if a.cpu_smoke else 16)
    except ImportError as e:
        res["lora_step"] = f"skipped: {e}"
    print(json.dumps(res, indent=1))
    if os.environ.get("OUT"):
        Path(os.environ["OUT"], "gpu_lm_backbone.json").write_text(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
