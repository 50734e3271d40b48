"""A Lead driven by a causal LM policy theta (the model-backed mode of the campaign).

The model reads the same prompt the campaign records for the Lead (its system message and
``LeadState.prompt()``, rendered with ``sft``'s template) and answers in the constrained format
``operation: ..\\nparents: ..\\ndirection: ..``. Decoding is constrained: every decision the Lead
validator would accept is enumerated and scored by the model's log-probability of its formatted
text, and the best (or a seeded sample) is emitted -- so whatever theta is, its output parses, and a
fine-tuned theta+ really changes what the next campaign does.
"""

from __future__ import annotations

import itertools
import math
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rsi_workbench.agents import LLM
from rsi_workbench.discovery.lead import (
    InvalidLeadDecision,
    LeadDecision,
    LeadState,
    format_lead_decision,
    parse_lead_decision,
    validate_lead_decision,
)
from rsi_workbench.discovery.roles import SYSTEM
from rsi_workbench.discovery.sft import assistant_prefix, render_message


def lead_prompt(state: LeadState) -> str:
    """The rendered context the model continues: system and user messages, then the assistant tag."""
    segs = render_message("system", SYSTEM["lead"]) + render_message("user", state.prompt())
    return "".join(s.text for s in segs) + assistant_prefix()


def valid_decisions(state: LeadState, max_crossover_pairs: int = 64) -> list[LeadDecision]:
    """Every decision the validator accepts now (crossover pairs capped, most recent nodes first)."""
    out: list[LeadDecision] = []
    allowed = state.allowed_operations()
    for op in allowed:
        if op == "restart":
            out += [LeadDecision("restart", (), d) for d in state.directions]
        elif op in ("evolve", "repair"):
            out += [LeadDecision(op, (n.hypothesis_id,), n.direction) for n in state.nodes]
        elif op == "crossover":
            nodes = sorted(state.nodes, key=lambda n: (-n.episode, n.hypothesis_id))
            pairs = [
                (a, b)
                for a, b in itertools.combinations(nodes, 2)
                if a.direction == b.direction
                and frozenset((a.hypothesis_id, b.hypothesis_id)) not in state.crossed
            ][:max_crossover_pairs]
            out += [
                LeadDecision("crossover", tuple(sorted((a.hypothesis_id, b.hypothesis_id))), a.direction)
                for a, b in pairs
            ]
    ok = []
    for d in out:
        try:
            ok.append(validate_lead_decision(d, state))
        except InvalidLeadDecision:
            continue
    return ok


@dataclass
class ModelLead:
    """A ``discovery.lead.Lead`` backed by a Hugging Face causal LM (any size; CPU or GPU), or by any
    ``agents.LLM`` whose ``score`` works (``ModelLead(llm=open_model(cfg, run))``: recorded, replayable).

    ``temperature`` = 0 picks the most likely valid decision; > 0 samples from the model's
    distribution restricted to valid decisions with the campaign's seeded ``rng``.
    """

    model: Any = None  # a Hugging Face causal LM (fine-tuned in place by the round), or None with ``llm``
    tokenizer: Any = None
    name: str = "model-lead"
    temperature: float = 0.0
    max_prompt_tokens: int = 6144
    cpu_threads: int | None = 1  # small models on a shared CPU score fastest single-threaded
    last_scores: dict[str, float] = field(default_factory=dict, repr=False)
    llm: LLM | None = None  # any scoring ``agents.LLM`` (e.g. a recorded ``models.open_model``)

    def __post_init__(self) -> None:
        if self.llm is None and (self.model is None or self.tokenizer is None):
            raise ValueError("ModelLead needs a model and tokenizer, or an llm that scores")
        if self.llm is not None and "score" not in getattr(self.llm, "capabilities", {"score"}):
            raise ValueError(
                "ModelLead scores its valid decisions, and this model cannot score (the openai backend "
                "has no log-probabilities); use a model with backend 'transformers'"
            )

    def decide(self, state: LeadState, rng: random.Random) -> LeadDecision:
        cands = valid_decisions(state)
        if not cands:
            raise InvalidLeadDecision("no valid decision exists in this state")
        texts = [format_lead_decision(d) for d in cands]
        scores = self.score(lead_prompt(state), texts)
        self.last_scores = dict(zip(texts, scores, strict=True))
        if self.temperature <= 0.0:
            k = max(range(len(cands)), key=lambda i: scores[i])
        else:
            m = max(scores)
            ws = [math.exp((s - m) / self.temperature) for s in scores]
            k = rng.choices(range(len(cands)), weights=ws)[0]
        return parse_lead_decision(texts[k], state)  # the validator checks the emitted text itself

    def score(self, prompt: str, continuations: list[str]) -> list[float]:
        """log pi_theta(continuation + end token | prompt) for each continuation (prompt encoded once):
        through ``llm.score`` when an ``agents.LLM`` drives the Lead, else on ``model`` directly."""
        if self.llm is not None:
            return list(self.llm.score(prompt, continuations, end=True))
        from rsi_workbench.models.local import score_continuations

        scores, _ = score_continuations(
            self.model,
            self.tokenizer,
            prompt,
            continuations,
            end=True,
            max_prompt_tokens=self.max_prompt_tokens,
            cpu_threads=self.cpu_threads,
        )
        return scores


def load_model_lead(run_dir: str | Path, sha: str, device: str | None = None, **kwargs: Any) -> ModelLead:
    """theta from a checkpoint artifact (``sft.save_checkpoint``) as a Lead named ``model-lead:<sha[:12]>``,
    e.g. ``run_campaign(cfg, out, lead=load_model_lead(round_dir, sha))`` for the next round's campaign."""
    from rsi_workbench.discovery.sft import load_checkpoint
    from rsi_workbench.records import Run

    model, tok = load_checkpoint(Run.open(Path(run_dir)), sha, device=device)
    return ModelLead(model, tok, name=f"model-lead:{sha[:12]}", **kwargs)
