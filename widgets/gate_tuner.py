"""Gate tuner: move the declared reliability and gate thresholds, see which recorded decisions flip.

Decisions are recomputed from the recorded events by the protocol's own pure functions
(:mod:`rsi_workbench.viz.gates`); sliders are throttled (recompute on release) and results cached
per threshold setting. Served, the thresholds live in the URL, so a link reproduces the view;
"save as config" downloads the experiment config with the chosen thresholds.

    panel serve widgets/gate_tuner.py --args --run runs/<code-repair experiment or run>
"""

from __future__ import annotations

import json
from functools import lru_cache
from io import StringIO
from pathlib import Path
from typing import Any

import panel as pn
import param

from rsi_workbench.viz.gates import (
    Decision,
    Thresholds,
    gate_inputs,
    gate_matrix_info,
    plot_gate_matrix,
    recompute,
)
from rsi_workbench.viz.html import Section, figure_with_states
from rsi_workbench.viz.protocol import load_protocol_runs, protocol_run_paths
from rsi_workbench.widgets._app import served_app

APP_NAME = "gates"

# slider ranges: (lower, upper, step) per threshold
RANGES: dict[str, tuple[float, float, float]] = {
    "min_predictions": (1, 200, 1),
    "min_groups": (1, 50, 1),
    "max_brier": (0.0, 2.0, 0.01),
    "max_ece": (0.0, 1.0, 0.01),
    "min_examples": (1, 200, 1),
    "min_utility_gain": (-0.5, 0.5, 0.01),
    "min_brier_gain": (-0.5, 0.5, 0.01),
    "max_ranking_drop": (-0.5, 0.5, 0.01),
    "max_utility_drop": (-0.5, 0.5, 0.01),
    "max_brier_increase": (-0.5, 0.5, 0.01),
}
GROUPS = {
    "reliability (eq. 10)": ("min_predictions", "min_groups", "max_brier", "max_ece"),
    "adaptation trigger (eq. 11)": ("min_examples",),
    "policy gate (eq. 13)": ("min_utility_gain",),
    "predictor gate (eq. 14)": ("min_brier_gain", "max_ranking_drop"),
    "pair gate (eq. 17)": ("max_utility_drop", "max_brier_increase"),
}


