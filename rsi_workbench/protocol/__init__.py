"""RSI-Anything's retained-pair protocol: propose → predict → select → evaluate → learn → retain.

Domain-agnostic engine (equations 1–18 of the paper; README "The code-repair experiment"):

- :mod:`~rsi_workbench.protocol.spec` — the task spec T_d (eq. 1) as small protocols
  (``Environment``, ``Policy`` θ, ``Predictor`` φ, ``Verifier``) and the records
  (``Prediction``, ``Observation``, ``PairRecord``) with evidence levels E0–E3 and versions;
- :mod:`~rsi_workbench.protocol.decisions` — every decision as a pure function of records and
  declared thresholds: ``select`` (eq. 7), ``admit_imagined`` (eq. 8), ``reliability`` (eq. 10),
  ``adaptation_trigger`` (eq. 11), ``policy_gate`` / ``predictor_gate`` (eq. 13–14), ``assemble``
  (eq. 15–16), ``pair_gate`` (eq. 17), ``retain`` (eq. 18), ``assert_disjoint``;
- :mod:`~rsi_workbench.protocol.loop` — ``Loop.open(spec, run, settings, seed=...)``,
  ``Loop.step()`` (one cycle) and ``Loop.run(n)``, every step an event, resumable from events;
- :mod:`~rsi_workbench.protocol.report` — run summaries and the clustered paired bootstrap;
- :mod:`~rsi_workbench.experiments.code_repair` — the code-repair experiment (``experiment: code_repair``).
"""
