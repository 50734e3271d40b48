"""Views that tell the truth: float noise drawn flat, integer ticks on counts, readable colourbars,
exported figures opening at the state their sliders show, experiment directories listing their runs,
and candidate diffs in the cycle stepper. Real runs come from tests/ui/workbench_runs.py (cached)."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
from report_html import initial_and_active_frame, report_figures

from rsi_workbench.viz.scales import (
    NOISE_TOL,
    below_noise,
    colorbar,
    int_axis,
    noise_note,
    value_decimals,
    value_tickformat,
)

# -- scales: pure functions --------------------------------------------------------------------------


def test_noise_below_tolerance_is_flat_and_said_so() -> None:
    noisy = [[2.6143947489907076, 2.614394748990973], [None, float("nan")]]  # recorded: 2.7e-13 apart
    assert below_noise(noisy)
    assert noise_note(noisy) == f"no difference (spread 2.7e-13 < tol {NOISE_TOL:g} × 2.61)"
    assert not below_noise([2.6143, 2.6144])  # a real difference (4e-5 relative)
    assert not below_noise([1.0])  # one value is not a comparison
    assert not below_noise([None, float("nan")])
    assert below_noise([0.0, 0.0])  # all zero: no difference at all
    assert below_noise([1e6, 1e6 + 1e-4])  # tolerance is relative to the scale
    assert not below_noise([1e-6, 2e-6])  # small values that differ by half are not noise


def test_colourbar_ticks_have_about_three_significant_digits() -> None:
    assert value_tickformat([0.0, 1.0]) == ".2~f"  # 0, 0.25, 0.5 ...
    assert value_tickformat([0.0, 500.0]) == ".0~f"
    assert value_tickformat([2.61, 2.63]) == ".4~f"  # three digits of the 0.02 that varies
    assert value_tickformat([2.6143947489907076, 2.614394748990973]) == ".2~f"  # noise: digits of 2.61
    assert value_decimals([2.6143947489907076, 2.614394748990973], sig=4) == 3
    assert value_decimals([]) == 0 and value_decimals([0.0, 0.0]) == 0
    assert colorbar("V", [0.0, 1.0]) == {"title": "V", "tickformat": ".2~f"}


def test_integer_axes_get_whole_number_ticks() -> None:
    for values, step in (([1, 3], 1), ([0, 1], 1), ([], 1), (range(57), 10), ([0, 20], 2), ([0, 1000], 100)):
        ax = int_axis(values)
        assert ax["tickmode"] == "linear" and ax["tickformat"] == "d" and ax["tick0"] == 0
        assert ax["dtick"] == step and isinstance(ax["dtick"], int)
    assert int_axis([1, 2], title="cycle")["title"] == "cycle"


def test_figure_with_states_opens_at_its_active_state() -> None:
    import plotly.graph_objects as go

    from rsi_workbench.viz.html import figure_with_states

    states = []
    for v in (1, 2, 3):
        f = go.Figure(go.Bar(y=[v]), layout={"title": f"state {v}"})
        if v == 2:
            f.add_vrect(x0=0, x1=1)
        states.append(f)
    fig = figure_with_states(states, ["a", "b", "c"], active=1)
    assert fig.layout.sliders[0].active == 1
    assert list(fig.data[0].y) == [2] and fig.layout.title.text == "state 2" and len(fig.layout.shapes) == 1
    # plotly.js merges frames item by item: a state without the shape hides it with a padded item
    assert [s.visible for s in fig.frames[0].layout.shapes] == [False]
    assert [s.visible for s in fig.frames[1].layout.shapes] == [True]
    assert figure_with_states(states, ["a", "b", "c"]).layout.sliders[0].active == 2  # default: the last
    with pytest.raises(ValueError, match="active state 3"):
        figure_with_states(states, ["a", "b", "c"], active=3)


# -- real runs --------------------------------------------------------------------------------------


def _export(run: Path, out: Path) -> str:
    from rsi_workbench.widgets.commands import cmd_export

    assert cmd_export(argparse.Namespace(run=str(run), html=str(out))) == 0
    return out.read_text(encoding="utf-8")


def _assert_sliders_agree(text: str) -> dict[str, str]:
    """Every slider's initial step names the frame the figure is first drawn as; returns prefix -> label."""
    figs = [f for f in report_figures(text).values() if f.layout.get("sliders")]
    assert figs, "no figure with a slider in the report"
    labels = {}
    for f in figs:
        shown, frame, label = initial_and_active_frame(f)
        assert shown["data"] == frame["data"], f"{f.div_id}: drawn data is not slider state {label!r}"
        assert shown["title"] == frame["layout"]["title"], f"{f.div_id}: title of another state"
        for k in ("shapes", "annotations"):  # padded to one length: hidden items clear a previous state's
            assert (shown[k] or []) == frame["layout"].get(k, []), f"{f.div_id}: {k} of another state"
        labels[f.layout["sliders"][0]["currentvalue"]["prefix"]] = label
    return labels


