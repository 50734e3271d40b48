"""Run events explorer: scrub any run's event log cycle by cycle and read each event's record; below,
the run's LLM calls (:mod:`rsi_workbench.widgets.llm_calls`: tokens, latency, prompt and samples by role).

Works for every run kind (it only needs ``events.jsonl``): inline in a notebook
(``RunEventsExplorer(run="runs/<id>")``) or served
(``panel serve widgets/run_events.py --args --run runs/<id>``). New events appear as they land.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import panel as pn
import param

from rsi_workbench.viz.events import _events_info, payload_summary, plot_event_counts, plot_event_timeline
from rsi_workbench.viz.html import Section, figure_with_states
from rsi_workbench.widgets._app import RunTail, served_app
from rsi_workbench.widgets.llm_calls import LLMCallsView
from rsi_workbench.widgets.llm_calls import export_section as llm_calls_section

ALL = "(all kinds)"


class RunEventsExplorer(pn.viewable.Viewer):
    """Timeline, per-cycle counts and a table of events up to the chosen cycle; click a row for its record."""

    run = param.String(doc="run directory")
    kind = param.Selector(default=ALL, objects=[ALL], doc="show only events of this kind in the table")
    cycle = param.Integer(default=0, bounds=(0, None), doc="show events of cycles <= this one")
    follow = param.Boolean(default=True, doc="jump to the newest cycle when new events land")
    poll_ms = param.Integer(
        default=1000, bounds=(0, None), doc="how often to look for new events (0 = never)"
    )

    def __init__(self, **params: Any):
        super().__init__(**params)
        self._tail = RunTail(self.run)
        self._tail.poll()
        self._max_cycle = 0
        self._summary = pn.pane.Markdown(sizing_mode="stretch_width", css_classes=["rsi-summary"])
        self._status = pn.pane.Markdown(sizing_mode="stretch_width", css_classes=["rsi-cycle-status"])
        self._timeline = pn.pane.Plotly(sizing_mode="stretch_width", config={"displaylogo": False})
        self._counts = pn.pane.Plotly(sizing_mode="stretch_width", config={"displaylogo": False})
        self._table = pn.widgets.Tabulator(
            sizing_mode="stretch_width",
            height=320,
            selectable=1,
            show_index=False,
            disabled=True,
            pagination="local",
            page_size=50,
        )
        self._record = pn.pane.JSON({}, depth=3, sizing_mode="stretch_width", height=300, theme="light")
        self._kind_w = pn.widgets.Select.from_param(self.param.kind, name="event kind")
        self._cycle_w = pn.widgets.IntSlider(name="up to cycle", start=0, end=1, value=0)
        self._prev = pn.widgets.Button(name="◀ previous cycle", button_type="default")
        self._next = pn.widgets.Button(name="next cycle ▶", button_type="primary")
        self._cycle_w.param.watch(lambda e: setattr(self, "cycle", e.new), "value_throttled")
        self._prev.on_click(lambda e: self._step(-1))
        self._next.on_click(lambda e: self._step(+1))
        self._table.param.watch(self._on_select, "selection")
        self.param.watch(self._refresh, ["kind", "cycle"])
        self.llm_calls = LLMCallsView(run=self.run, tail=self._tail)  # model calls, filtered by role
        self._sync_bounds(initial=True)
        self._refresh()
        if self.poll_ms:
            self._cb: Any = None
            pn.state.onload(self._start_polling)

    # -- state -----------------------------------------------------------------------------------
    def _start_polling(self) -> None:
        self._cb = pn.state.add_periodic_callback(self._poll, period=self.poll_ms)

    def _poll(self) -> None:
        new = self._tail.poll()
        if new:
            self.llm_calls.refresh(new)
            at_end = self.cycle >= self._max_cycle
            self._sync_bounds(initial=False)
            if self.follow and at_end and self.cycle != self._max_cycle:
                self.cycle = self._max_cycle  # triggers _refresh
            else:
                self._refresh()

    def _sync_bounds(self, *, initial: bool) -> None:
        df = self._tail.frame()
        cycles = df["cycle"].dropna()
        self._max_cycle = int(cycles.max()) if len(cycles) else 0
        self.param.kind.objects = [ALL, *dict.fromkeys(df["kind"])]
        self._cycle_w.end = max(1, self._max_cycle)
        self._cycle_w.disabled = self._max_cycle == 0
        if initial:
            self.cycle = self._max_cycle

    def _step(self, delta: int) -> None:
        self.cycle = min(max(0, self.cycle + delta), self._max_cycle)

    def _refresh(self, *_: Any) -> None:
        df = self._tail.frame()
        info = _events_info(df, upto_cycle=self.cycle)
        if self._cycle_w.value != self.cycle:
            self._cycle_w.value = self.cycle
        self._prev.disabled = self.cycle <= 0
        self._next.disabled = self.cycle >= self._max_cycle
        run = Path(self.run)
        self._summary.object = (
            f"### {run.name}\n{len(df)} events · {len(info.kinds)} kinds · "
            f"{len(df['cycle'].dropna().unique())} cycles · `{run}`"
        )
        in_cycle = df[df["cycle"] == self.cycle]
        kinds_here = ", ".join(f"{k} ×{n}" for k, n in in_cycle["kind"].value_counts(sort=False).items())
        self._status.object = (
            f"**cycle {self.cycle} of {self._max_cycle}** — {len(in_cycle)} events: {kinds_here or 'none'}"
        )
        self._timeline.object = plot_event_timeline(info, title=f"events up to cycle {self.cycle}")
        self._counts.object = plot_event_counts(info)
        rows = in_cycle if self.kind == ALL else in_cycle[in_cycle["kind"] == self.kind]
        table = rows[["seq", "kind", "cycle"]].astype({"cycle": "Int64"})
        table["payload"] = [payload_summary(p, 120) for p in rows["payload"]]
        self._table.value = table.reset_index(drop=True)
        self._rows = rows.reset_index(drop=True)
        if len(self._rows):  # show the cycle's first record until a row is clicked
            self._show_record(0)

    def _on_select(self, event: Any) -> None:
        if event.new:
            self._show_record(event.new[0])

    def _show_record(self, i: int) -> None:
        r = self._rows.iloc[i]
        cycle = None if r["cycle"] != r["cycle"] else int(r["cycle"])
        self._record.object = {
            "seq": int(r["seq"]),
            "kind": r["kind"],
            "cycle": cycle,
            "payload": r["payload"],
        }

    def record(self, seq: int) -> dict[str, Any]:
        """The full record of event ``seq`` (as the table's row click shows it)."""
        e = self._tail.events[seq]
        return {"seq": e.seq, "kind": e.kind, "cycle": e.cycle, "payload": json.loads(json.dumps(e.payload))}

    def __panel__(self) -> pn.viewable.Viewable:
        controls = pn.Row(self._prev, self._cycle_w, self._next, self._kind_w, sizing_mode="stretch_width")
        return pn.Column(
            self._summary,
            controls,
            self._status,
            pn.Row(self._timeline, self._counts, sizing_mode="stretch_width"),
            pn.Row(self._table, self._record, sizing_mode="stretch_width"),
            self.llm_calls,
            sizing_mode="stretch_width",
        )


APP_NAME = "events"


def build(run: Path, extra: dict[str, str], live: Any = None) -> RunEventsExplorer:
    """The explorer for ``run``; served, its cycle and kind live in the URL (shareable links)."""
    view = RunEventsExplorer(run=str(run))
    if pn.state.location is not None:
        pn.state.location.sync(view, {"cycle": "cycle", "kind": "kind"})
    return view


def export_sections(run: Path) -> list[Section]:
    """Static report part: the timeline with a pre-computed slider over cycles, and counts."""
    tail = RunTail(run)
    tail.poll()
    df = tail.frame()
    cycles = sorted({int(c) for c in df["cycle"].dropna()})
    if len(cycles) > 40:  # keep the file small: at most 40 pre-computed states
        cycles = [cycles[round(i * (len(cycles) - 1) / 39)] for i in range(40)]
    figs = [
        plot_event_timeline(_events_info(df, upto_cycle=c), title=f"events up to cycle {c}") for c in cycles
    ]
    timeline = (
        figure_with_states(figs, [str(c) for c in cycles], prefix="up to cycle ")
        if figs
        else plot_event_timeline(_events_info(df))
    )
    text = f"{len(df)} events of {df['kind'].nunique()} kinds over {len(cycles)} cycles."
    calls = llm_calls_section(run)  # only when the run called a model
    return [Section("Run events", text, [timeline, plot_event_counts(_events_info(df))])] + (
        [calls] if calls is not None else []
    )


if pn.state.served:
    served_app(build)
