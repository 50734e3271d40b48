"""Reaction optimisation: mean best observed yield per experiment count and first hits of the pool
maximum, per grid, for every method of a ``reactions`` experiment.

    panel serve widgets/reaction_curves.py --args --run runs/<reactions experiment>

Each predictor run is also a protocol run (``OUT/runs/<grid>/<method>-seed<s>``): serve one of
those to step through its cycles, reliability verdicts and gates.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import panel as pn
import param

from rsi_workbench.viz.html import Section
from rsi_workbench.viz.reactions import plot_best_yield_curves, plot_first_hits
from rsi_workbench.widgets._app import served_app

APP_NAME = "reactions"


class ReactionCurves(pn.viewable.Viewer):
    """A grid selector, the best-yield curves and the first-hit boxes of that grid."""

    run = param.String(doc="reactions experiment directory")
    grid = param.Selector(default=None, objects=[], doc="condition grid")

    def __init__(self, **params: Any):
        super().__init__(**params)
        from rsi_workbench.experiments.reactions.experiment import runs_frame

        self._runs = runs_frame(self.run)
        if self._runs.empty:
            raise ValueError(f"{self.run}: no finished reaction runs yet")
        grids = list(dict.fromkeys(self._runs["grid"]))
        self.param.grid.objects = grids
        if self.grid not in grids:
            self.grid = grids[0]
        self._curves = pn.pane.Plotly(sizing_mode="stretch_width", config={"displaylogo": False})
        self._hits = pn.pane.Plotly(sizing_mode="stretch_width", config={"displaylogo": False})
        self._select = pn.widgets.Select.from_param(self.param.grid, name="grid")
        self._update()
        self.param.watch(lambda *_: self._update(), ["grid"])

    def _update(self) -> None:
        self._curves.object = plot_best_yield_curves(self._runs, self.grid)
        self._hits.object = plot_first_hits(self._runs, self.grid)

    def __panel__(self) -> Any:
        return pn.Column(self._select, self._curves, self._hits, sizing_mode="stretch_width")


def applies(run: Path, kinds: set[str]) -> bool:
    return "cohort_finished" in kinds


def build(run: Path, extra: dict[str, str], live: Any = None) -> ReactionCurves:
    return ReactionCurves(run=str(run), **({"grid": extra["grid"]} if "grid" in extra else {}))


def export_sections(run: Path) -> list[Section]:
    from rsi_workbench.experiments.reactions.experiment import runs_frame

    runs = runs_frame(run)
    text = (
        "Mean best observed yield per experiment count (±1 s.e. over seeded runs); the dashed line is the "
        "pool maximum; arms with a transfer prior are labelled prior only (dotted) or prior + adaptation, and "
        "triangles mark the experiments where runs kept an adapted predictor. Below: the experiment index at "
        "which each run first reached it."
    )
    return [
        Section(f"Reactions · {g}", text, [plot_best_yield_curves(runs, g), plot_first_hits(runs, g)])
        for g in dict.fromkeys(runs["grid"])
    ]


if pn.state.served:
    served_app(build)
