"""Shared colours so the same kind, verdict or policy has one colour in every figure."""

from __future__ import annotations

from collections.abc import Iterable

PALETTE = (
    "#4C78A8", "#F58518", "#54A24B", "#E45756", "#72B7B2",
    "#EECA3B", "#B279A2", "#FF9DA6", "#9D755D", "#BAB0AC",
)  # fmt: skip

VERDICT_COLOURS = {
    "reliable": "#54A24B",
    "unreliable": "#E45756",
    "insufficient": "#BAB0AC",
    "pass": "#54A24B",
    "fail": "#E45756",
    "skip": "#BAB0AC",
    "skipped": "#BAB0AC",
}


def kind_colours(names: Iterable[str]) -> dict[str, str]:
    """A stable colour per name, in order of appearance."""
    return {n: PALETTE[i % len(PALETTE)] for i, n in enumerate(dict.fromkeys(names))}


# Notebook figures: JupyterLab draws the plotly mimetype; the "notebook" part also writes an HTML
# fallback and embeds plotly.js once in the notebook (no CDN), so a saved notebook converted with
# `jupyter nbconvert --to html` keeps its figures. ("notebook_connected" would load plotly.js from a CDN.)
NOTEBOOK_PLOTLY_RENDERER = "plotly_mimetype+notebook"


def use_notebook_plotly_renderer() -> str:
    """Make ``fig.show()`` in a notebook embed plotly.js and an HTML fallback; returns the renderer name."""
    import plotly.io as pio

    pio.renderers.default = NOTEBOOK_PLOTLY_RENDERER
    return NOTEBOOK_PLOTLY_RENDERER
