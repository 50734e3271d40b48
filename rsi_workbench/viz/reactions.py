"""Reaction-optimisation views: mean best observed yield per experiment count (with the pool
maximum), and when each run first reached the pool maximum — per grid, one colour per method.

Arms with a transfer prior are labelled by how they use it: "prior only" (adaptation off, dotted)
or "prior + adaptation"; the experiments at which runs kept an adapted predictor (eq. 18) are
marked on their arm's curve (marker size: how many runs adapted there).

Data come from :func:`rsi_workbench.experiments.reactions.experiment.runs_frame` (one row per finished run).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from rsi_workbench.viz._style import kind_colours
from rsi_workbench.viz.scales import int_axis

if TYPE_CHECKING:
    import pandas as pd
    import plotly.graph_objects as go

METHOD_ORDER = ("predictor_utility", "predictor_information", "gp_ei", "random")


def _methods(runs: pd.DataFrame) -> list[str]:
    present = list(dict.fromkeys(runs["method"]))
    return [m for m in METHOD_ORDER if m in present] + [m for m in present if m not in METHOD_ORDER]


def arm_label(d: pd.DataFrame, m: str) -> str:
    """How an arm uses a transfer prior: "" (none), "prior only" or "prior + adaptation"."""
    rows = d[d["method"] == m]
    col = "prior.source_campaigns"  # the runs frame flattens the summary's prior provenance
    if col not in rows.columns or not rows[col].map(lambda p: isinstance(p, list)).any():
        return ""
    if "adaptation" in rows.columns and rows["adaptation"].eq(False).all():
        return "prior only"
    has_kind = "arm_kind" in rows.columns and rows["arm_kind"].notna().any()
    kind = rows["arm_kind"].dropna().iloc[0] if has_kind else m
    return "prior + adaptation" if str(kind).startswith("predictor_") else "prior as GP mean"


def adaptation_marks(d: pd.DataFrame, m: str) -> dict[int, int]:
    """Experiment index -> number of runs of arm ``m`` that kept an adapted predictor there."""
    out: dict[int, int] = {}
    if "adapted_at" not in d.columns:
        return out
    for cycles in d[d["method"] == m]["adapted_at"]:
        for c in cycles if isinstance(cycles, list) else []:
            out[int(c)] = out.get(int(c), 0) + 1
    return dict(sorted(out.items()))


def plot_best_yield_curves(runs: pd.DataFrame, grid: str, *, band: bool = True) -> go.Figure:
    """Mean best observed yield vs experiments run on ``grid``, ±1 standard error band per method;
    prior-only arms dotted, adaptation events marked on their arm's curve."""
    import plotly.graph_objects as go

    d = runs[runs["grid"] == grid]
    if d.empty:
        raise ValueError(f"no finished runs for grid {grid!r}; grids: {sorted(set(runs['grid']))}")
    colours = kind_colours(_methods(runs))
    fig = go.Figure()
    for m in _methods(d):
        arr = np.array(d[d["method"] == m]["best_curve"].tolist(), dtype=float)
        x = np.arange(1, arr.shape[1] + 1)
        mean = arr.mean(0)
        se = arr.std(0, ddof=1) / np.sqrt(len(arr)) if len(arr) > 1 else np.zeros_like(mean)
        if band:
            fig.add_trace(
                go.Scatter(
                    x=np.concatenate([x, x[::-1]]),
                    y=np.concatenate([mean + se, (mean - se)[::-1]]),
                    fill="toself",
                    fillcolor=colours[m],
                    opacity=0.15,
                    line={"width": 0},
                    hoverinfo="skip",
                    showlegend=False,
                    legendgroup=m,
                )
            )
        label = arm_label(d, m)
        fig.add_trace(
            go.Scatter(
                x=x,
                y=mean,
                mode="lines",
                name=f"{m}{' · ' + label if label else ''} ({len(arr)} runs)",
                line={"color": colours[m], "width": 2, "dash": "dot" if label == "prior only" else "solid"},
                legendgroup=m,
                hovertemplate=f"{m}<br>experiments %{{x}}<br>mean best %{{y:.2f}}<extra></extra>",
            )
        )
        marks = {k: v for k, v in adaptation_marks(d, m).items() if 1 <= k <= len(mean)}
        if marks:
            ks = np.array(list(marks))
            fig.add_trace(
                go.Scatter(
                    x=ks,
                    y=mean[ks - 1],
                    mode="markers",
                    name=f"{m}: adaptations kept",
                    marker={
                        "color": colours[m],
                        "symbol": "triangle-up",
                        "size": [6 + 2 * v for v in marks.values()],
                    },
                    legendgroup=m,
                    customdata=list(marks.values()),
                    hovertemplate=f"{m}<br>experiment %{{x}}: %{{customdata}} run(s) kept an adapted predictor"
                    "<extra></extra>",
                )
            )
    pool_max = float(d["pool_max"].iloc[0])
    fig.add_hline(y=pool_max, line_dash="dash", line_color="#888", annotation_text=f"pool max {pool_max:.2f}")
    fig.update_layout(
        title=f"{grid}: mean best observed yield (±1 s.e.)",
        xaxis=int_axis(
            [1, *(len(c) for c in d["best_curve"])], title="experiments run (initial ones included)"
        ),
        yaxis_title="best observed yield",
        template="plotly_white",
        legend={"orientation": "h", "y": -0.2},
    )
    return fig


def plot_first_hits(runs: pd.DataFrame, grid: str) -> go.Figure:
    """When runs first reached the pool maximum (box per method; runs that never did are counted)."""
    import plotly.graph_objects as go

    d = runs[runs["grid"] == grid]
    colours = kind_colours(_methods(runs))
    fig = go.Figure()
    for m in _methods(d):
        fh = [v for v in d[d["method"] == m]["first_hit"] if v is not None and v == v]
        n = int((d["method"] == m).sum())
        fig.add_trace(
            go.Box(
                y=fh,
                name=f"{m}<br>{len(fh)}/{n} hit",
                marker_color=colours[m],
                boxpoints="all",
                jitter=0.4,
                pointpos=0,
            )
        )
    if not any(len(t.y or ()) for t in fig.data):
        fig.add_annotation(
            text="no run reached the pool maximum", x=0.5, y=0.5, xref="paper", yref="paper", showarrow=False
        )
    fig.update_layout(
        title=f"{grid}: first experiment reaching the pool maximum",
        yaxis=int_axis([v for t in fig.data for v in (t.y or ())], title="experiment index"),
        template="plotly_white",
        showlegend=False,
    )
    return fig
