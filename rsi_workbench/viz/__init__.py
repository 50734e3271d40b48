"""Figures and plain data of runs, for notebooks, dashboards and HTML reports.

Shaped like ``optuna.visualization``: each public ``plot_x(run_or_frame, ...)`` takes a run directory
(or a loaded run, or a frame of its events) and returns a plotly figure; it reads the run through a
private ``_get_x_info`` into a documented ``XInfo`` record, which the public ``x_info`` functions
return when a dashboard or notebook needs the data rather than a figure::

    from rsi_workbench.viz import cycle_timeline_info, plot_cycle_timeline

    plot_cycle_timeline("runs/notebooks/code_repair/runs/world_adaptive/seed0").show()
    info = cycle_timeline_info("runs/notebooks/code_repair/runs/world_adaptive/seed0")

Names are imported on first use (this package's ``__init__`` imports no plotting library).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rsi_workbench._lazy import lazy_exports

if TYPE_CHECKING:
    from rsi_workbench.viz._style import kind_colours
    from rsi_workbench.viz.calibration import (
        CalibrationInfo,
        calibration_info,
        plot_calibration_curves,
        plot_reliability_diagram,
        plot_training_losses,
        predictor_training_info,
    )
    from rsi_workbench.viz.credit import CreditInfo, credit_info, is_research_graph, plot_trueskill
    from rsi_workbench.viz.cycles import (
        CycleDetail,
        CycleTimelineInfo,
        candidate_diff,
        cycle_detail,
        cycle_timeline_info,
        diff_markdown,
        plot_cycle_timeline,
    )
    from rsi_workbench.viz.events import EventsInfo, events_info, plot_event_counts, plot_event_timeline
    from rsi_workbench.viz.fidelity import FidelityInfo, fidelity_info, plot_replay_fidelity
    from rsi_workbench.viz.gates import (
        Decision,
        GateInputs,
        GateMatrixInfo,
        Thresholds,
        gate_inputs,
        gate_matrix_info,
        plot_gate_matrix,
        recompute,
    )
    from rsi_workbench.viz.html import Section, Table, figure_with_states, html_report
    from rsi_workbench.viz.memory import (
        MemoryInfo,
        file_diff,
        handoff_rows,
        load_tree,
        memory_info,
        memory_runs,
        outcome_rows,
        plot_curve,
        plot_memory_growth,
        plot_waves,
        snapshot_labels,
        summary_text,
        tree_rows,
    )
    from rsi_workbench.viz.omega import OmegaOracleInfo, omega_oracle_info, plot_omega_oracle
    from rsi_workbench.viz.protocol import (
        ProtocolRun,
        is_protocol_run,
        load_protocol_run,
        load_protocol_runs,
        protocol_run_paths,
    )
    from rsi_workbench.viz.reactions import plot_best_yield_curves, plot_first_hits
    from rsi_workbench.viz.replay import (
        ReplayInfo,
        TreeLayout,
        plot_compute_to_quality,
        plot_replay_heatmap,
        plot_tree,
        replay_info,
        replay_rounds,
        tree_layout,
    )

_EXPORTS = {
    "ProtocolRun": "rsi_workbench.viz.protocol",
    "load_protocol_run": "rsi_workbench.viz.protocol",
    "load_protocol_runs": "rsi_workbench.viz.protocol",
    "protocol_run_paths": "rsi_workbench.viz.protocol",
    "is_protocol_run": "rsi_workbench.viz.protocol",
    "EventsInfo": "rsi_workbench.viz.events",
    "events_info": "rsi_workbench.viz.events",
    "plot_event_timeline": "rsi_workbench.viz.events",
    "plot_event_counts": "rsi_workbench.viz.events",
    "CycleTimelineInfo": "rsi_workbench.viz.cycles",
    "cycle_timeline_info": "rsi_workbench.viz.cycles",
    "plot_cycle_timeline": "rsi_workbench.viz.cycles",
    "CycleDetail": "rsi_workbench.viz.cycles",
    "cycle_detail": "rsi_workbench.viz.cycles",
    "candidate_diff": "rsi_workbench.viz.cycles",
    "diff_markdown": "rsi_workbench.viz.cycles",
    "CalibrationInfo": "rsi_workbench.viz.calibration",
    "calibration_info": "rsi_workbench.viz.calibration",
    "plot_reliability_diagram": "rsi_workbench.viz.calibration",
    "plot_calibration_curves": "rsi_workbench.viz.calibration",
    "predictor_training_info": "rsi_workbench.viz.calibration",
    "plot_training_losses": "rsi_workbench.viz.calibration",
    "Thresholds": "rsi_workbench.viz.gates",
    "Decision": "rsi_workbench.viz.gates",
    "GateInputs": "rsi_workbench.viz.gates",
    "gate_inputs": "rsi_workbench.viz.gates",
    "recompute": "rsi_workbench.viz.gates",
    "GateMatrixInfo": "rsi_workbench.viz.gates",
    "gate_matrix_info": "rsi_workbench.viz.gates",
    "plot_gate_matrix": "rsi_workbench.viz.gates",
    "CreditInfo": "rsi_workbench.viz.credit",
    "credit_info": "rsi_workbench.viz.credit",
    "plot_trueskill": "rsi_workbench.viz.credit",
    "is_research_graph": "rsi_workbench.viz.credit",
    "OmegaOracleInfo": "rsi_workbench.viz.omega",
    "omega_oracle_info": "rsi_workbench.viz.omega",
    "plot_omega_oracle": "rsi_workbench.viz.omega",
    "ReplayInfo": "rsi_workbench.viz.replay",
    "replay_info": "rsi_workbench.viz.replay",
    "replay_rounds": "rsi_workbench.viz.replay",
    "plot_replay_heatmap": "rsi_workbench.viz.replay",
    "plot_compute_to_quality": "rsi_workbench.viz.replay",
    "TreeLayout": "rsi_workbench.viz.replay",
    "tree_layout": "rsi_workbench.viz.replay",
    "plot_tree": "rsi_workbench.viz.replay",
    "FidelityInfo": "rsi_workbench.viz.fidelity",
    "fidelity_info": "rsi_workbench.viz.fidelity",
    "plot_replay_fidelity": "rsi_workbench.viz.fidelity",
    "MemoryInfo": "rsi_workbench.viz.memory",
    "memory_info": "rsi_workbench.viz.memory",
    "memory_runs": "rsi_workbench.viz.memory",
    "plot_waves": "rsi_workbench.viz.memory",
    "plot_memory_growth": "rsi_workbench.viz.memory",
    "plot_curve": "rsi_workbench.viz.memory",
    "load_tree": "rsi_workbench.viz.memory",
    "snapshot_labels": "rsi_workbench.viz.memory",
    "tree_rows": "rsi_workbench.viz.memory",
    "file_diff": "rsi_workbench.viz.memory",
    "outcome_rows": "rsi_workbench.viz.memory",
    "handoff_rows": "rsi_workbench.viz.memory",
    "summary_text": "rsi_workbench.viz.memory",
    "plot_best_yield_curves": "rsi_workbench.viz.reactions",
    "plot_first_hits": "rsi_workbench.viz.reactions",
    "Section": "rsi_workbench.viz.html",
    "Table": "rsi_workbench.viz.html",
    "html_report": "rsi_workbench.viz.html",
    "figure_with_states": "rsi_workbench.viz.html",
    "kind_colours": "rsi_workbench.viz._style",
}
__all__ = [
    "CalibrationInfo",
    "CreditInfo",
    "CycleDetail",
    "CycleTimelineInfo",
    "Decision",
    "EventsInfo",
    "FidelityInfo",
    "GateInputs",
    "GateMatrixInfo",
    "MemoryInfo",
    "OmegaOracleInfo",
    "ProtocolRun",
    "ReplayInfo",
    "Section",
    "Table",
    "Thresholds",
    "TreeLayout",
    "calibration_info",
    "candidate_diff",
    "credit_info",
    "cycle_detail",
    "cycle_timeline_info",
    "diff_markdown",
    "events_info",
    "fidelity_info",
    "figure_with_states",
    "file_diff",
    "gate_inputs",
    "gate_matrix_info",
    "handoff_rows",
    "html_report",
    "is_protocol_run",
    "is_research_graph",
    "kind_colours",
    "load_protocol_run",
    "load_protocol_runs",
    "load_tree",
    "memory_info",
    "memory_runs",
    "omega_oracle_info",
    "outcome_rows",
    "plot_best_yield_curves",
    "plot_calibration_curves",
    "plot_compute_to_quality",
    "plot_curve",
    "plot_cycle_timeline",
    "plot_event_counts",
    "plot_event_timeline",
    "plot_first_hits",
    "plot_gate_matrix",
    "plot_memory_growth",
    "plot_omega_oracle",
    "plot_reliability_diagram",
    "plot_replay_fidelity",
    "plot_replay_heatmap",
    "plot_training_losses",
    "plot_tree",
    "plot_trueskill",
    "plot_waves",
    "predictor_training_info",
    "protocol_run_paths",
    "recompute",
    "replay_info",
    "replay_rounds",
    "snapshot_labels",
    "summary_text",
    "tree_layout",
    "tree_rows",
]
__getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)
