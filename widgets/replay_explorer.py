"""Replay explorer (Dream-RSI): β1/β2 sliders recompute every recorded candidate policy's replay score
on every recorded tree, and show which policy the deployment rule would have chosen.

    panel serve widgets/replay_explorer.py --args --run runs/<dreaming experiment>
    rsi-workbench serve TREE.json    # a standalone tree file, replayed under the built-in policies
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import panel as pn
import param

from rsi_workbench.viz.html import Section, figure_with_states
from rsi_workbench.viz.replay import (
    fmt_v,
    plot_compute_to_quality,
    plot_replay_heatmap,
    replay_info,
    replay_rounds,
)
from rsi_workbench.widgets._app import served_app
from rsi_workbench.widgets.tree_file import policy_names, tree_file_summary

APP_NAME = "replay"


def _frames(run: Path) -> tuple[Any, Any, Any]:
    from rsi_workbench.experiments.dreaming.experiment import load_frames
    from rsi_workbench.widgets.tree_file import is_tree_file, tree_file_frames

    if is_tree_file(run):  # a standalone tree file: replayed now (widgets/tree_file.py)
        return tree_file_frames(run)
    return (
        load_frames(run, "replay_tree_scored"),
        load_frames(run, "policy_deployed"),
        load_frames(run, "tree_node"),
    )


class ReplayExplorer(pn.viewable.Viewer):
    """Replay score heatmap (policies × trees) for one dreaming round, recomputed for the chosen β."""

    run = param.String(doc="dreaming experiment directory, or a discovery tree file")
    round_key = param.Selector(default=None, objects=[], doc="arm / seed / dreaming round")
    beta1 = param.Number(default=2e-4, bounds=(0.0, None), doc="β1: replay cost per revealed node")
    beta2 = param.Number(default=5e-4, bounds=(0.0, None), doc="β2: parallelism bonus per node per round")

    def __init__(self, **params: Any):
        super().__init__(**params)
        self._scores, self._deployed, self._nodes = _frames(Path(self.run))
        self._policy_names = policy_names(self._scores)  # a tree file's candidates are named policies
        if not len(self._scores):
            raise ValueError(f"{self.run}: no replay_tree_scored events (not a dreaming experiment?)")
        keys = {f"{a} · seed {s} · round {r}": (a, s, r) for a, s, r in replay_rounds(self._scores)}
        if self._policy_names is not None:  # a tree file: one replay, made when the page opened
            keys = {f"{a} (replayed now)": (a, s, r) for a, s, r in replay_rounds(self._scores)}
        self._keys = keys
        self.param.round_key.objects = list(keys)
        if self.round_key not in keys:
            self.round_key = list(keys)[-1]
        if "beta1" not in params and len(self._deployed):
            self.beta1, self.beta2 = (
                float(self._deployed["beta1"].iloc[0]),
                float(self._deployed["beta2"].iloc[0]),
            )
        self.declared = (self.beta1, self.beta2)
        self._summary = pn.pane.Markdown(sizing_mode="stretch_width", css_classes=["rsi-replay-summary"])
        self._heat = pn.pane.Plotly(sizing_mode="stretch_width", config={"displaylogo": False})
        self._curve = pn.pane.Plotly(plot_compute_to_quality(self._nodes), sizing_mode="stretch_width")
        self._fidelity = _fidelity_pane(Path(self.run)) if self._policy_names is None else None
        self._b1 = pn.widgets.FloatSlider(
            name="β1 (cost per node)", start=0.0, end=0.02, step=1e-4, value=self.beta1, format="0.0000"
        )
        self._b2 = pn.widgets.FloatSlider(
            name="β2 (parallelism bonus)", start=0.0, end=0.02, step=1e-4, value=self.beta2, format="0.0000"
        )
        self._b1.param.watch(lambda e: setattr(self, "beta1", e.new), "value_throttled")
        self._b2.param.watch(lambda e: setattr(self, "beta2", e.new), "value_throttled")
        self.param.watch(self._refresh, ["beta1", "beta2", "round_key"])
        self._refresh()

    def info(self) -> Any:
        a, s, r = self._keys[self.round_key]
        info = replay_info(self._scores, a, s, r, self.beta1, self.beta2, self._deployed)
        if self._policy_names is None:
            return info
        # a tree file has no seed or dreaming round: the heading names the tree (its "arm") instead
        return info._replace(policies=self._policy_names, label=f"{a}, replayed now")

    def _refresh(self, *_: Any) -> None:
        if self._b1.value != self.beta1:
            self._b1.value = self.beta1
        if self._b2.value != self.beta2:
            self._b2.value = self.beta2
        info = self.info()
        self._heat.object = plot_replay_heatmap(info)
        if self._policy_names is not None:  # a tree file: no recorded deployment to compare with
            self._summary.object = tree_file_summary(info)
            return
        rec = info.recorded_chosen
        same = "the same as" if rec == info.chosen else "**different from**"
        self._summary.object = (
            f"**chosen policy: {info.policies[info.chosen]}** (mean V {fmt_v(info.mean_V[info.chosen])}) at "
            f"β1 = {self.beta1:g}, β2 = {self.beta2:g} — {same} the recorded deployment "
            f"({'π0' if rec == 0 else f'candidate {rec}' if rec is not None else 'not recorded'}; "
            f"declared β1 = {self.declared[0]:g}, β2 = {self.declared[1]:g}). Mean V: "
            + ", ".join(f"{p} {fmt_v(v)}" for p, v in zip(info.policies, info.mean_V))
            + (
                " (— = undefined: a replay revealed no valid node; ranked below every defined mean)"
                if any(v is None for v in info.mean_V)
                else ""
            )
            + _budget_line(info)
        )

    def __panel__(self) -> pn.viewable.Viewable:
        controls = pn.Row(
            pn.widgets.Select.from_param(self.param.round_key, name="round"),
            self._b1,
            self._b2,
            sizing_mode="stretch_width",
        )
        parts = [controls, self._summary, self._heat, self._curve]
        if self._fidelity is not None:
            parts.append(self._fidelity)
        return pn.Column(*parts, sizing_mode="stretch_width")


def _budget_line(info: Any) -> str:
    """Where the run replayed under a node budget: the budget and each policy's out-of-tree share."""
    if info.node_budget is None:
        return ""
    line = f"\n\nReplayed with a **node budget of {info.node_budget}** choices per tree"
    if info.out_of_tree_share is not None:
        line += "; out-of-tree choices (the record holds no child, so nothing was revealed): " + ", ".join(
            f"{p} {'—' if v is None else f'{v:.0%}'}" for p, v in zip(info.policies, info.out_of_tree_share)
        )
    return line + "."