@pytest.mark.slow
def test_code_repair_export_opens_at_the_slider_states(code_repair_run: Path, tmp_path: Path) -> None:
    from rsi_workbench.viz.gates import Thresholds
    from rsi_workbench.viz.protocol import load_protocol_runs

    declared = Thresholds.from_settings(load_protocol_runs(code_repair_run)[0].settings)
    text = _export(code_repair_run, tmp_path / "cr.html")
    labels = _assert_sliders_agree(text)
    assert labels["reliability max_brier = "] == f"{declared.max_brier:g}"  # 0.25, not 1.5
    gate = next(f for f in report_figures(text).values() if "max_brier" in str(f.layout.get("title")))
    assert gate.layout["title"]["text"].startswith(f"max_brier = {declared.max_brier:g}:")
    # the experiment's runs are listed and each has its own events section
    assert (
        'href="#events-runs-world-adaptive-seed0"' in text and 'id="events-runs-world-adaptive-seed0"' in text
    )
    assert "Candidate diffs · world_adaptive-seed0" in text and "--- kept program (cycle 1)" in text
    assert "· selected · observed " in text and "observed nan" not in text  # unexecuted ones say nothing


@pytest.mark.slow
def test_dreaming_export_opens_at_the_declared_beta(dreaming_run: Path, tmp_path: Path) -> None:
    from rsi_workbench.experiments.dreaming.experiment import load_frames

    beta1 = float(load_frames(dreaming_run, "policy_deployed")["beta1"].iloc[0])
    text = _export(dreaming_run, tmp_path / "dream.html")
    labels = _assert_sliders_agree(text)
    assert labels["β1 = "] == f"{beta1:g}"  # 0.0002, not 0.02
    heat = next(
        f for f in report_figures(text).values() if f.layout.get("sliders") and "β1=" in str(f.layout)
    )
    assert f"β1={beta1:g}," in heat.layout["title"]["text"]


@pytest.mark.slow
def test_replay_views_draw_float_noise_flat(dreaming_run: Path) -> None:
    from rsi_workbench.viz.replay import plot_compute_to_quality, plot_replay_heatmap, plot_tree
    from rsi_workbench.widgets.replay_explorer import ReplayExplorer

    ex = ReplayExplorer(run=str(dreaming_run))
    for key in ex._keys:
        ex.round_key = key
        info = ex.info()
        fig = plot_replay_heatmap(info)
        notes = [a.text for a in fig.layout.annotations]
        if below_noise(info.V):  # the smoke's replays differ by ~1e-13: one colour, a note, no colourbar
            assert fig.data[0].showscale is False and notes == [noise_note(info.V)]
            assert len({c for row in fig.data[0].text for c in row}) == 1  # cells show the same number
        else:
            assert fig.data[0].colorbar.tickformat == value_tickformat(info.V) and not notes
    curve = plot_compute_to_quality(ex._nodes)
    assert curve.layout.xaxis.tickformat == "d" and curve.layout.xaxis.dtick >= 1
    ys = [list(t.y) for t in curve.data]
    if below_noise(ys):
        lo, hi = curve.layout.yaxis.range
        assert hi - lo > 1e-3  # a flat line in a sensible window, not 1e-13 magnified
    nodes = [
        {"id": "a", "parent": None, "score": 2.6143947489907076},
        {"id": "b", "parent": "a", "score": 2.614394748990973},
    ]
    from rsi_workbench.viz.replay import tree_layout

    tree = plot_tree(tree_layout(nodes), title="t")
    assert tree.layout.yaxis.dtick == 1 and tree.layout.yaxis.tickformat == "d"
    assert tree.data[1].marker.showscale is False and "no difference" in tree.layout.annotations[0].text


@pytest.mark.slow
def test_events_view_of_an_experiment_lists_and_opens_its_runs(code_repair_run: Path) -> None:
    from rsi_workbench.viz.events import THIS_DIRECTORY
    from rsi_workbench.widgets.run_events import RunEventsExplorer, export_sections

    v = RunEventsExplorer(run=str(code_repair_run), poll_ms=0)
    table = v._runs_table.value
    assert v._runs_table.visible and list(table["run"])[0] == THIS_DIRECTORY
    assert {"runs/random_k-seed0", "runs/world_adaptive-seed0"} <= set(table["run"])
    assert "runs in this directory" in v._summary.object
    # it opens on the experiment's own log (no cycles): its table lists every event, not none
    own = int(table["events"].iloc[0])
    assert v.run_name == THIS_DIRECTORY and own > 0 and len(v._table.value) == own
    assert "no cycles here" in v._status.object and "pick a run in the table above" in v._status.object
    i = list(table["run"]).index("runs/world_adaptive-seed0")
    v._runs_table.selection = [i]  # a click on the row opens the run
    assert v.run_name == "runs/world_adaptive-seed0"
    n = int(table["events"].iloc[i])
    assert f"{n} events" in v._summary.object and v._max_cycle == 3 and "cycle 3 of 3" in v._status.object
    seq0 = v.record(0)
    assert seq0["kind"] == "loop_opened"  # the run's own log, not the experiment's

    sections = export_sections(code_repair_run)
    runs = next(s for s in sections if s.title == "Runs in this directory")
    assert runs.table is not None and len(runs.table.rows) == len(table) - 1
    linked = {s.anchor for s in sections if s.anchor}
    assert all(a in linked for a in runs.table.links if a)


