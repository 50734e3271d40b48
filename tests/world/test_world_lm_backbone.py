"""The LM backbone (``encoder: lm:<alias or path>``): pooling, layers, freezing, the CPU LoRA refusal
and the on-disk feature cache — on a tiny random Llama checkpoint built from a config (a test
double for SmolLM2; the real default is exercised by a slow test)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from rsi_workbench.world.encoders import load_backbone, minilm_path
from rsi_workbench.world.feature_store import DiskFeatures
from rsi_workbench.world.lm_backbone import LoRANeedsGPU, parse_lm_spec


@pytest.fixture(scope="module")
def tiny_lm(tmp_path_factory):
    """A 2-layer random Llama (hidden 32) saved with a tokenizer: a local checkpoint folder."""
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    path = tmp_path_factory.mktemp("tiny-llama")
    tok = AutoTokenizer.from_pretrained(minilm_path())
    cfg = LlamaConfig(
        vocab_size=tok.vocab_size,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=256,
    )
    torch.manual_seed(0)
    LlamaForCausalLM(cfg).save_pretrained(path)
    tok.save_pretrained(path)
    return path


def test_parse_lm_spec():
    s = parse_lm_spec("lm:default")
    assert (s.name, s.pooling, s.layer) == ("default", "mean", None)
    s = parse_lm_spec("lm:/models/x?pool=last&layer=-2")
    assert (s.name, s.pooling, s.layer) == ("/models/x", "last", -2)
    assert parse_lm_spec("lm:default?layer=last").layer is None
    for bad, msg in [
        ("lm:", "needs a model name"),
        ("lm:default?pool=max", "pooling"),
        ("lm:d?x=1", "unknown"),
    ]:
        with pytest.raises(ValueError, match=msg):
            parse_lm_spec(bad)


def _manual_hidden(bb, text, layer=None):
    w = bb._windows(text)
    assert len(w) == 1
    with torch.no_grad():
        out = bb.model(input_ids=torch.tensor(w), output_hidden_states=True)
    return (out.last_hidden_state if layer is None else out.hidden_states[layer])[0]


def test_mean_last_and_layer_pooling_match_the_hidden_states(tiny_lm):
    texts = ["def f(x):\n    return x + 1", "assert f(1) == 2", "a much longer text " * 5]
    mean = load_backbone(f"lm:{tiny_lm}", device="cpu")
    assert mean.hidden_size == 32 and mean.name.endswith("?pool=mean")
    assert not any(p.requires_grad for p in mean.model.parameters())  # frozen on CPU
    got = mean.features(texts)
    for i, t in enumerate(texts):  # batched with padding == one at a time
        assert np.allclose(got[i], _manual_hidden(mean, t).mean(0).numpy(), atol=1e-5)
    last = load_backbone(f"lm:{tiny_lm}?pool=last", device="cpu")
    got_last = last.features(texts)
    for i, t in enumerate(texts):
        assert np.allclose(got_last[i], _manual_hidden(last, t)[-1].numpy(), atol=1e-5)
    mid = load_backbone(f"lm:{tiny_lm}?layer=1", device="cpu")
    assert np.allclose(
        mid.features(texts[:1])[0], _manual_hidden(mid, texts[0], 1).mean(0).numpy(), atol=1e-5
    )
    assert len({mean.fingerprint, last.fingerprint, mid.fingerprint}) == 3  # pooling/layer are identity
    with pytest.raises(ValueError, match="layer 7 outside"):
        load_backbone(f"lm:{tiny_lm}?layer=7", device="cpu")


def test_last_pooling_of_a_chunked_text_takes_the_last_window(tiny_lm):
    bb = load_backbone(f"lm:{tiny_lm}?pool=last", device="cpu")
    bb.max_positions = 16
    text = " ".join(f"w{i}" for i in range(40))
    windows = bb._windows(text)
    assert len(windows) > 1
    with torch.no_grad():
        want = bb.model(input_ids=torch.tensor([windows[-1]])).last_hidden_state[0, -1]
    assert np.allclose(bb.features([text])[0], want.numpy(), atol=1e-5)


def test_lora_on_cpu_is_refused_with_the_reason(tiny_lm):
    with pytest.raises(LoRANeedsGPU, match="GPU path"):
        load_backbone(f"lm:{tiny_lm}", device="cpu", lora=True)


def test_disk_features_are_content_addressed_and_reused(tiny_lm, tmp_path):
    bb = load_backbone(f"lm:{tiny_lm}", device="cpu")
    store = DiskFeatures(bb, tmp_path)
    a = store(["x = 1", "y = 2", "x = 1"])
    assert store.computed == 2 and np.array_equal(a[0], a[2])
    assert (tmp_path / f"{bb.fingerprint}.npz").exists()
    again = DiskFeatures(load_backbone(f"lm:{tiny_lm}", device="cpu"), tmp_path)
    b = again(["y = 2", "x = 1"])
    assert again.computed == 0 and np.array_equal(b, a[[1, 0]])
    other = DiskFeatures(load_backbone(f"lm:{tiny_lm}?pool=last", device="cpu"), tmp_path)
    other(["x = 1"])
    assert other.computed == 1 and len(list(tmp_path.glob("*.npz"))) == 2


@pytest.mark.slow
def test_default_lm_backbone_embeds_through_the_model_room():
    """``lm:default``: the prepared SmolLM2-135M (prepared on first use from the wheel)."""
    bb = load_backbone("lm:default", device="cpu")
    assert bb.hidden_size == 576 and bb.fingerprint.startswith("lm-")
    f = bb.features(["def add(a, b):\n    return a - b\n", "assert add(1, 2) == 3"])
    assert f.shape == (2, 576) and np.isfinite(f).all()
