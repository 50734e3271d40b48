"""Self-contained static HTML reports: plotly.js inlined once, figures, and pre-computed slider states.

A report opens from a file with no server and no network (``rsi-workbench export``). Slider states
are plotly frames: each state is drawn in advance, and the slider only switches between them.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    import plotly.graph_objects as go


class Section(NamedTuple):
    """One titled part of a report: a short text and its figures (in order)."""

    title: str
    text: str
    figures: list[go.Figure]


def figure_with_states(
    states: Sequence[go.Figure], labels: Sequence[str], *, prefix: str = "", title: str | None = None
) -> go.Figure:
    """One figure whose slider switches between pre-drawn ``states`` (same traces in each state).

    The first state is shown initially; each further state becomes a plotly frame, so moving the
    slider in a static HTML page needs no Python.
    """
    import plotly.graph_objects as go

    if not states or len(states) != len(labels):
        raise ValueError(f"need one label per state, got {len(states)} states and {len(labels)} labels")
    n = len(states[0].data)
    for lab, f in zip(labels, states):
        if len(f.data) != n:
            raise ValueError(f"state {lab!r} has {len(f.data)} traces, the first has {n}; they must match")
    fig = go.Figure(data=states[-1].data, layout=states[-1].layout)
    fig.frames = [
        go.Frame(data=f.data, name=str(lab), layout={"title": f.layout.title})
        for lab, f in zip(labels, states)
    ]
    steps = [
        {
            "label": str(lab),
            "method": "animate",
            "args": [
                [str(lab)],
                {
                    "mode": "immediate",
                    "frame": {"duration": 0, "redraw": True},
                    "transition": {"duration": 0},
                },
            ],
        }
        for lab in labels
    ]
    fig.update_layout(
        sliders=[
            {"active": len(labels) - 1, "currentvalue": {"prefix": prefix}, "steps": steps, "pad": {"t": 50}}
        ]
    )
    if title is not None:
        fig.update_layout(title=title)
    return fig


def html_report(title: str, sections: Sequence[Section], *, subtitle: str = "") -> str:
    """The whole report as one HTML string with plotly.js inlined (works offline, from a file)."""
    import plotly.io as pio
    from plotly.offline import get_plotlyjs

    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{html.escape(title)}</title>",
        "<style>body{font-family:system-ui,sans-serif;margin:24px auto;max-width:1200px;color:#222}"
        "h1{font-size:1.6em}h2{border-bottom:1px solid #ddd;padding-bottom:4px;margin-top:2em}"
        "section p{color:#444;white-space:pre-wrap}.figure{margin:12px 0}</style>",
        f'<script type="text/javascript">{get_plotlyjs()}</script>',
        "</head><body>",
        f"<h1>{html.escape(title)}</h1>",
    ]
    if subtitle:
        parts.append(f"<p>{html.escape(subtitle)}</p>")
    for i, sec in enumerate(sections):
        parts.append(f'<section id="section-{i}"><h2>{html.escape(sec.title)}</h2>')
        if sec.text:
            parts.append(f"<p>{html.escape(sec.text)}</p>")
        for j, fig in enumerate(sec.figures):
            div = pio.to_html(
                fig,
                full_html=False,
                include_plotlyjs=False,
                div_id=f"fig-{i}-{j}",
                auto_play=False,
                config={"displaylogo": False},
            )
            parts.append(f'<div class="figure">{div}</div>')
        parts.append("</section>")
    parts.append("</body></html>")
    return "\n".join(parts)
