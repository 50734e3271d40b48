"""Data functions of the figures, on real runs: the records smoke and a real code-repair experiment."""

from __future__ import annotations

from pathlib import Path

import pytest

from rsi_workbench.records import load_events
from rsi_workbench.viz.events import events_info, plot_event_counts, plot_event_timeline
from rsi_workbench.viz.html import Section, figure_with_states, html_report


def test_events_info_counts_and_cycle_filter(smoke_run: Path) -> None:
    df = load_events(smoke_run, flatten=False)
    info = events_info(df)
    assert info.kinds == ["dataset_checked", "smoke_finished"]
    assert sum(sum(c.values()) for c in info.counts.values()) == len(df)
    assert info.counts["smoke_finished"] == {-1: 1}  # no cycle
    early = events_info(df, upto_cycle=2)
    assert early.kinds == info.kinds  # every kind kept so figure traces stay aligned
    assert sorted(early.counts["dataset_checked"]) == [0, 1, 2]
    assert len(plot_event_timeline(early).data) == len(info.kinds)
    assert [t.name for t in plot_event_counts(info).data] == info.kinds


def test_static_report_is_self_contained(smoke_run: Path) -> None:
    df = load_events(smoke_run, flatten=False)
    states = [plot_event_timeline(events_info(df, upto_cycle=c)) for c in (0, 3, 7)]
    fig = figure_with_states(states, ["0", "3", "7"], prefix="cycle ")
    assert [f.name for f in fig.frames] == ["0", "3", "7"]
    assert len(fig.layout.sliders[0].steps) == 3
    with pytest.raises(ValueError, match="traces"):
        figure_with_states([states[0], plot_event_counts(events_info(df)).add_bar(y=[1])], ["a", "b"])
    text = html_report("t", [Section("Events", "x < y", [fig])])
    assert text.count("<script") >= 2 and "cdn.plot.ly" not in text.split("</head>")[1]
    assert "x &lt; y" in text and 'id="fig-0-0"' in text


# -- protocol runs (a real code-repair experiment) ------------------------------------------------
@pytest.fixture(scope="module")
def protocol_runs(code_repair_run: Path):
    from rsi_workbench.viz.protocol import load_protocol_runs

    return load_protocol_runs(code_repair_run)


@pytest.mark.slow
def test_cycle_timeline_and_detail_match_events(protocol_runs) -> None:
    from rsi_workbench.viz.cycles import cycle_detail, cycle_timeline_info, plot_cycle_timeline

    assert {r.name for r in protocol_runs} == {"random_k-seed0", "world_adaptive-seed0"}
    for run in protocol_runs:
        info = cycle_timeline_info(run)
        assert info.cycles == run.cycles and info.cycles
        for j, k in enumerate(info.cycles):
            assert info.counts["feedback"][j] == len(run.of("observation", k))
            assert info.counts["gates"][j] == len(run.of("gate", k))
            d = cycle_detail(run, k)
            assert int(d.candidates["selected"].sum()) == sum(
                len(e.payload["selected"]) for e in run.of("selection", k)
            )
            assert len(d.candidates) == sum(len(e.payload["candidates"]) for e in run.of("proposal", k))
            assert any(r["decision"] == "pair gate" for r in d.decisions)
        assert len(plot_cycle_timeline(info).data) == 5


