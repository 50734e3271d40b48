"""Self-contained static HTML reports: plotly.js inlined once, figures, and pre-computed slider states.

A report opens from a file with no server and no network (``rsi-workbench export``). Slider states
are plotly frames: each state is drawn in advance, and the slider only switches between them.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    import plotly.graph_objects as go


class Table(NamedTuple):
    """A plain HTML table in a report; a row's first cell links to ``links[i]`` (a section anchor) when given."""

    columns: list[str]
    rows: list[list[str]]
    links: tuple[str | None, ...] = ()


class Section(NamedTuple):
    """One titled part of a report: a short text, its figures (in order), an optional table, and an
    optional ``anchor`` (the section's HTML id, so other sections can link to it)."""

    title: str
    text: str
    figures: list[go.Figure]
    table: Table | None = None
    anchor: str | None = None
    details: Sequence[tuple[str, str]] = ()  # (summary, preformatted text): collapsed blocks, e.g. diffs


def anchor_id(text: str) -> str:
    """An HTML id made of ``text`` (letters, digits, ``-``)."""
    return "".join(c if c.isalnum() else "-" for c in text).strip("-").lower() or "section"


# Layout parts a state's frame carries. plotly.js merges a frame into what is drawn key by key and
# item by item (an empty list clears nothing), so the shapes and annotations of every state are
# padded to one length with hidden items, and every real item says ``visible: true``.
FRAME_LAYOUT_KEYS = ("title", "shapes", "annotations")
_PADDED = ("shapes", "annotations")


def figure_with_states(
    states: Sequence[go.Figure],
    labels: Sequence[str],
    *,
    prefix: str = "",
    title: str | None = None,
    active: int | None = None,
) -> go.Figure:
    """One figure whose slider switches between pre-drawn ``states`` (same traces in each state).

    ``active`` (default: the last state) is the slider's initial position, and the figure opens
    drawn as exactly that state, so what the page shows first is what its slider reads. Every
    state becomes a plotly frame (its traces and its :data:`FRAME_LAYOUT_KEYS` layout parts), so
    moving the slider in a static HTML page needs no Python.
    """
    import plotly.graph_objects as go

    if not states or len(states) != len(labels):
        raise ValueError(f"need one label per state, got {len(states)} states and {len(labels)} labels")
    active = len(states) - 1 if active is None else active
    if not 0 <= active < len(states):
        raise ValueError(f"active state {active} is not one of the {len(states)} states")
    n = len(states[0].data)
    for lab, f in zip(labels, states):
        if len(f.data) != n:
            raise ValueError(f"state {lab!r} has {len(f.data)} traces, the first has {n}; they must match")
    sizes = {k: max(len(f.layout[k] or ()) for f in states) for k in _PADDED}
    fig = go.Figure(data=states[active].data, layout=states[active].layout)
    fig.update_layout(_frame_layout(states[active], sizes))
    fig.frames = [
        go.Frame(data=f.data, name=str(lab), layout=_frame_layout(f, sizes)) for lab, f in zip(labels, states)
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
        sliders=[{"active": active, "currentvalue": {"prefix": prefix}, "steps": steps, "pad": {"t": 50}}]
    )
    if title is not None:
        fig.update_layout(title=title)
    return fig


def _frame_layout(f: go.Figure, sizes: dict[str, int]) -> dict[str, Any]:
    """The parts of a state's layout its frame carries (see :data:`FRAME_LAYOUT_KEYS`), with shapes
    and annotations padded to ``sizes`` by hidden items."""
    lay = f.layout.to_plotly_json()
    out: dict[str, Any] = {k: lay[k] for k in FRAME_LAYOUT_KEYS if k in lay}
    for k in _PADDED:
        items = [{**item, "visible": item.get("visible", True)} for item in lay.get(k, [])]
        out[k] = items + [{"visible": False}] * (sizes[k] - len(items))
    return out


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
        "section p{color:#444;white-space:pre-wrap}.figure{margin:12px 0}"
        "table.rsi-table{border-collapse:collapse}.rsi-table td,.rsi-table th{border:1px solid #ddd;"
        "padding:3px 8px;text-align:left}nav.contents li{display:inline;margin-right:1em}"
        "details.rsi-detail pre{background:#f6f8fa;padding:8px;overflow-x:auto}</style>",
        f'<script type="text/javascript">{get_plotlyjs()}</script>',
        "</head><body>",
        f"<h1>{html.escape(title)}</h1>",
    ]
    if subtitle:
        parts.append(f"<p>{html.escape(subtitle)}</p>")
    ids = [sec.anchor or f"section-{i}" for i, sec in enumerate(sections)]
    if len(sections) > 1:
        items = "".join(f'<li><a href="#{i}">{html.escape(s.title)}</a></li>' for i, s in zip(ids, sections))
        parts.append(f'<nav class="contents"><ul>{items}</ul></nav>')
    for i, sec in enumerate(sections):
        parts.append(f'<section id="{html.escape(ids[i])}"><h2>{html.escape(sec.title)}</h2>')
        if sec.text:
            parts.append(f"<p>{html.escape(sec.text)}</p>")
        if sec.table is not None:
            parts.append(_table_html(sec.table))
        for summary, body in sec.details:
            parts.append(
                f'<details class="rsi-detail"><summary>{html.escape(summary)}</summary>'
                f"<pre>{html.escape(body)}</pre></details>"
            )
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


def _table_html(t: Table) -> str:
    head = "".join(f"<th>{html.escape(c)}</th>" for c in t.columns)
    body = []
    for i, row in enumerate(t.rows):
        link = t.links[i] if i < len(t.links) else None
        cells = [html.escape(str(c)) for c in row]
        if link and cells:
            cells[0] = f'<a href="#{html.escape(link)}">{cells[0]}</a>'
        body.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    return f'<table class="rsi-table"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'