def _fidelity_pane(run: Path) -> Any:
    """Replay score vs online result (the replay-fidelity measure) for an experiment with a
    ``dreaming_diverse`` arm, or None; a measure that cannot be computed yet (e.g. a run still
    going) is said in words, not drawn."""
    from rsi_workbench.records import Run
    from rsi_workbench.viz import plot_replay_fidelity

    if "dreaming_diverse" not in (Run.open(run).config.get("arms") or []):
        return None
    try:
        fig = plot_replay_fidelity(run)
    except (ValueError, KeyError) as e:
        return pn.pane.Markdown(f"replay fidelity: not available yet ({e})")
    return pn.pane.Plotly(fig, sizing_mode="stretch_width", config={"displaylogo": False})


def applies(run: Path, kinds: set[str]) -> bool:
    from rsi_workbench.records import has_events
    from rsi_workbench.viz.memory import memory_runs

    if "memory_run_started" in kinds or memory_runs(run):  # RSIAgent arms hold memory runs, not trees
        return False
    return (run / "arms").is_dir() and any(has_events(p) for p in (run / "arms").iterdir())


def build(run: Path, extra: dict[str, str], live: Any = None) -> ReplayExplorer:
    view = ReplayExplorer(run=str(run))
    if pn.state.location is not None:
        pn.state.location.sync(view, {"beta1": "beta1", "beta2": "beta2", "round_key": "round"})
    return view


def export_sections(run: Path) -> list[Section]:
    """Static report part: the last round's heatmap with pre-computed states along β1, and compute-to-quality."""
    ex = ReplayExplorer(run=str(run))
    b1s = sorted({0.0, 1e-4, 2e-4, 5e-4, 1e-3, 2e-3, 5e-3, 1e-2, 2e-2, ex.declared[0]})
    states = []
    for b in b1s:
        ex.beta1 = b
        states.append(plot_replay_heatmap(ex.info()))
    # the figure opens at the declared β1, where the slider starts
    fig = figure_with_states(
        states, [f"{b:g}" for b in b1s], prefix="β1 = ", active=b1s.index(ex.declared[0])
    )
    text = (
        "V(π; T) = quality − β1·n + β2·n/k recomputed from the recorded replays; ★ = the policy the deployment "
        "rule picks; — = undefined (the replay revealed no valid node)."
    )
    figs = [fig, plot_compute_to_quality(ex._nodes)]
    if isinstance(ex._fidelity, pn.pane.Plotly):
        figs.append(ex._fidelity.object)
    return [Section("Replay scores", text, figs)]


if pn.state.served:
    served_app(build)
