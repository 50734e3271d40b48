"""GPU check for the LM world-model backbone: batched embedding and one LoRA training step, bf16.

The model is built from the default's config (SmolLM2-135M, written out below: no download and no
prepared checkpoint needed on the device; weights are random, which does not change the timings).
Measures, on one CUDA device:

* embedding: texts/s and tokens/s of masked-mean pooled hidden states, batch sizes 1, 16, 64;
* one LoRA (r=16, alpha=32, q/k/v/o) training step of the world model through the backbone: the
  full objective (CE + runtime + hinge + listwise KL + representation), backward, AdamW step;
* a cycle's proposals (issue 36 item 6): 24 tasks' prompts (ragged, 150-380 tokens), n = 2 samples
  of 64 new tokens each, sampled one prompt at a time (24 ``generate`` calls) and batched across
  tasks (one left-padded ``generate``, what ``batch_across_tasks: true`` makes of a concurrent
  cycle): seconds, generated tokens/s and the speed-up.

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


def proposals_bench(torch, cfg_d, device, dtype, prompts=24, n=2, new=64, lo=150, hi=380):
    """A cycle's proposals on a causal LM of ``cfg_d``'s shape: one prompt at a time vs batched."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    lm = LlamaForCausalLM(LlamaConfig(**cfg_d, pad_token_id=0)).to(device=device, dtype=dtype).eval()
    g = torch.Generator().manual_seed(1)
    lens = torch.randint(lo, hi + 1, (prompts,), generator=g).tolist()
    rows = [torch.randint(3, 49000, (k,), generator=g) for k in lens]
    kw = dict(do_sample=True, temperature=0.8, num_return_sequences=n, max_new_tokens=new, min_new_tokens=new,
              pad_token_id=0, eos_token_id=None)  # fmt: skip

    def one_by_one():
        for r in rows:
            x = r[None, :].to(device)
            lm.generate(input_ids=x, attention_mask=torch.ones_like(x), **kw)

    width = max(lens)
    ids = torch.zeros((prompts, width), dtype=torch.long)
    mask = torch.zeros((prompts, width), dtype=torch.long)
    for i, r in enumerate(rows):  # left padding, as the local backend batches
        ids[i, width - len(r) :], mask[i, width - len(r) :] = r, 1

    def batched():
        lm.generate(input_ids=ids.to(device), attention_mask=mask.to(device), **kw)

    out = {"prompts": prompts, "n": n, "new_tokens": new, "prompt_tokens": [lo, hi]}
    with torch.no_grad():
        x = rows[0][None, :].to(device)
        lm.generate(
            input_ids=x, attention_mask=torch.ones_like(x), **dict(kw, max_new_tokens=2, min_new_tokens=2)
        )
        for name, fn in (("one_at_a_time", one_by_one), ("batched", batched)):
            _sync(torch, device)
            t0 = time.perf_counter()
            fn()
            _sync(torch, device)
            dt = time.perf_counter() - t0
            out[name] = {"s": round(dt, 3), "generated_tokens_per_s": round(prompts * n * new / dt, 1)}
    out["speedup"] = round(out["one_at_a_time"]["s"] / out["batched"]["s"], 2)
    return out


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
        torch.set_num_threads(1)  # a check of the script, often beside other jobs: no oversubscription
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
    del model
    small = dict(prompts=4, n=2, new=8, lo=8, hi=24) if a.cpu_smoke else {}
    res["cycle_proposals"] = proposals_bench(torch, cfg_d, device, dtype, **small)
    print(json.dumps(res, indent=1))
    if os.environ.get("OUT"):
        Path(os.environ["OUT"], "gpu_lm_backbone.json").write_text(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
