"""Model-backed research roles chosen per role in a campaign config.

``roles: {lead: {model: {...}, temperature}, generation: {model: {...}, temperature, max_tokens},
evolution: ..., critique: ..., progress: ...}``: a role with a ``model:`` block is driven by that
language model (:class:`~rsi_workbench.discovery.model_lead.ModelLead` scoring its valid decisions
for the Lead, :class:`~rsi_workbench.discovery.roles.LLMProposer` for Generation / Evolution,
:class:`~rsi_workbench.discovery.judges.LLMCritique` (blinded) and
:class:`~rsi_workbench.discovery.judges.LLMProgress` for the judges); a role left out stays
rule-based. The Compiler stays rule-based. A judging reply that does not parse is a failed turn
and writes no preference or label.

Every role's calls go through one :class:`~rsi_workbench.models.RecordedLLM` per role, opened on the
campaign's run and budget ledger: recorded as ``model_call`` events, replayed on resume, charged to
``agent_calls`` and (when the config sets it) ``model_tokens``. Roles naming the same model share
one loaded backend. An ``openai`` model is probed before the run starts and refused when it lacks a
capability its role needs (the Lead needs scoring).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import Field

from rsi_workbench.budget import BudgetLedger
from rsi_workbench.config import StrictModel
from rsi_workbench.models import ModelConfig
from rsi_workbench.records import Run

# what each model-backed role calls on its model
ROLE_NEEDS: dict[str, frozenset[str]] = {
    "lead": frozenset({"score"}),
    "generation": frozenset({"chat"}),
    "evolution": frozenset({"chat"}),
    "critique": frozenset({"chat"}),
    "progress": frozenset({"chat"}),
}
# the roles theta (and the fine-tuned theta+) may drive; Critique and Progress never (paper: they
# would grade theta's own proposals), so they are never trained on either
THETA_ROLES = ("lead", "generation", "evolution")


class RoleModel(StrictModel):
    """One role's language model and how it samples (``max_tokens`` is unused by the scoring Lead)."""

    model: ModelConfig
    temperature: float = Field(default=0.0, ge=0.0, description="0: greedy (the Lead: most likely decision)")
    max_tokens: int = Field(
        default=512, ge=1, le=32768, description="tokens per Generation/Evolution/Critique/Progress reply"
    )


class Roles(StrictModel):
    """Which research roles a model drives; a role left out is the built-in rule role."""

    lead: RoleModel | None = None
    generation: RoleModel | None = None
    evolution: RoleModel | None = None
    critique: RoleModel | None = None
    progress: RoleModel | None = None

    def active(self) -> dict[str, RoleModel]:
        """The roles with a model, by name."""
        return {r: getattr(self, r) for r in ROLE_NEEDS if getattr(self, r) is not None}


def check_roles(roles: Roles | None) -> dict[str, dict[str, Any]]:
    """Probe every ``openai`` role model that is not replay-only and refuse one that lacks what its
    role needs (error names the field, server and model); returns the probe results by role."""
    from rsi_workbench.models.probe import probe_server, require

    probes: dict[str, dict[str, Any]] = {}
    for role, rm in (roles.active() if roles else {}).items():
        cfg = rm.model
        if cfg.backend != "openai" or cfg.replay:
            require(cfg, ROLE_NEEDS[role], where=f"roles.{role}.model")
            continue
        p = probe_server(cfg)
        require(cfg, ROLE_NEEDS[role], where=f"roles.{role}.model", probe=p)
        probes[role] = p.to_dict()
    return probes


def open_roles(roles: Roles | None, run: Run, ledger: BudgetLedger) -> dict[str, Any]:
    """The model-backed roles of a campaign on its open run and ledger: ``{"lead": ModelLead,
    "generation": LLMProposer, "evolution": LLMProposer, "critique": LLMCritique, "progress":
    LLMProgress}`` for the roles with a model."""
    from rsi_workbench.discovery.judges import LLMCritique, LLMProgress
    from rsi_workbench.discovery.model_lead import ModelLead
    from rsi_workbench.discovery.roles import LLMProposer
    from rsi_workbench.models import open_model, shared_loaders

    active = roles.active() if roles else {}
    loaders = shared_loaders({r: rm.model for r, rm in active.items()})
    out: dict[str, Any] = {}
    for role, rm in active.items():
        cfg = rm.model
        llm = open_model(cfg, run, ledger, role=role, load=loaders[role])
        tag = f"{cfg.backend}:{cfg.name}" + (f"+{Path(cfg.adapter).name}" if cfg.adapter else "")
        kw = {"name": f"llm-{role}:{tag}", "max_tokens": rm.max_tokens, "temperature": rm.temperature}
        if role == "lead":
            out[role] = ModelLead(llm=llm, name=f"llm-lead:{tag}", temperature=rm.temperature)
        elif role == "critique":
            # a stage's comparisons in flight together, records as one by one (models.parallel)
            out[role] = LLMCritique(llm, concurrency=cfg.concurrency, **kw)  # type: ignore[arg-type]
        elif role == "progress":
            out[role] = LLMProgress(llm, **kw)  # type: ignore[arg-type]
        else:
            out[role] = LLMProposer(
                llm, name=f"llm-{role}:{tag}", max_tokens=rm.max_tokens, temperature=rm.temperature
            )
    return out
