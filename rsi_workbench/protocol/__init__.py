"""RSI-Anything's retained-pair protocol: propose → predict → select → evaluate → learn → retain.

Domain-agnostic engine (equations 1–18 of the paper; README "The code-repair experiment"):

- :mod:`~rsi_workbench.protocol.spec` — the task spec T_d (eq. 1) as small protocols
  (``Environment``, ``Policy`` θ, ``Predictor`` φ, ``Verifier``) and the records
  (``Prediction``, ``Observation``, ``PairRecord``) with evidence levels E0–E3 and versions;
- :mod:`~rsi_workbench.protocol.decisions` — every decision as a pure function of records and
  declared thresholds, gathered from one module per concept: :mod:`~rsi_workbench.protocol.selection`
  (``select``, eq. 7; ``admit_imagined``, eq. 8), :mod:`~rsi_workbench.protocol.reliability`
  (``reliability``, eq. 10), :mod:`~rsi_workbench.protocol.triggers` (``policy_trigger``, eq. 9;
  ``adaptation_trigger``, eq. 11), :mod:`~rsi_workbench.protocol.gates` (``policy_gate`` /
  ``predictor_gate``, eq. 13–14; ``assemble``, eq. 15–16; ``pair_gate``, eq. 17; ``retain``, eq. 18),
  :mod:`~rsi_workbench.protocol.splits` (``assert_disjoint``) and :mod:`~rsi_workbench.protocol.seeds`;
- :mod:`~rsi_workbench.protocol.loop` — ``Loop.open(spec, run, settings, seed=...)``,
  ``Loop.step()`` (one cycle) and ``Loop.run(n)``, every step an event, resumable from events. The
  loop is composed of its parts: :mod:`~rsi_workbench.protocol.settings` (the declared protocol),
  :mod:`~rsi_workbench.protocol.state` (records H_k and the current pair),
  :mod:`~rsi_workbench.protocol.feedback` (the feedback round), :mod:`~rsi_workbench.protocol.learning`
  (policy update and predictor adaptation), :mod:`~rsi_workbench.protocol.gate_data` (what the gates
  measure) and :mod:`~rsi_workbench.protocol.retention` (gates, assembly, retention);
- :mod:`~rsi_workbench.protocol.report` — run summaries and the clustered paired bootstrap;
- :mod:`~rsi_workbench.experiments.code_repair` — the code-repair experiment (``experiment: code_repair``).
"""