@pytest.mark.slow
def test_cycle_stepper_shows_the_candidate_diff(code_repair_run: Path) -> None:
    from rsi_workbench.viz.cycles import candidate_diff
    from rsi_workbench.widgets.cycle_stepper import NO_DIFF_SELECTED, CycleStepper

    st = CycleStepper(run=str(code_repair_run), run_name="world_adaptive-seed0", poll_ms=0)
    assert st._diff.object == NO_DIFF_SELECTED and st._diff.visible  # programs: the hint is shown
    c = st._cands.value
    row = c.iloc[0]
    st._cands.selection = [0]
    d = candidate_diff(st._pr, str(row["task"]), st.cycle, int(row["candidate"]))
    assert d is not None and d.diff.startswith(f"--- kept program (cycle {st.cycle})\n+++ candidate")
    # the diff applies to the recorded kept program and gives the recorded candidate program
    prop = next(p for p in st._pr.of("proposal", st.cycle) if p.payload["task_id"] == row["task"])
    cand = next(x for x in prop.payload["candidates"] if int(x["index"]) == int(row["candidate"]))
    kept, new = prop.payload["state"]["program"], prop.payload["actions"][cand["slot"]]["program"]
    assert _patched(kept, d.diff) == new
    assert "```diff" in st._diff.object and d.diff.rstrip() in st._diff.object
    st.cycle = 1  # another cycle: the old row's diff is not shown for it
    assert st._diff.object == NO_DIFF_SELECTED


def _patched(text: str, diff: str) -> str:
    """Apply a one-file unified diff (as difflib writes it) to ``text``."""
    import re

    src, out, i = text.splitlines(keepends=True), [], 0
    lines = diff.splitlines(keepends=True)[2:]
    for ln in lines:
        m = re.match(r"@@ -(\d+)(?:,(\d+))? \+\d+(?:,\d+)? @@", ln)
        if m:
            start = int(m.group(1)) - (0 if m.group(2) == "0" else 1)
            out += src[i:start]
            i = start
        elif ln.startswith("-"):
            i += 1
        elif ln.startswith("+"):
            out.append(ln[1:])
        elif ln.startswith(" "):
            out.append(src[i])
            i += 1
    return "".join(out + src[i:])


def test_cycle_stepper_offers_no_diff_where_actions_are_not_programs(tmp_path: Path) -> None:
    """A domain whose actions are not programs (numbers here; reactions, GUI steps) gets no
    "click to see the diff" hint and no diff pane."""
    from rsi_workbench.protocol import (
        BaseEnvironment,
        BasePolicy,
        BasePredictor,
        Observation,
        Prediction,
        run_protocol,
    )
    from rsi_workbench.viz.cycles import actions_are_programs
    from rsi_workbench.viz.protocol import load_protocol_run
    from rsi_workbench.widgets.cycle_stepper import CycleStepper

    class Guess(BaseEnvironment):
        def initial(self, task_id):  # type: ignore[no-untyped-def]
            return 0, self.evaluate(task_id, 0, 0)

        def evaluate(self, task_id, state, action):  # type: ignore[no-untyped-def]
            hit = abs(action - int(task_id)) <= 1
            return Observation({"score": float(hit)}, [int(not hit)], solved=hit)

        def advance(self, task_id, state, action, observation):  # type: ignore[no-untyped-def]
            return action

    class Around(BasePolicy):
        def propose(self, task_id, state, k, rng):  # type: ignore[no-untyped-def]
            return [rng.randint(0, 9) for _ in range(k)]

    class Rough(BasePredictor):
        def predict(self, task_id, state, actions):  # type: ignore[no-untyped-def]
            near = [abs(a - int(task_id)) <= 2 for a in actions]
            return [
                Prediction({"score": float(n)}, self.version, [[0.7, 0.3] if n else [0.2, 0.8]]) for n in near
            ]

    out = tmp_path / "guess"
    settings = {"k": 3, "max_rounds": 2, "utility": {"weights": {"score": 1.0}}, "audit": False}
    run_protocol(Guess(), Around(), Rough(), tasks=[3, 5, 7], out=out, settings=settings)
    assert not actions_are_programs(load_protocol_run(out))
    st = CycleStepper(run=str(out), poll_ms=0)
    assert len(st._cands.value) and not st._diff.visible
    st._cands.selection = [0]
    assert "Click a candidate row" not in st._diff.object and "unified diff" not in st._diff.object
