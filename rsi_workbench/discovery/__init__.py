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
"""
