"""Credit-weighted fine-tuning (eq. 8): target mask, zero gradient outside it, per-trajectory weighting."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from rsi_workbench.discovery.sft import (  # noqa: E402
    Segment,
    SFTSettings,
    SFTTrajectory,
    byte_level_tokenizer,
    encode,
    load_checkpoint,
    render_assistant,
    render_message,
    role_accounting,
    save_checkpoint,
    tiny_causal_lm,
    train_weighted_sft,
    trajectory_loss,
    weighted_sft_loss,
)
from rsi_workbench.records import Run  # noqa: E402


@pytest.fixture(scope="module")
def tok():
    return byte_level_tokenizer()


def _traj(tid: str, role: str, answer: str, omega: float, *, failed: str | None = None) -> SFTTrajectory:
    segs = [*render_message("system", "you are the lead"), *render_message("user", "state: h1 h2")]
    if failed:
        segs += render_assistant(failed, None, supervised=False)  # known-failed action: context only
        segs += render_message("tool", "error: unknown parent")
    segs += render_assistant(answer, {"name": "decide", "arguments": {"op": "evolve"}}, supervised=True)
    return SFTTrajectory(tid, role, tuple(segs), omega)


def test_byte_tokenizer_is_lossless(tok):
    text = "operation: evolve\nparents: h-3,h_4\ndirection: Ωmega ✓"
    ids = tok(text, add_special_tokens=False)["input_ids"]
    assert tok.decode(ids) == text and len(ids) == len(text.encode())


def test_target_mask_covers_only_supported_outputs(tok):
    t = _traj("t", "lead", "operation: evolve", 1.0, failed="operation: bogus")
    e = encode(t, tok)
    ids = e.input_ids
    targets = [i for i, m in zip(ids, e.target, strict=True) if m]
    text = tok.decode([i for i in targets if i != tok.eos_token_id])
    assert text == 'operation: evolve{"op": "evolve"}'
    assert targets.count(tok.eos_token_id) == 2  # each supervised span ends with an end token
    assert "bogus" not in text and "unknown parent" not in text


@pytest.mark.slow
def test_zero_gradient_outside_target_mask(tok):
    model = tiny_causal_lm(len(tok), seed=1)
    e = encode(_traj("t", "lead", "operation: evolve", 0.7, failed="operation: bogus"), tok)
    ids = torch.tensor([e.input_ids])
    tgt = torch.tensor([e.target])
    logits = model(input_ids=ids).logits.detach().requires_grad_(True)
    loss = weighted_sft_loss(logits, ids, tgt, torch.tensor([0.7]))
    loss.backward()
    g = logits.grad[0]  # logits at t predict token t+1
    predicts_target = torch.zeros(len(e.input_ids), dtype=torch.bool)
    predicts_target[:-1] = tgt[0, 1:]
    assert torch.all(g[~predicts_target] == 0.0)  # exactly zero, not just small
    assert torch.all(g[predicts_target].abs().sum(-1) > 0)
    # with the logits fixed, changing the labels outside the mask changes nothing at all
    ids2 = ids.clone()
    outside = (~tgt[0]).nonzero().flatten()[5:15]
    ids2[0, outside] = (ids2[0, outside] + 1) % 256
    loss_relabeled = weighted_sft_loss(logits.detach(), ids2, tgt, torch.tensor([0.7]))
    # same logits, different non-target labels -> identical loss
    assert float(loss_relabeled) == pytest.approx(float(loss.detach()), abs=0.0)


def test_two_trajectory_weighting_matches_eq8(tok):
    model = tiny_causal_lm(len(tok), seed=2)
    a = encode(_traj("a", "lead", "operation: evolve\nparents: h1\ndirection: x", 0.3), tok)
    b = encode(_traj("b", "generation", "ok", 0.05), tok)
    assert a.n_targets != b.n_targets
    pad = tok.pad_token_id

    def mean_nll(e):
        ids = torch.tensor([e.input_ids])
        logp = torch.log_softmax(model(input_ids=ids).logits[0, :-1], -1)
        tok_nll = -logp.gather(-1, ids[0, 1:, None])[:, 0]
        m = torch.tensor(e.target[1:])
        return tok_nll[m].sum() / m.sum()

    expected = 0.3 * mean_nll(a) + 0.05 * mean_nll(b)
    together = trajectory_loss(model, [a, b], pad)  # padded batch of two
    assert together.item() == pytest.approx(expected.item(), rel=1e-5)
    # batching does not renormalize: the sum of two single-trajectory losses is the same number
    apart = trajectory_loss(model, [a], pad) + trajectory_loss(model, [b], pad)
    assert apart.item() == pytest.approx(together.item(), rel=1e-5)
    # gradients add the same way
    model.zero_grad()
    together.backward()
    g_together = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    (trajectory_loss(model, [a], pad) + trajectory_loss(model, [b], pad)).backward()
    for g1, p in zip(g_together, model.parameters(), strict=True):
        assert torch.allclose(g1, p.grad, atol=1e-6)


@pytest.mark.slow
def test_training_lowers_weighted_loss_and_checkpoints_roundtrip(tok, tmp_path):
    model = tiny_causal_lm(len(tok), seed=3)
    trajs = [
        _traj("l1", "lead", "operation: evolve\nparents: h1\ndirection: x", 0.5),
        _traj("g1", "generation", "claim: x", 0.5),
        _traj("c1", "critique", "prefer a", 0.0),  # context-only role: omega 0
        SFTTrajectory("e1", "evolution", (Segment("<|user|>\nno output\n"),), 0.2),  # no target token
    ]
    s = SFTSettings(epochs=8, lr=3e-3, batch_size=2, seed=0)
    res = train_weighted_sft(model, tok, trajs, s, progress=False)
    assert res.trained == ["l1", "g1"] or sorted(res.trained) == ["g1", "l1"]
    assert res.dropped == {"c1": "omega = 0", "e1": "no eligible target token"}
    assert res.losses[-1] < res.losses[0]
    acc = role_accounting(trajs, tok, res).set_index("role")
    assert acc.loc["lead", "trained"] == 1 and acc.loc["critique", "trained"] == 0
    assert acc.loc["critique", "sequence_tokens"] == "—" and acc.loc["critique", "supervised_tokens"] == 0
    assert acc.loc["total", "collected"] == 4 and acc.loc["total", "trained"] == 2
    assert 0 < acc.loc["total", "supervised_share"] < 1
    run = Run.create(tmp_path / "r", {"x": 1}, kind="test")
    sha = save_checkpoint(run, model, tok, name="theta_plus")
    m2, t2 = load_checkpoint(run, sha)
    e = encode(trajs[0], tok)
    with torch.no_grad():
        assert torch.allclose(
            trajectory_loss(model, [e], tok.pad_token_id), trajectory_loss(m2, [e], t2.pad_token_id)
        )


@pytest.mark.gpu
def test_weighted_sft_on_cuda_matches_cpu_loss(tok):
    model = tiny_causal_lm(len(tok), seed=4)
    trajs = [
        _traj("l1", "lead", "operation: evolve\nparents: h1\ndirection: x", 0.5),
        _traj("g1", "generation", "ok", 0.2),
    ]
    enc = [encode(t, tok) for t in trajs]
    with torch.no_grad():
        cpu = trajectory_loss(model, enc, tok.pad_token_id).item()
        model.to("cuda")
        gpu = trajectory_loss(model, enc, tok.pad_token_id).item()
    assert gpu == pytest.approx(cpu, rel=1e-3)
    res = train_weighted_sft(model, tok, trajs, SFTSettings(epochs=4, lr=3e-3, batch_size=2), progress=False)
    assert res.losses[-1] < res.losses[0] and next(model.parameters()).is_cuda
