"""The Optuna shape of ``rsi_workbench.viz``: ``plot_x`` takes the run (a directory, a loaded run, a
frame) and draws the same figure as from its public ``x_info`` data."""

from __future__ import annotations

from pathlib import Path

import pytest

from rsi_workbench import viz


def same(a, b) -> bool:
    return a.to_json() == b.to_json()


def test_event_figures_from_a_directory(smoke_run: Path) -> None:
    info = viz.events_info(smoke_run)
    assert same(viz.plot_event_timeline(smoke_run), viz.plot_event_timeline(info))
    assert same(viz.plot_event_counts(str(smoke_run)), viz.plot_event_counts(info))


@pytest.mark.slow
def test_protocol_figures_from_a_directory(code_repair_run: Path) -> None:
    runs = viz.load_protocol_runs(code_repair_run)
    one = runs[-1]
    assert same(viz.plot_cycle_timeline(one.path), viz.plot_cycle_timeline(viz.cycle_timeline_info(one)))
    assert viz.cycle_detail(one.path, one.cycles[-1]).cycle == one.cycles[-1]
    cal = viz.calibration_info(runs)
    assert same(viz.plot_calibration_curves(code_repair_run), viz.plot_calibration_curves(cal))
    assert same(viz.plot_reliability_diagram(runs), viz.plot_reliability_diagram(cal))
    decisions = [d for r in runs for gi in [viz.gate_inputs(r)] for d in viz.recompute(gi, gi.declared)]
    by_decisions = viz.plot_gate_matrix(decisions)
    assert same(viz.plot_gate_matrix(code_repair_run), by_decisions)
    assert same(viz.plot_gate_matrix(viz.gate_matrix_info(decisions)), by_decisions)
    training = viz.predictor_training_info(code_repair_run)
    assert same(viz.plot_training_losses(code_repair_run), viz.plot_training_losses(training))


@pytest.mark.slow
def test_replay_and_tree_figures_from_a_directory(dreaming_run: Path) -> None:
    from rsi_workbench.experiments.dreaming.experiment import load_frames

    scores, deployed = (
        load_frames(dreaming_run, "replay_tree_scored"),
        load_frames(dreaming_run, "policy_deployed"),
    )
    arm, seed, rnd = viz.replay_rounds(scores)[-1]
    b1, b2 = float(deployed["beta1"].iloc[0]), float(deployed["beta2"].iloc[0])
    info = viz.replay_info(scores, arm, seed, rnd, b1, b2, deployed)
    assert same(viz.plot_replay_heatmap(dreaming_run), viz.plot_replay_heatmap(info))
    other = viz.replay_info(scores, arm, seed, rnd, b1 + 0.5, b2, deployed)
    assert same(viz.plot_replay_heatmap(dreaming_run, beta1=b1 + 0.5), viz.plot_replay_heatmap(other))
    with pytest.raises(ValueError, match="no replay scores for arm=nope"):
        viz.plot_replay_heatmap(dreaming_run, arm="nope")
    nodes = load_frames(dreaming_run, "tree_node")
    assert same(viz.plot_compute_to_quality(dreaming_run), viz.plot_compute_to_quality(nodes))


def test_tree_figure_from_nodes() -> None:
    nodes = [{"id": "a", "parent": None, "score": 1.0}, {"id": "b", "parent": "a", "score": 2.0}]
    layout = viz.tree_layout(nodes)
    assert layout.y == [0.0, 1.0]
    assert same(viz.plot_tree(nodes, title="t"), viz.plot_tree(layout, title="t"))


@pytest.mark.slow
def test_credit_figure_from_a_directory(discovery_run: Path) -> None:
    info = viz.credit_info(discovery_run)
    assert same(viz.plot_trueskill(discovery_run, kappa=1.0), viz.plot_trueskill(info, kappa=1.0))
