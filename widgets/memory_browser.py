"""Memory browser: an RSIAgent run's memory tree per snapshot with diffs, waves and branches,
verdicts with evidence, curriculum handoffs and audit rejects (host-side events agents never see).

    panel serve widgets/memory_browser.py --args --run runs/<rsiagent experiment or arm run>
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import panel as pn
import param

from rsi_workbench.viz.html import Section
from rsi_workbench.viz.memory import (
    MemoryInfo,
    file_diff,
    handoff_rows,
    load_tree,
    memory_info,
    memory_runs,
    outcome_rows,
    plot_curve,
    plot_memory_growth,
    plot_waves,
    snapshot_labels,
    summary_text,
    tree_rows,
)
from rsi_workbench.widgets._app import served_app

APP_NAME = "memory"
PREVIOUS = "(previous snapshot)"
EMPTY_LABEL = "(empty memory)"


def _table(rows: list[dict[str, Any]], height: int = 240) -> pn.widgets.Tabulator:
    import pandas as pd

    return pn.widgets.Tabulator(
        pd.DataFrame(rows), disabled=True, show_index=False, sizing_mode="stretch_width", height=height
    )


class MemoryBrowser(pn.viewable.Viewer):
    run = param.String(doc="an rsiagent experiment directory or one engine run")
    arm = param.Selector(default=None, objects=[], doc="which engine run (arm)")
    snapshot = param.Selector(default=None, objects=[], doc="memory snapshot to show")
    compare = param.Selector(default=PREVIOUS, objects=[PREVIOUS], doc="diff against")
    path = param.Selector(default=None, objects=[], doc="memory file whose diff is shown")

    def __init__(self, **params: Any):
        super().__init__(**params)
        self._arms = memory_runs(self.run)
        if not self._arms:
            raise ValueError(f"{self.run}: no RSIAgent run (no memory_run_started event) here or under arms/")
        self.param.arm.objects = list(self._arms)
        if self.arm not in self._arms:  # the first full-RSI arm, else the last
            self.arm = next((a for a in self._arms if a.startswith("full")), list(self._arms)[-1])
        self._summary = pn.pane.Markdown(css_classes=["rsi-memory-summary"], sizing_mode="stretch_width")
        self._waves = pn.pane.Plotly(sizing_mode="stretch_width")
        self._growth = pn.pane.Plotly(sizing_mode="stretch_width")
        self._curve = pn.pane.Plotly(sizing_mode="stretch_width")
        self._tree_title = pn.pane.Markdown(css_classes=["rsi-memory-tree"])
        self._tree = pn.Column(sizing_mode="stretch_width")
        self._diff = pn.pane.Markdown(sizing_mode="stretch_width", css_classes=["rsi-memory-diff"])
        self._tables = pn.Column(sizing_mode="stretch_width")
        self.param.watch(self._on_arm, "arm")
        self.param.watch(self._on_snapshot, ["snapshot", "compare"])
        self.param.watch(self._show_diff, "path")
        if pn.state.served:  # answer the page at once, read the run once it is shown
            self._summary.object = f"loading {Path(self._arms[self.arm]).name} …"
            pn.state.onload(self._on_arm)
        else:
            self._on_arm()

    # -- data --------------------------------------------------------------------------------------
    def _on_arm(self, *_: Any) -> None:
        self.info: MemoryInfo = memory_info(self._arms[self.arm])
        self._labels = snapshot_labels(self.info)
        self.param.snapshot.objects = list(self._labels) or [None]
        self.param.compare.objects = [PREVIOUS, EMPTY_LABEL, *self._labels]
        self._summary.object = summary_text(self.info)
        self._waves.object = plot_waves(self.info)
        self._growth.object = plot_memory_growth(self.info)
        self._curve.object = plot_curve(self.info) if self.info.curve else None
        self._curve.visible = bool(self.info.curve)
        self._tables[:] = self._event_tables()
        self.snapshot = list(self._labels)[-1] if self._labels else None
        self._on_snapshot()

    def _event_tables(self) -> list[Any]:
        rejects = [
            {k: r.get(k) for k in ("wave", "project_index", "project_id", "path", "restored", "shingle")}
            for r in self.info.rejects
        ]
        return [
            pn.pane.Markdown("**Verdicts with evidence** (one row per committed project: the ledger)"),
            _table(outcome_rows(self.info), 280),
            pn.pane.Markdown("**Curriculum handoffs** (failed turns with their reason)"),
            _table(handoff_rows(self.info), 200),
            pn.pane.Markdown(
                f"**Audit rejects**: {len(rejects)} memory file(s) dropped for sharing a shingle with "
                "host-only text (host-side events: no role sees them)",
                css_classes=["rsi-memory-rejects"],
            ),
            *([_table(rejects, 160)] if rejects else []),
        ]

    def trees(self) -> tuple[Any, Any, str]:
        """(before, after, label of before) for the selected snapshot and comparison."""
        from rsi_workbench.memory import EMPTY

        labels = list(self._labels)
        if self.snapshot is None:
            return EMPTY, EMPTY, EMPTY_LABEL
        after = load_tree(self.info, self._labels[self.snapshot])
        if self.compare == EMPTY_LABEL:
            return EMPTY, after, EMPTY_LABEL
        if self.compare == PREVIOUS:
            i = labels.index(self.snapshot)
            if i == 0:
                return EMPTY, after, EMPTY_LABEL
            prev = labels[i - 1]
            return load_tree(self.info, self._labels[prev]), after, prev
        return load_tree(self.info, self._labels[self.compare]), after, str(self.compare)

    # -- views -------------------------------------------------------------------------------------
    def _on_snapshot(self, *_: Any) -> None:
        before, after, blabel = self.trees()
        rows = tree_rows(before, after)
        changed = [r for r in rows if r["status"] != "unchanged"]
        self._tree_title.object = (
            f"**Memory at `{self.snapshot}`** ({after.n_files} files, {after.n_bytes} bytes, "
            f"`{after.tree_hash()[:12]}`) vs `{blabel}`: {len(changed)} path(s) changed"
        )
        self._tree[:] = [_table(rows, 220)] if rows else [pn.pane.Markdown("(empty memory)")]
        paths = [r["path"] for r in changed] + [r["path"] for r in rows if r["status"] == "unchanged"]
        self.param.path.objects = paths or [None]
        self.path = paths[0] if paths else None
        self._show_diff()

    def _show_diff(self, *_: Any) -> None:
        if not self.path:
            self._diff.object = ""
            return
        before, after, _label = self.trees()
        text = file_diff(before, after, self.path)
        if text == "(unchanged)":
            text = after.files.get(self.path, b"").decode("utf-8", "replace")
        self._diff.object = f"`{self.path}`\n```diff\n{text[:6000]}\n```"

    def __panel__(self) -> pn.viewable.Viewable:
        w = pn.widgets.Select.from_param
        pick = pn.Row(
            w(self.param.arm), w(self.param.snapshot), w(self.param.compare), sizing_mode="stretch_width"
        )
        return pn.Column(
            self._summary,
            pn.Row(self._waves, self._growth, sizing_mode="stretch_width"),
            self._curve,
            pick,
            self._tree_title,
            self._tree,
            w(self.param.path),
            self._diff,
            self._tables,
            sizing_mode="stretch_width",
        )


def applies(run: Path, kinds: set[str]) -> bool:
    return "memory_run_started" in kinds or bool(memory_runs(run))


def build(run: Path, extra: dict[str, str], live: Any = None) -> MemoryBrowser:
    view = MemoryBrowser(run=str(run))
    if pn.state.location is not None:
        pn.state.location.sync(view, {"arm": "arm", "snapshot": "snapshot"})
    return view


def export_sections(run: Path) -> list[Section]:
    """Static report part: per arm the summary, waves, memory growth and curve."""
    out = []
    for name, path in memory_runs(run).items():
        info = memory_info(path)
        figs = [plot_waves(info), plot_memory_growth(info), *([plot_curve(info)] if info.curve else [])]
        out.append(Section(f"Memory: {name}", summary_text(info).replace("**", ""), figs))
    return out


if pn.state.served:
    served_app(build)
