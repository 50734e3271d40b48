"""Read the figures back out of an exported HTML report: each ``Plotly.newPlot(id, data, layout,
config)`` call and the ``Plotly.addFrames(id, frames)`` that follows it, as JSON."""

from __future__ import annotations

import json
import re
from typing import Any, NamedTuple


class ReportFigure(NamedTuple):
    div_id: str
    data: list[dict[str, Any]]
    layout: dict[str, Any]
    frames: list[dict[str, Any]]


def _values(text: str, start: int, n: int) -> tuple[list[Any], int]:
    """``n`` comma-separated JSON values starting at ``start`` (whitespace allowed around them)."""
    dec = json.JSONDecoder()
    out, i = [], start
    for _ in range(n):
        while text[i] in " \n\t,":
            i += 1
        v, i = dec.raw_decode(text, i)
        out.append(v)
    return out, i


def report_figures(text: str) -> dict[str, ReportFigure]:
    """Every figure of a report by its div id, with its frames (``[]`` when it has none)."""
    figs: dict[str, ReportFigure] = {}
    for m in re.finditer(r"Plotly\.newPlot\(", text):
        (div_id, data, layout), end = _values(text, m.end(), 3)
        frames: list[dict[str, Any]] = []
        tail = text[end : end + 400]
        fm = re.search(r"Plotly\.addFrames\('([^']+)',", tail)
        if fm and fm.group(1) == div_id:
            (frames,), _ = _values(text, end + fm.end(), 1)
        figs[div_id] = ReportFigure(div_id, data, layout, frames)
    return figs


def initial_and_active_frame(fig: ReportFigure) -> tuple[dict[str, Any], dict[str, Any], str]:
    """For a figure with a slider: (what the page draws first, the frame the slider's initial step
    names, that step's label)."""
    slider = fig.layout["sliders"][0]
    step = slider["steps"][slider.get("active", 0)]
    name = step["args"][0][0]
    frame = next(f for f in fig.frames if f["name"] == name)
    shown = {"data": fig.data, **{k: fig.layout.get(k) for k in ("title", "shapes", "annotations")}}
    return shown, frame, str(step["label"])
