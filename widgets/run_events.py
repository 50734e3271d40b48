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

from rsi_workbench.viz.events import (
    THIS_DIRECTORY,
    events_info,
    payload_summary,
    plot_event_counts,
    plot_event_timeline,
    runs_in,
    runs_table,
)
from rsi_workbench.viz.html import Section, Table, anchor_id, figure_with_states
from rsi_workbench.widgets._app import RunTail, served_app
from rsi_workbench.widgets.llm_calls import LLMCallsView
from rsi_workbench.widgets.llm_calls import export_section as llm_calls_section

ALL = "(all kinds)"


class RunEventsExplorer(pn.viewable.Viewer):
    """Timeline, per-cycle counts and a table of events up to the chosen cycle; click a row for its record.

    On an experiment directory (a run with runs below it) a table lists every run there with its
    event and cycle counts; clicking one (or choosing it in ``run_name``) opens its events.
    """

    run = param.String(doc="run directory, or an experiment directory holding runs")
    run_name = param.Selector(default=None, objects=[], doc="which run of the directory is shown")
    kind = param.Selector(default=ALL, objects=[ALL], doc="show only events of this kind in the table")
    cycle = param.Integer(default=0, bounds=(0, None), doc="show events of cycles <= this one")
    follow = param.Boolean(default=True, doc="jump to the newest cycle when new events land")
    poll_ms = param.Integer(
        default=1000, bounds=(0, None), doc="how often to look for new events (0 = never)"
    )

    def __init__(self, **params: Any):
        super().__init__(**params)
        self._runs = runs_in(self.run)
        if not self._runs:
            raise ValueError(f"{self.run}: no event log here or in any run below it")
        self.param.run_name.objects = list(self._runs)
        if self.run_name not in self._runs:
            self.run_name = next(iter(self._runs))
        self._tail = RunTail(self._runs[self.run_name])
        self._tail.poll()
        self._max_cycle = 0
        self._runs_table = pn.widgets.Tabulator(
            runs_table(self._runs) if len(self._runs) > 1 else None,
            sizing_mode="stretch_width",
            height=min(320, 60 + 30 * len(self._runs)),
            selectable=1,
            show_index=False,
            disabled=True,
            layout="fit_data_fill",
            visible=len(self._runs) > 1,
            css_classes=["rsi-runs-table"],
        )
        self._runs_table.param.watch(self._on_run_select, "selection")
        self._run_w = pn.widgets.Select.from_param(
            self.param.run_name, name="run", visible=len(self._runs) > 1
        )
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
        self.param.watch(self._open_run, "run_name")
        self.llm_calls = LLMCallsView(run=str(self._tail.path), tail=self._tail)  # model calls, by role
        self._llm_box = pn.Column(self.llm_calls, sizing_mode="stretch_width")
        self._sync_bounds(initial=True)
        self._refresh()
        if self.poll_ms:
            self._cb: Any = None
            pn.state.onload(self._start_polling)

    # -- state -----------------------------------------------------------------------------------
    def _on_run_select(self, event: Any) -> None:
        if event.new:
            self.run_name = list(self._runs)[event.new[0]]

    def _open_run(self, *_: Any) -> None:
        """Show the events of the run now chosen in ``run_name`` (from its first event, at its last cycle)."""
        self._tail = RunTail(self._runs[self.run_name])
        self._tail.poll()
        i = list(self._runs).index(self.run_name)
        if self._runs_table.visible and self._runs_table.selection != [i]:
            self._runs_table.selection = [i]
        self.llm_calls = LLMCallsView(run=str(self._tail.path), tail=self._tail)
        self._llm_box.objects = [self.llm_calls]
        with param.parameterized.discard_events(self):
            self.kind = ALL
        self._sync_bounds(initial=False)
        if self.cycle != self._max_cycle:
            self.cycle = self._max_cycle  # triggers _refresh
        else:
            self._refresh()

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
        info = events_info(df, upto_cycle=self.cycle)
        if self._cycle_w.value != self.cycle:
            self._cycle_w.value = self.cycle
        self._prev.disabled = self.cycle <= 0
        self._next.disabled = self.cycle >= self._max_cycle
        run = self._tail.path
        name = (
            Path(self.run).name
            if self.run_name == THIS_DIRECTORY
            else f"{Path(self.run).name} / {self.run_name}"
        )
        below = len(self._runs) - (THIS_DIRECTORY in self._runs)
        self._summary.object = (
            f"### {name}\n{len(df)} events · {len(info.kinds)} kinds · "
            f"{len(df['cycle'].dropna().unique())} cycles · `{run}`"
            + (
                f"\n\n**{below} runs in this directory** — click one in the table to open its events"
                if below
                else ""
            )
        )
        cycleless = not df["cycle"].notna().any()  # e.g. an experiment's own log: no event has a cycle
        in_cycle = df if cycleless else df[df["cycle"] == self.cycle]
        kinds_here = ", ".join(f"{k} ×{n}" for k, n in in_cycle["kind"].value_counts(sort=False).items())
        if cycleless:
            self._status.object = (
                f"**no cycles here** — all {len(in_cycle)} events: {kinds_here or 'none'}"
                + ("; pick a run in the table above for its cycles" if below else "")
            )
        else:
            self._status.object = f"**cycle {self.cycle} of {self._max_cycle}** — {len(in_cycle)} events: {kinds_here or 'none'}"
        title = "events (no cycles)" if cycleless else f"events up to cycle {self.cycle}"
        self._timeline.object = plot_event_timeline(info, title=title)
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
        cycle = (
            None if r["cycle"] is None or r["cycle"] != r["cycle"] else int(r["cycle"])
        )  # None or NaN: none
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
        controls = pn.Row(
            self._run_w, self._prev, self._cycle_w, self._next, self._kind_w, sizing_mode="stretch_width"
        )
        return pn.Column(
            self._summary,
            self._runs_table,
            controls,
            self._status,
            pn.Row(self._timeline, self._counts, sizing_mode="stretch_width"),
            pn.Row(self._table, self._record, sizing_mode="stretch_width"),
            self._llm_box,
            sizing_mode="stretch_width",
        )


