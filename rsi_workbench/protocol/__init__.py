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
  loop holds one state object, :class:`~rsi_workbench.protocol.state.LoopState` (records H_k, the
  current pair, the ledger), and composes collaborators over it (:func:`~rsi_workbench.protocol.loop.compose`),
  each handed the fields of :mod:`~rsi_workbench.protocol.settings` its decisions read:
  ``Selection`` (:mod:`~rsi_workbench.protocol.selection`), the feedback rounds
  (:mod:`~rsi_workbench.protocol.feedback`, :mod:`~rsi_workbench.protocol.concurrent`),
  ``Learning`` (:mod:`~rsi_workbench.protocol.learning`: policy update and predictor adaptation) and
  ``Retention`` (:mod:`~rsi_workbench.protocol.retention`: gates, assembly, retention, measuring with
  :mod:`~rsi_workbench.protocol.gate_data`);
- :mod:`~rsi_workbench.protocol.run` — ``run_protocol(environment, policy, predictor, ...)``, a
  protocol run in one call;
- :mod:`~rsi_workbench.protocol.conformance` — ``check_components(...)`` (also
  ``check_protocol_components``), the engine's contract checks on a plug-in author's components;
- :mod:`~rsi_workbench.protocol.report` — run summaries and the clustered paired bootstrap;
- :mod:`~rsi_workbench.experiments.code_repair` — the code-repair experiment (``experiment: code_repair``).

The names below are imported on first use (``import rsi_workbench.protocol`` stays cheap)::

    from rsi_workbench.protocol import BaseEnvironment, Loop, ProtocolSettings, TaskSpec
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rsi_workbench._lazy import lazy_exports

if TYPE_CHECKING:
    from rsi_workbench.protocol.conformance import (
        ConformanceError,
        ConformanceReport,
        check_components,
        check_protocol_components,
    )
    from rsi_workbench.protocol.loop import Collaborators, CycleReport, Loop, compose, effective_events
    from rsi_workbench.protocol.report import RunSummary, paired_bootstrap, run_report, summarize_run
    from rsi_workbench.protocol.run import ProtocolResult, run_protocol
    from rsi_workbench.protocol.selection import (
        InformationGain,
        RandomK,
        SelectionRule,
        UtilityArgmax,
        UtilitySpec,
        resolve_rule,
        select,
        utility,
    )
    from rsi_workbench.protocol.settings import GateSettings, ProtocolSettings
    from rsi_workbench.protocol.spec import (
        AlwaysValid,
        BaseEnvironment,
        BasePolicy,
        BasePredictor,
        Environment,
        ImaginedRecord,
        Observation,
        PairRecord,
        Policy,
        Prediction,
        Predictor,
        TaskSpec,
        Verifier,
    )

_EXPORTS = {
    "TaskSpec": "rsi_workbench.protocol.spec",
    "Environment": "rsi_workbench.protocol.spec",
    "BaseEnvironment": "rsi_workbench.protocol.spec",
    "BasePolicy": "rsi_workbench.protocol.spec",
    "BasePredictor": "rsi_workbench.protocol.spec",
    "Policy": "rsi_workbench.protocol.spec",
    "Predictor": "rsi_workbench.protocol.spec",
    "Verifier": "rsi_workbench.protocol.spec",
    "AlwaysValid": "rsi_workbench.protocol.spec",
    "Prediction": "rsi_workbench.protocol.spec",
    "Observation": "rsi_workbench.protocol.spec",
    "PairRecord": "rsi_workbench.protocol.spec",
    "ImaginedRecord": "rsi_workbench.protocol.spec",
    "Loop": "rsi_workbench.protocol.loop",
    "CycleReport": "rsi_workbench.protocol.loop",
    "effective_events": "rsi_workbench.protocol.loop",
    "Collaborators": "rsi_workbench.protocol.loop",
    "compose": "rsi_workbench.protocol.loop",
    "run_protocol": "rsi_workbench.protocol.run",
    "ProtocolResult": "rsi_workbench.protocol.run",
    "check_components": "rsi_workbench.protocol.conformance",
    "check_protocol_components": "rsi_workbench.protocol.conformance",
    "ConformanceError": "rsi_workbench.protocol.conformance",
    "ConformanceReport": "rsi_workbench.protocol.conformance",
    "ProtocolSettings": "rsi_workbench.protocol.settings",
    "GateSettings": "rsi_workbench.protocol.settings",
    "SelectionRule": "rsi_workbench.protocol.selection",
    "UtilityArgmax": "rsi_workbench.protocol.selection",
    "RandomK": "rsi_workbench.protocol.selection",
    "InformationGain": "rsi_workbench.protocol.selection",
    "UtilitySpec": "rsi_workbench.protocol.selection",
    "utility": "rsi_workbench.protocol.selection",
    "select": "rsi_workbench.protocol.selection",
    "resolve_rule": "rsi_workbench.protocol.selection",
    "RunSummary": "rsi_workbench.protocol.report",
    "summarize_run": "rsi_workbench.protocol.report",
    "run_report": "rsi_workbench.protocol.report",
    "paired_bootstrap": "rsi_workbench.protocol.report",
}
__all__ = [
    "AlwaysValid",
    "BaseEnvironment",
    "BasePolicy",
    "BasePredictor",
    "Collaborators",
    "ConformanceError",
    "ConformanceReport",
    "CycleReport",
    "Environment",
    "GateSettings",
    "ImaginedRecord",
    "InformationGain",
    "Loop",
    "Observation",
    "PairRecord",
    "Policy",
    "Prediction",
    "Predictor",
    "ProtocolResult",
    "ProtocolSettings",
    "RandomK",
    "RunSummary",
    "SelectionRule",
    "TaskSpec",
    "UtilityArgmax",
    "UtilitySpec",
    "Verifier",
    "check_components",
    "check_protocol_components",
    "compose",
    "effective_events",
    "paired_bootstrap",
    "resolve_rule",
    "run_protocol",
    "run_report",
    "select",
    "summarize_run",
    "utility",
]
__getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)
