"""Shared colours so the same kind, verdict or policy has one colour in every figure."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

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


# Notebook figures: JupyterLab draws the plotly mimetype; the "notebook_offline" part also writes an
# HTML fallback and embeds plotly.js once in the notebook (no CDN), so a saved notebook converted with
# `jupyter nbconvert --to html` keeps its figures. plotly's own "notebook" renderer adds a
# `<script src=...>` for MathJax from a CDN to every figure's HTML; "notebook_offline" leaves MathJax
# out (no figure here typesets LaTeX). ("notebook_connected" would load plotly.js from a CDN.)
NOTEBOOK_PLOTLY_RENDERER = "plotly_mimetype+notebook_offline"


def _register_offline_notebook_renderer() -> None:
    import plotly.io as pio
    from plotly.io._base_renderers import NotebookRenderer

    class OfflineNotebookRenderer(NotebookRenderer):  # type: ignore[misc]
        """plotly's notebook renderer with no MathJax: the figure's HTML loads no script from the network."""

        def to_mimebundle(self, fig_dict: Any) -> dict[str, str]:
            html = pio.to_html(
                fig_dict,
                config=self.config,
                auto_play=self.auto_play,
                include_plotlyjs=self.include_plotlyjs,
                include_mathjax=False,
                post_script=self.post_script,
                full_html=False,
                animation_opts=self.animation_opts,
                default_width="100%",
                default_height=525,
                validate=False,
            )
            return {"text/html": html}

    if "notebook_offline" not in pio.renderers:
        pio.renderers["notebook_offline"] = OfflineNotebookRenderer()


def use_notebook_plotly_renderer() -> str:
    """Make ``fig.show()`` in a notebook embed plotly.js and an HTML fallback that loads nothing from
    the network (no MathJax); returns the renderer name."""
    import plotly.io as pio

    _register_offline_notebook_renderer()
    pio.renderers.default = NOTEBOOK_PLOTLY_RENDERER
    return NOTEBOOK_PLOTLY_RENDERER
