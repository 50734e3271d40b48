"""Model-backed Lead: constrained decoding over valid decisions, and theta+ changing the decision."""

from __future__ import annotations

import random

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from rsi_workbench.discovery.lead import LeadState, NodeSummary, format_lead_decision, parse_lead_decision  # noqa: E402
from rsi_workbench.discovery.model_lead import ModelLead, lead_prompt, valid_decisions  # noqa: E402
from rsi_workbench.discovery.sft import (  # noqa: E402
    Segment,
    SFTSettings,
    SFTTrajectory,
    byte_level_tokenizer,
    tiny_causal_lm,
    train_weighted_sft,
)


@pytest.fixture(autouse=True)
def _one_thread():
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def _state() -> LeadState:
    nodes = (
        NodeSummary("h0", "dirA", "h0", "restart", (), 0, 5.0, "supports", None, added=("x",)),
        NodeSummary("h1", "dirA", "h1", "restart", (), 1, 4.0, "supports", None, added=("y",)),
        NodeSummary("h2", "dirB", "h2", "restart", (), 2, 3.0, "weakens", None, ("missing_control",)),
    )
    return LeadState(3, 0, 10, ("dirA", "dirB"), nodes, {"restart": 3})


def test_valid_decisions_all_pass_the_validator():
    st = _state()
    ds = valid_decisions(st)
    ops = {d.operation for d in ds}
    assert ops == {"restart", "evolve", "repair", "crossover"}
    assert all(
        parse_lead_decision(format_lead_decision(d), st)
        == d.__class__(**{**d.__dict__, "raw": format_lead_decision(d)})
        for d in ds
    )
    assert not any(d.operation == "crossover" and d.direction == "dirB" for d in ds)


@pytest.mark.slow
def test_model_lead_emits_valid_decision_and_theta_plus_changes_it():
    st = _state()
    tok = byte_level_tokenizer()
    model = tiny_causal_lm(len(tok), seed=0)
    lead = ModelLead(model, tok)
    d0 = lead.decide(st, random.Random(0))
    assert d0.raw is not None and parse_lead_decision(d0.raw, st).operation == d0.operation
    # prefix-cached scores equal a full forward pass
    text = format_lead_decision(d0)
    ids = tok(lead_prompt(st), add_special_tokens=False)["input_ids"]
    cid = tok(text, add_special_tokens=False)["input_ids"] + [tok.eos_token_id]
    with torch.no_grad():
        lp = torch.log_softmax(model(input_ids=torch.tensor([ids + cid])).logits[0], -1)
    full = sum(float(lp[len(ids) - 1 + i, c]) for i, c in enumerate(cid))
    assert lead.last_scores[text] == pytest.approx(full, rel=1e-4)
    # supervise a decision theta did not choose (its runner-up); theta+ then emits it
    target = sorted(lead.last_scores, key=lambda k: lead.last_scores[k])[-2]
    assert target != text
    traj = SFTTrajectory("t", "lead", (Segment(lead_prompt(st)), Segment(target, True)), omega=1.0)
    train_weighted_sft(model, tok, [traj], SFTSettings(epochs=10, lr=3e-3, batch_size=1), progress=False)
    d1 = lead.decide(st, random.Random(0))
    assert format_lead_decision(d1) == target
    # sampling mode stays within the valid set
    lead.temperature = 1.0
    rng = random.Random(1)
    valid = {format_lead_decision(d) for d in valid_decisions(st)}
    assert all(format_lead_decision(lead.decide(st, rng)) in valid for _ in range(5))