APP_NAME = "events"


def build(run: Path, extra: dict[str, str], live: Any = None) -> RunEventsExplorer:
    """The explorer for ``run``; served, its cycle and kind live in the URL (shareable links)."""
    view = RunEventsExplorer(run=str(run))
    if pn.state.location is not None:
        pn.state.location.sync(view, {"run_name": "run", "cycle": "cycle", "kind": "kind"})
    return view


EXPORT_MAX_RUNS = 24  # runs below a directory exported with their own events section
EXPORT_MAX_STATES = 40  # pre-computed cycle states per timeline (keeps the file small)


def export_sections(run: Path) -> list[Section]:
    """Static report part: the directory's own events (timeline with a pre-computed slider over
    cycles, and counts); for an experiment directory also a table of its runs, each linking to
    its own events section."""
    runs = runs_in(run)
    sections = _run_sections(runs[THIS_DIRECTORY], "Run events") if THIS_DIRECTORY in runs else []
    below = {n: p for n, p in runs.items() if n != THIS_DIRECTORY}
    if not below:
        return sections
    shown = dict(list(below.items())[:EXPORT_MAX_RUNS])
    anchors = {n: anchor_id(f"events-{n}") for n in shown}
    table = runs_table(below)
    rows = [[str(v) for v in r] for r in table.itertuples(index=False)]
    text = f"{len(below)} runs in this directory" + (
        f" (the first {len(shown)} have their events below)" if len(shown) < len(below) else ""
    )
    sections.append(
        Section(
            "Runs in this directory",
            text + "; click a run for its events.",
            [],
            Table(list(table.columns), rows, tuple(anchors.get(n) for n in below)),
            anchor="runs",
        )
    )
    for n, p in shown.items():
        sections.extend(_run_sections(p, f"Run events · {n}", anchor=anchors[n]))
    return sections


def _run_sections(run: Path, title: str, anchor: str | None = None) -> list[Section]:
    """One run's events section (and its LLM calls section when it called a model)."""
    tail = RunTail(run)
    tail.poll()
    df = tail.frame()
    cycles = sorted({int(c) for c in df["cycle"].dropna()})
    if len(cycles) > EXPORT_MAX_STATES:
        cycles = [
            cycles[round(i * (len(cycles) - 1) / (EXPORT_MAX_STATES - 1))] for i in range(EXPORT_MAX_STATES)
        ]
    figs = [
        plot_event_timeline(events_info(df, upto_cycle=c), title=f"events up to cycle {c}") for c in cycles
    ]
    timeline = (
        figure_with_states(figs, [str(c) for c in cycles], prefix="up to cycle ")
        if figs
        else plot_event_timeline(events_info(df))
    )
    text = f"{len(df)} events of {df['kind'].nunique()} kinds over {len(cycles)} cycles · {run}"
    calls = llm_calls_section(run)  # only when the run called a model
    return [Section(title, text, [timeline, plot_event_counts(events_info(df))], anchor=anchor)] + (
        [calls] if calls is not None else []
    )


if pn.state.served:
    served_app(build)
