"""Encoders: the chunk-and-mean over-length policy, feature caching, and the real MiniLM."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from rsi_workbench.world.encoders import (
    OVERLENGTH_POLICY,
    FeatureCache,
    OverlengthError,
    load_backbone,
    minilm_path,
)


def test_chunk_and_mean_equals_mean_over_all_window_tokens(tiny_backbone):
    bb = tiny_backbone
    text = " ".join(f"token{i}" for i in range(400))  # far beyond 128 positions
    windows = bb._windows(text)
    assert len(windows) > 1 and all(len(w) <= bb.max_positions for w in windows)
    with torch.no_grad():
        states = [bb.model(input_ids=torch.tensor([w])).last_hidden_state[0] for w in windows]
    manual = torch.cat(states).mean(0).numpy()
    got = bb.features([text, "short text"])
    assert got.shape == (2, bb.hidden_size)
    assert np.allclose(got[0], manual, atol=1e-5)
    assert bb.stats["chunked_texts"] >= 1


def test_overlength_beyond_max_chunks_raises():
    bb = load_backbone("tiny", device="cpu", max_chunks=2)
    with pytest.raises(OverlengthError, match="max_chunks=2"):
        bb.features(["word " * 2000])


def test_unknown_encoder_names_the_problem(tmp_path):
    with pytest.raises(FileNotFoundError, match="never downloaded"):
        load_backbone(str(tmp_path / "no-such-model"))


def test_feature_cache_round_trip(tiny_backbone):
    cache = FeatureCache(tiny_backbone.fingerprint, tiny_backbone.hidden_size)
    a = cache.featurize(tiny_backbone, ["x = 1", "y = 2", "x = 1"])
    assert np.array_equal(a[0], a[2]) and len(cache.vectors) == 2
    back = FeatureCache.from_bytes(cache.to_bytes())
    assert back.policy == OVERLENGTH_POLICY and np.array_equal(
        back.lookup(sorted(back.vectors)), cache.lookup(sorted(cache.vectors))
    )
    other = load_backbone("tiny", device="cpu", seed=1)
    with pytest.raises(ValueError, match="feature cache is for backbone"):
        cache.featurize(other, ["z"])


@pytest.mark.slow
def test_minilm_loads_offline_and_encodes_the_longest_humanevalfix_task():
    from rsi_workbench.datasets import load

    assert (minilm_path() / "model.safetensors").exists()
    bb = load_backbone("minilm", device="cpu")
    assert bb.hidden_size == 384 and bb.max_positions == 512
    rows = load("humanevalpack-python")
    longest = max(rows, key=lambda r: len(r["declaration"] + r["buggy_solution"] + r["example_test"]))
    text = longest["declaration"] + longest["buggy_solution"] + "\n" + longest["example_test"]
    feats = bb.features([text, "def f():\n    return 1\n"])
    assert feats.shape == (2, 384) and np.isfinite(feats).all()
    assert bb.stats["max_chunks"] >= 1


def test_local_checkpoint_with_lora_trains_only_adapters(tmp_path, tiny_backbone):
    """The GPU path on CPU: a local HF folder + LoRA inside the model; base weights stay frozen."""
    from rsi_workbench.world.data import make_batch
    from rsi_workbench.world.encoders import text_encoder
    from rsi_workbench.world.model import OutcomeWorldModel, WorldModelConfig
    from rsi_workbench.world.train import TrainConfig, train

    tiny_backbone.model.save_pretrained(tmp_path / "tiny-hf")
    tiny_backbone.tokenizer.save_pretrained(tmp_path / "tiny-hf")
    bb = load_backbone(str(tmp_path / "tiny-hf"), device="cpu", lora=True)
    assert bb.lora and bb.fingerprint.endswith("+lora")
    cfg = WorldModelConfig(
        input_dim=bb.hidden_size, dim=32, n_factors=2, rank=16, factor_hidden=16, readout_hidden=16
    )
    m = OutcomeWorldModel(cfg, encoder=text_encoder(bb, dim=32))
    trainable = {
        n for n, p in m.named_parameters() if p.requires_grad and n.startswith("core.encoder.backbone_model")
    }
    assert trainable and all("lora_" in n for n in trainable)
    before = {
        n: p.detach().clone() for n, p in m.named_parameters() if n.startswith("core.encoder.backbone_model")
    }
    texts = ["def f(x): return x", "def g(y): return y * 2", "assert f(1) == 1", "status AC 0.01s"]
    batch = make_batch(texts, texts[::-1], texts, [0, 1, 0, 1], group=[0, 0, 1, 1], outcome=texts)
    train(m, batch, TrainConfig(epochs=2, batch_size=4, lr_backbone=1e-2, progress=False, device="cpu"))
    after = dict(m.named_parameters())
    changed = {n for n in before if not torch.equal(before[n], after[n].detach())}
    assert changed and changed <= trainable
    assert all(p.grad is None for p in m.core.target_encoder.parameters())