class GateTuner(pn.viewable.Viewer):
    """Threshold sliders → recomputed decisions, the decision matrix, and the list of flips."""

    run = param.String(doc="code-repair experiment or protocol run directory")
    min_predictions = param.Integer(default=20, bounds=(1, None))
    min_groups = param.Integer(default=3, bounds=(1, None))
    max_brier = param.Number(default=0.25)
    max_ece = param.Number(default=0.1)
    min_examples = param.Integer(default=20, bounds=(1, None))
    min_utility_gain = param.Number(default=0.0)
    min_brier_gain = param.Number(default=0.0)
    max_ranking_drop = param.Number(default=0.0)
    max_utility_drop = param.Number(default=0.0)
    max_brier_increase = param.Number(default=0.0)

    def __init__(self, **params: Any):
        run = params.get("run")
        if run is None:
            raise ValueError("GateTuner needs run=<experiment or run directory>")
        runs = load_protocol_runs(run)
        if len({r.name for r in runs}) < len(runs):  # e.g. a GUI experiment's runs/<method>-seed<s>/gen<g>
            for r in runs:
                r.name = str(r.path.relative_to(run)) if r.path.is_relative_to(run) else str(r.path)
        self._inputs = [gate_inputs(r) for r in runs]
        self.declared = self._inputs[0].declared
        explicit = {k for k in params if k in Thresholds.names()}
        super().__init__(
            **{**{k: getattr(self.declared, k) for k in Thresholds.names() if k not in explicit}, **params}
        )
        self._recompute = lru_cache(maxsize=256)(self._recompute_uncached)
        self._summary = pn.pane.Markdown(sizing_mode="stretch_width", css_classes=["rsi-gate-summary"])
        self._matrix = pn.pane.Plotly(sizing_mode="stretch_width", config={"displaylogo": False})
        self._flips = pn.widgets.Tabulator(
            sizing_mode="stretch_width", height=260, disabled=True, show_index=False, layout="fit_data_fill"
        )
        self._sliders: dict[str, Any] = {}
        for name, (lo, hi, step) in RANGES.items():
            cls = (
                pn.widgets.IntSlider
                if isinstance(getattr(self.declared, name), int)
                else pn.widgets.FloatSlider
            )
            w = cls(
                name=name, start=lo, end=hi, step=step, value=getattr(self, name), sizing_mode="stretch_width"
            )
            w.param.watch(lambda e, n=name: setattr(self, n, e.new), "value_throttled")
            self._sliders[name] = w
        self._reset = pn.widgets.Button(name="reset to declared thresholds")
        self._reset.on_click(self._reset_thresholds)
        self._download = pn.widgets.FileDownload(
            callback=self._config_file,
            filename="gate_thresholds.yaml",
            label="save as config (YAML)",
            button_type="primary",
        )
        self.param.watch(self._refresh, Thresholds.names())
        self._refresh()

    def _reset_thresholds(self, _: Any = None) -> None:
        self.param.update(**{k: getattr(self.declared, k) for k in Thresholds.names()})

    @property
    def thresholds(self) -> Thresholds:
        return Thresholds(**{k: getattr(self, k) for k in Thresholds.names()})

    def _recompute_uncached(self, t: Thresholds) -> tuple[Decision, ...]:
        return tuple(d for gi in self._inputs for d in recompute(gi, t))

    def decisions(self, t: Thresholds | None = None) -> list[Decision]:
        """Every recorded decision recomputed with ``t`` (default: the current slider values)."""
        return list(self._recompute(t or self.thresholds))

    def _refresh(self, *_: Any) -> None:
        t = self.thresholds
        for k, w in self._sliders.items():
            if w.value != getattr(t, k):
                w.value = getattr(t, k)
        ds = self.decisions(t)
        info = gate_matrix_info(ds)
        changed = {
            k: (getattr(self.declared, k), getattr(t, k))
            for k in Thresholds.names()
            if getattr(self.declared, k) != getattr(t, k)
        }
        what = ", ".join(f"{k} {a} → {b}" for k, (a, b) in changed.items()) or "the declared thresholds"
        self._summary.object = (
            f"**{info.n_flipped} of {info.n_decisions} decisions flip** with {what} "
            f"({len(self._inputs)} runs). Decisions are recomputed per cycle on the recorded inputs, "
            f"with the metrics rules each run was made with ({self._metrics_versions_text()}); "
            "a flip does not re-run later cycles."
        )
        self._matrix.object = plot_gate_matrix(info)
        flips = [d._asdict() for d in ds if d.flipped]
        import pandas as pd

        self._flips.value = pd.DataFrame(
            flips, columns=["run", "cycle", "decision", "recorded", "recomputed", "reasons"]
        )

    def _metrics_versions_text(self) -> str:
        vs = sorted({gi.metrics_version for gi in self._inputs})
        return "metrics version " + ", ".join(map(str, vs))

    def config_with_thresholds(self) -> dict[str, Any]:
        """The experiment config (nearest ``config.json`` with ``protocol:``) with these thresholds,
        pinned to the metrics version the tuner recomputed with (the run's own)."""
        base: dict[str, Any] = {}
        p = Path(self.run)
        for d in (p, p.parent, p.parent.parent, p.parent.parent.parent):
            f = d / "config.json"
            if f.exists() and (c := json.loads(f.read_text())).get("experiment") == "gui":
                return gui_config_with_thresholds(c, self.thresholds)
            if f.exists() and "protocol" in c:
                base = c
                break
        proto = dict(base.get("protocol", {}))
        for key, patch in self.thresholds.settings_patch().items():
            if key == "gates":
                gates = dict(proto.get("gates", {}))
                for g, vals in patch.items():
                    gates[g] = {**gates.get(g, {}), **vals}
                proto["gates"] = gates
            else:
                proto[key] = {**proto.get(key, {}), **patch}
        proto.setdefault("metrics_version", self._inputs[0].metrics_version)
        return {**base, "protocol": proto}

    def save_config(self, path: str | Path) -> Path:
        """Write :meth:`config_with_thresholds` as YAML (runs with ``rsi-workbench run PATH``)."""
        import yaml

        out = Path(path)
        out.write_text(yaml.safe_dump(self.config_with_thresholds(), sort_keys=False))
        return out

    def _config_file(self) -> StringIO:
        import yaml

        return StringIO(yaml.safe_dump(self.config_with_thresholds(), sort_keys=False))

    def __panel__(self) -> pn.viewable.Viewable:
        cards = [
            pn.Card(
                *(self._sliders[n] for n in names),
                title=title,
                collapsible=False,
                sizing_mode="stretch_width",
            )
            for title, names in GROUPS.items()
        ]
        side = pn.Column(*cards, self._reset, self._download, width=340)
        main = pn.Column(
            self._summary,
            self._matrix,
            pn.pane.Markdown("**Decisions that flip**"),
            self._flips,
            sizing_mode="stretch_width",
        )
        return pn.Row(side, main, sizing_mode="stretch_width")


def gui_config_with_thresholds(base: dict[str, Any], t: Thresholds) -> dict[str, Any]:
    """A GUI experiment config (its thresholds are top-level fields, not a ``protocol:`` block) with ``t``."""
    patch = t.settings_patch()
    out = {**base, "reliability": {**base.get("reliability", {}), **patch["reliability"]}}
    out["min_adapt_examples"] = patch["adaptation"]["min_examples"]
    gates = dict(base.get("gates", {}))
    for g, vals in patch["gates"].items():
        gates[g] = {**gates.get(g, {}), **vals}
    out["gates"] = gates
    return out


def applies(run: Path, kinds: set[str]) -> bool:
    """For protocol runs and experiments grouping them (not a reactions experiment: its hundreds of
    protocol runs are opened one at a time)."""
    return "loop_opened" in kinds or ("cohort_finished" not in kinds and bool(protocol_run_paths(run)))


def build(run: Path, extra: dict[str, str], live: Any = None) -> GateTuner:
    view = GateTuner(run=str(run))
    if pn.state.location is not None:
        pn.state.location.sync(view, {k: k for k in Thresholds.names()})
    return view


def export_sections(run: Path) -> list[Section]:
    """Static report part: the decision matrix with pre-computed states along the Brier threshold."""
    tuner = GateTuner(run=str(run))
    d = tuner.declared
    grid = (0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.6, 0.8, 1.0, 1.2, 1.5)
    values = sorted({d.max_brier, *(v for v in grid if abs(v - d.max_brier) > 1e-9)})
    states = [plot_gate_matrix(gate_matrix_info(tuner.decisions(d.with_(max_brier=v)))) for v in values]
    for v, f in zip(values, states):
        f.layout.title.text = f"max_brier = {v:g}: " + f.layout.title.text
    # the figure opens at the declared threshold, where the slider starts
    fig = figure_with_states(
        states,
        [f"{v:g}" for v in values],
        prefix="reliability max_brier = ",
        active=values.index(d.max_brier),
    )
    text = "Recorded decisions recomputed by the protocol's functions; move the slider to see which flip (★)."
    return [Section("Gate decisions", text, [fig])]


if pn.state.served:
    served_app(build)
