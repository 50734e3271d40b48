"""DiscoveryRSI (paper: ``papers/discoveryrsi.md``): hypotheses, research graph, roles, campaigns.

API note (stable; the credit side — ``credit/``, ``sft.py``, ``harness.py``, ``model_lead.py`` —
builds on it):

- ``discovery.records``: typed records, each one append-only event of a run.
  ``HypothesisVersion`` (``hypothesis_id, family, version, parents, operation, episode, round,
  domain, direction, content=(claim c, plan π, criteria d, alternatives a), publisher, created_at,
  draft_id``); linked records ``SourceRecord``, ``SupportLink`` (shared data is *not* lineage),
  ``Draft``, ``DraftPromotion``, ``CritiquePreference`` (outcome ``a|b|tie|abstain``),
  ``ProgressLabel`` (``substantive_progress|necessary_repair|duplicate|insufficient_evidence``),
  ``ProfileAssessment`` (DFM-Bench eight axes), ``Contribution`` + ``ContributionEvidence``
  (publisher, episode, created_at, proposal_text, promotion_ids, support_files [{path, sha256}],
  assignment_id), ``LeadAssignment``, ``CompiledTask``, ``ExecutionEvent``; role-tagged
  transcripts ``RoleTurn`` (trajectory_id, role, episode, round, turn, messages_in, output, failed);
  ``LeadDecisionRecord``. ``EVENT_KINDS`` maps event kind -> type.
  Loaders: ``load_records(run) -> DiscoveryRecords`` (typed lists), ``load_typed(run, Type)``,
  ``records_frame(run, Type)``, ``hypotheses_frame(run)``, ``transcripts_frame(run)`` (DataFrames);
  all read completed episodes only. ``validate_hypothesis(dict) -> HypothesisContent`` raises
  ``InvalidHypothesis`` naming each missing component.
- ``discovery.lead``: ``Lead`` Protocol (``name``; ``decide(state: LeadState, rng) -> LeadDecision``),
  built-in ``RuleLead``; ``LeadState.prompt()`` renders the state for a model;
  ``format_lead_decision`` / ``parse_lead_decision(text, state)`` (constrained format
  ``operation: ..\\nparents: ..\\ndirection: ..``) and ``validate_lead_decision`` raise
  ``InvalidLeadDecision``.
- ``discovery.workflow``: ``Harness`` (ψ: ``version``, ``roles: RoleParams``, ``critique:
  CritiqueSchedule``, ``operations: OperationBudget``, ``progress_margin``; ``digest()``).
- ``discovery.graph``: ``ResearchGraph.from_records(recs)`` — ``lineage_edges()``, ``ancestors``,
  ``depth``, ``path_to``, ``support`` (source -> hypotheses; never lineage).
- ``discovery.roles``: ``Session`` (a role trajectory recording turns), ``SYSTEM`` prompts and the
  model-backed ``LLMProposer(llm: agents.LLM)`` (an ``agents.Proposer``); the built-in deterministic
  roles of the tabular domain are ``domains.tabular.roles.TabularGeneration`` / ``TabularEvolution``.
- ``discovery.assess``: DFM-Bench levels — ``AXIS_WEIGHTS``, ``PATH_WEIGHTS``, ``profile``,
  ``weighted``, ``BlindedCritique`` (``agents.Judge``), ``blinded_dossier``, ``judge_progress``,
  ``profile_table``, ``progress_table``, ``path_scores``, ``campaign_allocation``, ``operation_shares``.
- ``discovery.episode``: one episode stage by stage (``decision``, ``work``, ``execution``,
  ``assessment``, ``critique``; ``run_episode``) on any domain behind the ``ResearchDomain`` Protocol;
  ``lead_state(recs, config, harness, episode, domain)``.
- ``discovery.campaign``: ``run_campaign(domain, config, out, *, lead, harness, generation,
  evolution, critique=None, resume=False, kind="discovery", progress=True) -> Path`` — the episode
  loop under budgets; ``discovery.report.campaign_report(path, controls=None)``.
- ``discovery.credit`` (eq. 2-7, 9: ``rating``, ``weight``, ``shares``, ``caps``, ``release``,
  ``pipeline``, ``tables``, ``from_records``), ``discovery.sft`` (eq. 8), ``discovery.harness``
  (eq. 10-11), ``discovery.model_lead``.
- The tabular binding is an experiment: ``experiments.discovery.campaign`` — ``Config``
  (``experiment: discovery``), ``run_campaign(config, out, *, resume=False, lead=None, harness=None,
  generation=None, evolution=None, critique=None, progress=True) -> Path``,
  ``lead_state(recs, config, harness, episode)``, ``report(path)``;
  ``rsi-workbench run configs/discovery/<name>.yaml``; ``experiments.discovery.round`` is one
  improvement round (``discovery_round``).

Trajectory ids are ``e{episode:03d}-{role}`` (``-lead-fallback`` when an invalid Lead output was
replaced); hypothesis ids ``h{episode:03d}-{k}``. Loaders ignore an episode attempt that has no
``episode_finished`` event (a crash), so credit never sees half-written episodes.

The names below are imported on first use (``import rsi_workbench.discovery`` stays cheap)::

    from rsi_workbench.discovery import ResearchDomain, load_records, run_campaign
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rsi_workbench._lazy import lazy_exports

if TYPE_CHECKING:
    from rsi_workbench.discovery.campaign import run_campaign
    from rsi_workbench.discovery.credit import assign_credit, credit_records_from, credit_tables
    from rsi_workbench.discovery.episode import ResearchDomain, lead_state, run_episode
    from rsi_workbench.discovery.graph import ResearchGraph
    from rsi_workbench.discovery.lead import (
        InvalidLeadDecision,
        Lead,
        LeadDecision,
        LeadState,
        RuleLead,
        parse_lead_decision,
    )
    from rsi_workbench.discovery.records import (
        EVENT_KINDS,
        DiscoveryRecords,
        HypothesisContent,
        HypothesisVersion,
        InvalidHypothesis,
        hypotheses_frame,
        load_records,
        load_typed,
        records_frame,
        transcripts_frame,
        validate_hypothesis,
    )
    from rsi_workbench.discovery.report import campaign_report
    from rsi_workbench.discovery.roles import LLMProposer, Session
    from rsi_workbench.discovery.workflow import Harness

_EXPORTS = {
    "HypothesisVersion": "rsi_workbench.discovery.records",
    "HypothesisContent": "rsi_workbench.discovery.records",
    "DiscoveryRecords": "rsi_workbench.discovery.records",
    "load_records": "rsi_workbench.discovery.records",
    "load_typed": "rsi_workbench.discovery.records",
    "records_frame": "rsi_workbench.discovery.records",
    "hypotheses_frame": "rsi_workbench.discovery.records",
    "transcripts_frame": "rsi_workbench.discovery.records",
    "validate_hypothesis": "rsi_workbench.discovery.records",
    "InvalidHypothesis": "rsi_workbench.discovery.records",
    "EVENT_KINDS": "rsi_workbench.discovery.records",
    "Lead": "rsi_workbench.discovery.lead",
    "RuleLead": "rsi_workbench.discovery.lead",
    "LeadState": "rsi_workbench.discovery.lead",
    "LeadDecision": "rsi_workbench.discovery.lead",
    "parse_lead_decision": "rsi_workbench.discovery.lead",
    "InvalidLeadDecision": "rsi_workbench.discovery.lead",
    "Harness": "rsi_workbench.discovery.workflow",
    "ResearchGraph": "rsi_workbench.discovery.graph",
    "ResearchDomain": "rsi_workbench.discovery.episode",
    "run_episode": "rsi_workbench.discovery.episode",
    "lead_state": "rsi_workbench.discovery.episode",
    "run_campaign": "rsi_workbench.discovery.campaign",
    "campaign_report": "rsi_workbench.discovery.report",
    "assign_credit": "rsi_workbench.discovery.credit",
    "credit_records_from": "rsi_workbench.discovery.credit",
    "credit_tables": "rsi_workbench.discovery.credit",
    "Session": "rsi_workbench.discovery.roles",
    "LLMProposer": "rsi_workbench.discovery.roles",
}
__all__ = [
    "EVENT_KINDS",
    "DiscoveryRecords",
    "Harness",
    "HypothesisContent",
    "HypothesisVersion",
    "InvalidHypothesis",
    "InvalidLeadDecision",
    "LLMProposer",
    "Lead",
    "LeadDecision",
    "LeadState",
    "ResearchDomain",
    "ResearchGraph",
    "RuleLead",
    "Session",
    "assign_credit",
    "campaign_report",
    "credit_records_from",
    "credit_tables",
    "hypotheses_frame",
    "lead_state",
    "load_records",
    "load_typed",
    "parse_lead_decision",
    "records_frame",
    "run_campaign",
    "run_episode",
    "transcripts_frame",
    "validate_hypothesis",
]
__getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)
