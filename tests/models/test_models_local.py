"""The transformers backend: batched, seeded generation, stop strings, truncation, scoring;
and the real SmolLM2 default on CPU."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from rsi_workbench.models import ModelConfig  # noqa: E402
from rsi_workbench.models.local import TransformersLM, truncate_messages  # noqa: E402

HI = [{"role": "user", "content": "hi"}]


def test_n_samples_are_seeded_and_counted(tiny_lm):
    a = tiny_lm.chat(HI, n=3, temperature=1.0, max_tokens=6, seed=7)
    b = tiny_lm.chat(HI, n=3, temperature=1.0, max_tokens=6, seed=7)
    c = tiny_lm.chat(HI, n=3, temperature=1.0, max_tokens=6, seed=8)
    assert len(a.texts) == 3 and a.texts == b.texts and a.texts != c.texts
    assert a.completion_tokens == 18 and a.finish_reasons == ["length"] * 3
    assert a.prompt_tokens == len("user: hi\nassistant: ") and a.backend == "transformers:tiny"
    greedy = tiny_lm.chat(HI, n=2, max_tokens=4)
    assert greedy.texts[0] == greedy.texts[1]


def test_many_prompts_batch_like_one_at_a_time(tiny_lm):
    convs = [
        HI,
        [{"role": "system", "content": "be brief"}, {"role": "user", "content": "a longer question"}],
    ]
    batch = tiny_lm.chat_batch(convs, max_tokens=5)
    single = [tiny_lm.chat(c, max_tokens=5) for c in convs]
    assert [r.texts for r in batch] == [r.texts for r in single]
    assert [r.prompt_tokens for r in batch] == [r.prompt_tokens for r in single]
    assert batch[0].meta["batch"] == 2


def test_stop_strings_cut_the_text(tiny_lm):
    kw = dict(temperature=1.0, seed=3, max_tokens=8)
    free = tiny_lm.chat(HI, **kw)
    stop = next(ch for ch in free.text[1:] if ch.isalnum())
    cut = tiny_lm.chat(HI, stop=[stop], **kw)
    assert cut.text == free.text[: free.text.find(stop)] and cut.finish_reasons == ["stop"]
    assert cut.completion_tokens < 8
    # a row stopped early by a stop string is padded to the batch's length: padding is not counted
    tok = tiny_lm.tokenizer
    ids = tok("ab", add_special_tokens=False)["input_ids"]
    eos = tiny_lm._eos_ids()
    assert tiny_lm._decode(ids + [tok.pad_token_id] * 3, eos, ["b"]) == ("a", "stop", 2)
    assert tiny_lm._decode(ids + [tok.eos_token_id, tok.pad_token_id], eos, []) == ("ab", "stop", 3)
    assert tiny_lm._decode(ids, eos, []) == ("ab", "length", 2)


def test_long_prompts_truncate_by_the_declared_rule(tiny_parts):
    model, tok = tiny_parts
    lm = TransformersLM(model, tok, identity="transformers:tiny", context_tokens=120)
    msgs = [
        {"role": "system", "content": "S" * 20},
        {"role": "user", "content": "old " * 20},
        {"role": "assistant", "content": "reply"},
        {"role": "user", "content": "now?"},
    ]
    ids, cut = truncate_messages(tok, msgs, 60)
    text = tok.decode(ids)
    assert cut > 0 and len(ids) <= 60
    assert text.startswith("system: " + "S" * 20) and "old" not in text and text.endswith("now?\nassistant: ")
    r = lm.chat(msgs, max_tokens=60)
    assert r.truncated_tokens == cut and r.prompt_tokens == len(ids)
    huge = [{"role": "user", "content": "x" * 500}]
    ids, cut = truncate_messages(tok, huge, 50)
    assert len(ids) == 50 and cut == len("user: " + "x" * 500 + "\nassistant: ") - 50


def test_scores_equal_a_full_forward_pass(tiny_lm, tiny_parts):
    model, tok = tiny_parts
    prompt, conts = "operation: ", ["evolve", "restart"]
    scores, n_tokens = tiny_lm.score_with_tokens(prompt, conts, end=True)
    assert n_tokens == len(prompt) + sum(len(c) + 1 for c in conts)
    p = tok(prompt, add_special_tokens=False)["input_ids"]
    for s, c in zip(scores, conts, strict=True):
        cid = tok(c, add_special_tokens=False)["input_ids"] + [tok.eos_token_id]
        with torch.no_grad():
            lp = torch.log_softmax(model(input_ids=torch.tensor([p + cid])).logits[0], -1)
        assert s == pytest.approx(sum(float(lp[len(p) - 1 + i, t]) for i, t in enumerate(cid)), rel=1e-4)


def test_load_a_checkpoint_directory_from_config(tiny_checkpoint):
    lm = TransformersLM.load(ModelConfig(name=str(tiny_checkpoint), device="cpu", dtype="fp32"))
    assert lm.identity.startswith("transformers:") and lm.name == str(tiny_checkpoint)
    assert lm.chat(HI, max_tokens=3).completion_tokens == 3
    with pytest.raises(FileNotFoundError, match="alias"):
        TransformersLM.load(ModelConfig(name="no/such/model"))


@pytest.mark.slow
def test_real_default_smollm2_answers_on_cpu(smol_dir):
    lm = TransformersLM.load(ModelConfig(name="default", device="cpu"))
    lm.cpu_threads = 1  # on a shared 2-core machine one thread is ~10x faster than two
    assert (smol_dir / "config.json").exists() and lm.context_tokens == 8192
    r = lm.chat(
        [{"role": "user", "content": "What is the capital of France? Answer in one word."}], max_tokens=16
    )
    assert "Paris" in r.text and r.completion_tokens <= 16 and r.prompt_tokens > 10
    two = lm.chat_batch(
        [HI, [{"role": "user", "content": "Say yes."}]], n=2, temperature=0.7, max_tokens=8, seed=0
    )
    assert [len(x.texts) for x in two] == [2, 2]
    good, bad = lm.score("The capital of France is", [" Paris", " Banana"])
    assert good > bad


def test_plain_completion_continues_the_raw_prompt(tiny_parts):
    model, tok = tiny_parts
    lm = TransformersLM(model, tok, identity="transformers:tiny", context_tokens=40, cpu_threads=1)
    r = lm.complete("abc", max_tokens=5, n=2, temperature=1.0, seed=1)
    assert r.prompt_tokens == 3 and len(r.texts) == 2 and r.truncated_tokens == 0
    long = lm.complete("x" * 50, max_tokens=5)
    assert long.prompt_tokens == 35 and long.truncated_tokens == 15
