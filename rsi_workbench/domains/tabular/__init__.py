"""Built-in research domain on scikit-learn's bundled datasets (clinical cohorts, wine, iris, digits,
linnerud; runs offline, really executes).

Hypotheses of the form "feature group X adds information about outcome Y beyond baseline B" are
compiled (:func:`compile_task`) into nested model comparisons on fixed patient-level splits with a
held-out metric and a paired bootstrap interval, and run for real (:func:`run_task`).
"""

from __future__ import annotations

from rsi_workbench.domains.tabular.analysis import CONTROLS, AnalysisSpec, fixed_splits, run_analysis, verdict
from rsi_workbench.domains.tabular.catalog import (
    DIRECTIONS,
    NOISE_GROUP,
    Direction,
    direction,
    load_direction,
)
from rsi_workbench.domains.tabular.hypotheses import (
    control_spec,
    crossover_spec,
    data_summary,
    evolve_spec,
    hypothesis_content,
    repair_spec,
    restart_spec,
    spec_defects,
    spec_key,
    validate_spec,
)
from rsi_workbench.domains.tabular.synthetic import STATEFUL_DIRECTIONS, SYNTHETIC_DIRECTIONS, planted_truth
from rsi_workbench.domains.tabular.tasks import CHECKS, REQUIRED_OUTPUTS, compile_task, run_task

__all__ = [
    "CHECKS",
    "CONTROLS",
    "DIRECTIONS",
    "NOISE_GROUP",
    "REQUIRED_OUTPUTS",
    "STATEFUL_DIRECTIONS",
    "SYNTHETIC_DIRECTIONS",
    "AnalysisSpec",
    "Direction",
    "compile_task",
    "control_spec",
    "crossover_spec",
    "data_summary",
    "direction",
    "evolve_spec",
    "fixed_splits",
    "hypothesis_content",
    "planted_truth",
    "load_direction",
    "repair_spec",
    "restart_spec",
    "run_analysis",
    "run_task",
    "spec_defects",
    "spec_key",
    "validate_spec",
    "verdict",
]
