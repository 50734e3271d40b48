"""DiscoveryRSI (paper: ``papers/discoveryrsi.md``): hypotheses, research graph, roles, campaigns.

API note (stable; the credit side — ``credit.py``, ``sft.py``, ``harness.py``, ``model_lead.py`` —
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
- ``discovery.workflow``: ``Harness`` (ψ: version, role params, critique schedule, operation budget).
- ``discovery.graph``: ``ResearchGraph.from_records(recs)`` — lineage DAG, depth, ancestors.
- ``discovery.assess``: DFM-Bench levels — ``AXIS_WEIGHTS``, ``PATH_WEIGHTS``, ``profile_table``,
  ``path_scores``, ``campaign_allocation``, ``operation_shares``.
- ``discovery.campaign``: ``Config``, ``run_campaign(config, out, *, resume, lead=None,
  harness=None) -> Path`` (``rsi-workbench run configs/discovery/<name>.yaml``), ``report(path)``.
"""
