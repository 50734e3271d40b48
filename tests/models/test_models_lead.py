"""ModelLead through the models interface: scores recorded and replayed; a model that cannot score
is refused when the Lead is built, before any call."""

from __future__ import annotations

import random

import pytest

pytest.importorskip("transformers")

from rsi_workbench.discovery.lead import LeadState, NodeSummary  # noqa: E402
from rsi_workbench.discovery.model_lead import ModelLead  # noqa: E402
from rsi_workbench.models import ModelConfig, RecordedLLM, open_model  # noqa: E402
from rsi_workbench.records import Run  # noqa: E402


def _state() -> LeadState:
    nodes = (NodeSummary("h0", "dirA", "h0", "restart", (), 0, 5.0, "supports", None, added=("x",)),)
    return LeadState(1, 0, 10, ("dirA", "dirB"), nodes, {"restart": 1})


def test_model_lead_scores_through_a_recorded_llm_and_replays(tiny_lm, tiny_parts, tmp_path):
    run = Run.create(tmp_path / "r", {})
    lead = ModelLead(llm=RecordedLLM.wrap(tiny_lm, run=run, role="lead"))
    d = lead.decide(_state(), random.Random(0))
    direct = ModelLead(*tiny_parts, cpu_threads=1)
    assert direct.decide(_state(), random.Random(0)) == d
    assert lead.last_scores == pytest.approx(direct.last_scores, rel=1e-4)
    ev = run.events("model_call")
    assert len(ev) == 1 and ev[0].payload["call"] == "score" and ev[0].payload["role"] == "lead"
    replay = ModelLead(llm=RecordedLLM.wrap(tiny_lm, run=run, replay=True))
    assert replay.decide(_state(), random.Random(0)) == d


def test_model_lead_refuses_a_model_that_cannot_score():
    cfg = ModelConfig(backend="openai", name="m", base_url="http://127.0.0.1:9/v1")
    with pytest.raises(ValueError, match="cannot score"):
        ModelLead(llm=open_model(cfg))
    with pytest.raises(ValueError, match="model and tokenizer"):
        ModelLead()