@pytest.mark.slow
def test_gate_recompute_reproduces_records_and_flips(protocol_runs) -> None:
    from rsi_workbench.viz.gates import NOT_ATTEMPTED, Thresholds, gate_inputs, gate_matrix_info, recompute

    adaptive = next(r for r in protocol_runs if r.name.startswith("world_adaptive"))
    gi = gate_inputs(adaptive)
    assert gi.declared == Thresholds.from_settings(adaptive.settings)
    same = recompute(gi, gi.declared)
    assert same and not [d for d in same if d.flipped]  # declared thresholds: every recorded decision
    kinds = {d.decision for d in same}
    assert {"reliability", "adaptation", "predictor_gate", "pair_gate"} <= kinds
    # every unit counts as reliable-enough coverage and any Brier/ECE passes -> no adaptation attempt
    lax = recompute(gi, gi.declared.with_(max_brier=10.0, max_ece=1.0, min_predictions=1, min_groups=1))
    rel = [d for d in lax if d.decision == "reliability"]
    assert all(d.recomputed == "reliable" for d in rel)
    assert all(d.recomputed == "off" for d in lax if d.decision == "adaptation")
    assert all(d.recomputed == NOT_ATTEMPTED for d in lax if d.decision == "predictor_gate")
    # impossible coverage -> insufficient, which never triggers adaptation (eq. 11)
    strict = recompute(gi, gi.declared.with_(min_predictions=10**6))
    assert {d.recomputed for d in strict if d.decision == "reliability"} == {"insufficient"}
    info = gate_matrix_info(lax)
    assert info.n_decisions == len(lax) and info.n_flipped == sum(d.flipped for d in lax)


@pytest.mark.slow
def test_calibration_matches_protocol_metrics(protocol_runs) -> None:
    import numpy as np

    from rsi_workbench.protocol.metrics import brier
    from rsi_workbench.viz.calibration import _run_units, calibration_info, plot_reliability_diagram

    info = calibration_info(protocol_runs)
    assert set(info.per_cycle["run"]) == {"world_adaptive-seed0"}  # Random-K makes no predictions
    adaptive = next(r for r in protocol_runs if r.name.startswith("world_adaptive"))
    units, _, source = _run_units(adaptive)
    assert source.startswith("audit")
    row = info.per_cycle.iloc[0]
    probs, labels = units[int(row["cycle"])]
    assert row["brier"] == pytest.approx(brier(probs, labels))
    assert sum(b.n for b in info.bins["world_adaptive-seed0"]) == sum(len(u[1]) for u in units.values())
    assert np.isfinite(info.per_cycle["ece"]).all()
    assert len(plot_reliability_diagram(info).data) == 2


@pytest.mark.slow
def test_research_graph_nodes_and_credit(discovery_run: Path) -> None:
    from rsi_workbench.discovery.records import load_records
    from rsi_workbench.viz.credit import credit_info, plot_trueskill
    from rsi_workbench.viz.replay import tree_layout

    info = credit_info(discovery_run)
    recs = load_records(discovery_run)
    assert [n["id"] for n in info.nodes] == [h.hypothesis_id for h in recs.hypotheses]
    assert set(info.hypotheses["hypothesis"]) <= {n["id"] for n in info.nodes}
    scored = info.hypotheses.dropna(subset=["mu"])
    assert ((scored["s"] - (scored["mu"] - 2.0 * scored["sigma"])).abs() < 1e-9).all()  # s = μ − κσ, κ = 2
    lay = tree_layout(info.nodes, colour_by="credit_q")
    for a, b in lay.edges:  # children sit below their parents
        assert lay.y[lay.ids.index(b)] > lay.y[lay.ids.index(a)]
    assert len(plot_trueskill(info).data) == 2


@pytest.mark.slow
def test_replay_rescore_reproduces_recorded_choice(dreaming_run: Path) -> None:
    from rsi_workbench.experiments.dreaming.experiment import load_frames
    from rsi_workbench.viz.replay import choose_policy, replay_info, replay_rounds

    scores, deployed = (
        load_frames(dreaming_run, "replay_tree_scored"),
        load_frames(dreaming_run, "policy_deployed"),
    )
    b1, b2 = float(deployed["beta1"].iloc[0]), float(deployed["beta2"].iloc[0])
    for arm, seed, rnd in replay_rounds(scores):
        info = replay_info(scores, arm, seed, rnd, b1, b2, deployed)
        assert info.chosen == info.recorded_chosen
        recorded = scores[(scores["arm"] == arm) & (scores["seed"] == seed) & (scores["cycle"] == rnd)]
        assert max(v for row in info.V for v in row if v is not None) == pytest.approx(recorded["V"].max())
    assert choose_policy([1.0, 1.0, 0.5]) == 0 and choose_policy([1.0, 1.5, 1.5]) == 1  # ties never displace
