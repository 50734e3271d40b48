"""World-model throughput: ``tiny`` vs ``minilm`` (and a local checkpoint on a GPU), side by side.

Measured in one run on real HumanEvalFix programs with injected-bug candidates (no sandbox):

* encode texts/s          — backbone features (chunk-and-mean), no gradients;
* train ex/s (cached)     — the CPU default: OPF + heads on cached backbone features (1 thread on CPU);
* train ex/s (backbone)   — forward+backward through the backbone too (the LoRA/GPU path);
* infer cand/s            — uncached text -> P(all pass), utility for a candidate (suite row).

Usage: ``python benchmarks/world_bench.py [--n 64] [--checkpoint /path/to/hf_model]``.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import time

import numpy as np
import torch

from rsi_workbench.domains.code_repair import inject_bugs, load_humanevalfix
from rsi_workbench.domains.code_repair.world_adapter import SUITE_CONTEXT, encode_action, encode_state
from rsi_workbench.world.data import make_batch
from rsi_workbench.world.encoders import load_backbone, resolve_device
from rsi_workbench.world.model import OutcomeWorldModel, Projection, WorldModelConfig
from rsi_workbench.world.train import TrainConfig, train


def texts(n: int) -> tuple[list[str], list[str], list[str]]:
    rng = random.Random(0)
    tasks = load_humanevalfix()
    states, actions = [], []
    for task in tasks:
        for bug in inject_bugs(task.reference or task.program, task.entry_point, 2, rng):
            states.append(encode_state(task, task.program, None))
            actions.append(encode_action(task.program, bug.program))
            if len(states) >= n:
                return states, actions, [SUITE_CONTEXT] * n
    return states, actions, [SUITE_CONTEXT] * len(states)


def bench(spec: str, device: str, st: list[str], ac: list[str], cx: list[str]) -> dict[str, float]:
    bb = load_backbone(spec, device=device)
    n = len(st)
    bb.features(st[:4])  # warm-up
    t = time.perf_counter()
    fs, fa, fc = bb.features(st), bb.features(ac), bb.features(cx)
    enc = 3 * n / (time.perf_counter() - t)
    labels = np.arange(n) % 5
    batch = make_batch(
        fs, fa, fc, labels, is_suite=np.ones(n, bool), pass_fraction=np.full(n, 0.5), outcome=fc
    )
    model = OutcomeWorldModel(WorldModelConfig(input_dim=bb.hidden_size))
    cfg = TrainConfig(
        epochs=3, batch_size=32, progress=False, device=device, cpu_threads=1 if bb.device == "cpu" else None
    )
    t = time.perf_counter()
    train(model, batch, cfg)
    head = 3 * n / (time.perf_counter() - t)
    # backbone path: gradients flow through the backbone (all weights here; LoRA on a GPU checkpoint)
    proj = Projection(bb.hidden_size, 256).to(bb.device)
    opt = torch.optim.AdamW([*bb.model.parameters(), *proj.parameters()], lr=5e-6)
    bb.model.train()
    m = min(n, 16)
    t = time.perf_counter()
    for s in range(0, m, 8):
        z = proj(bb.forward_features(st[s : s + 8])) + proj(bb.forward_features(ac[s : s + 8]))
        loss = z.pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    full = m / (time.perf_counter() - t)
    bb.model.eval()
    from rsi_workbench.world.api import WorldModel
    from rsi_workbench.world.encoders import FeatureCache

    wm = WorldModel(model, bb, FeatureCache(bb.fingerprint, bb.hidden_size))
    t = time.perf_counter()
    wm.predict(st, ac, cx)
    infer = n / (time.perf_counter() - t)
    return {"encode": enc, "train_cached": head, "train_backbone": full, "infer": infer}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=64)
    ap.add_argument("--checkpoint", default=None, help="a local HF checkpoint (GPU run)")
    ap.add_argument("--device", default="auto")
    args = ap.parse_args()
    st, ac, cx = texts(args.n)
    specs = ["tiny", "minilm"] + ([args.checkpoint] if args.checkpoint else [])
    res = {s: bench(s, args.device, st, ac, cx) for s in specs}
    dev = resolve_device(args.device)[0]
    print(
        f"# world_bench  {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}  {platform.processor() or platform.machine()}"
        f"  cores={os.cpu_count()}  torch threads={torch.get_num_threads()}  device={dev}  n={len(st)} candidates"
    )
    cols = ["encode", "train_cached", "train_backbone", "infer"]
    head = {
        "encode": "encode texts/s",
        "train_cached": "train ex/s (cached)",
        "train_backbone": "train ex/s (backbone)",
        "infer": "infer cand/s",
    }
    print(f"| encoder | {' | '.join(head[c] for c in cols)} |")
    print("|---|" + "---:|" * len(cols))
    for s in specs:
        print(f"| {s} | " + " | ".join(f"{res[s][c]:.1f}" for c in cols) + " |")
    base = res["tiny"]
    for s in specs[1:]:
        print(f"| {s} / tiny | " + " | ".join(f"{res[s][c] / base[c]:.3f}x" for c in cols) + " |")


if __name__ == "__main__":
    main()
