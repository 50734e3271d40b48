"""Generic views of any run's event log: a timeline of events and counts per kind and cycle.

Split like ``optuna.visualization``: ``plot_*`` take a run directory (or its unflattened events
frame) and draw :func:`events_info`, the plain data of the events DataFrame of
:func:`rsi_workbench.records.load_events` (``flatten=False``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from rsi_workbench.viz._style import kind_colours
from rsi_workbench.viz.scales import int_axis

if TYPE_CHECKING:
    import pandas as pd
    import plotly.graph_objects as go


class EventsInfo(NamedTuple):
    """What the event views need: one row per event, kinds in first-seen order, and counts."""

    seq: list[int]
    elapsed_s: list[float]  # seconds since the run's first event
    kind: list[str]
    cycle: list[int | None]
    summary: list[str]  # short payload text for hovers and tables
    kinds: list[str]
    counts: dict[str, dict[int, int]]  # kind -> cycle -> number of events (cycle -1 = no cycle)
    cycles: list[int]


def payload_summary(payload: dict[str, Any], limit: int = 160) -> str:
    """One-line JSON of a payload, cut to ``limit`` characters (for hovers and tables)."""
    text = json.dumps(payload, separators=(", ", ": "), default=str, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def events_info(
    events: pd.DataFrame | str | os.PathLike[str], *, upto_cycle: int | None = None
) -> EventsInfo:
    """Plain data for the event views from a run directory or its unflattened events frame
    (:func:`~rsi_workbench.records.load_events` with ``flatten=False``: a ``payload`` column).

    ``upto_cycle`` keeps events of cycles ``<= upto_cycle`` (and events without a cycle), which is
    what scrubbing a finished run through its cycles shows; ``kinds`` always lists every kind of
    the run so figures of different cycles have the same traces.

    ```python
    info = events_info("runs/notebooks/records_smoke", upto_cycle=2)
    info.kinds, info.counts["cycle_started"]
    ```
    """
    if isinstance(events, str | os.PathLike):
        from rsi_workbench.records import load_events

        events = load_events(events, flatten=False)
    df = events
    if upto_cycle is not None and len(df):
        cyc = df["cycle"]
        df = df[cyc.isna() | (cyc.fillna(-1) <= upto_cycle)]
    t0 = float(events["time"].min()) if len(events) else 0.0
    kinds = list(dict.fromkeys(events["kind"]))  # every kind of the run, so traces stay aligned
    counts: dict[str, dict[int, int]] = {k: {} for k in kinds}
    cycles: list[int | None] = []
    for k, c in zip(df["kind"], df["cycle"]):
        ci = None if c is None or c != c else int(c)
        cycles.append(ci)
        key = -1 if ci is None else ci
        counts[k][key] = counts[k].get(key, 0) + 1
    payloads: list[Any] = list(df["payload"]) if "payload" in df else [{}] * len(df)
    return EventsInfo(
        seq=[int(s) for s in df["seq"]],
        elapsed_s=[float(t) - t0 for t in df["time"]],
        kind=list(df["kind"]),
        cycle=cycles,
        summary=[payload_summary(p) for p in payloads],
        kinds=kinds,
        counts=counts,
        cycles=sorted({c for c in cycles if c is not None}),
    )


def _get_events_info(events: pd.DataFrame | str | os.PathLike[str] | EventsInfo) -> EventsInfo:
    return events if isinstance(events, EventsInfo) else events_info(events)


def plot_event_timeline(
    events: pd.DataFrame | str | os.PathLike[str] | EventsInfo, *, title: str = "events"
) -> go.Figure:
    """Each event as a marker: x = sequence number, y = kind; hover shows cycle and payload.

    ``events``: a run directory, its unflattened events frame, or their :func:`events_info`.

    ```python
    plot_event_timeline("runs/notebooks/records_smoke").show()
    ```
    """
    import plotly.graph_objects as go

    info = _get_events_info(events)

    colours = kind_colours(info.kinds)
    fig = go.Figure()
    for k in info.kinds:
        idx = [i for i, kk in enumerate(info.kind) if kk == k]
        fig.add_trace(
            go.Scattergl(
                x=[info.seq[i] for i in idx],
                y=[k] * len(idx),
                mode="markers",
                name=k,
                marker={"color": colours[k], "size": 9, "symbol": "line-ns-open", "line": {"width": 2}},
                customdata=[[info.cycle[i], f"{info.elapsed_s[i]:.2f}", info.summary[i]] for i in idx],
                hovertemplate="seq %{x} · cycle %{customdata[0]} · +%{customdata[1]} s<br>"
                "%{customdata[2]}<extra>%{y}</extra>",
            )
        )
    fig.update_layout(
        title=title,
        xaxis=int_axis(info.seq, title="event seq"),
        yaxis={"categoryorder": "array", "categoryarray": list(reversed(info.kinds))},
        showlegend=False,
        height=max(220, 60 + 34 * len(info.kinds)),
        margin={"l": 10, "r": 10, "t": 40, "b": 40},
        template="plotly_white",
    )
    return fig


def plot_event_counts(
    events: pd.DataFrame | str | os.PathLike[str] | EventsInfo, *, title: str = "events per cycle"
) -> go.Figure:
    """Stacked bars: how many events of each kind every cycle appended (``-`` = outside cycles).

    ``events``: a run directory, its unflattened events frame, or their :func:`events_info`.

    ```python
    plot_event_counts("runs/notebooks/records_smoke").show()
    ```
    """
    import plotly.graph_objects as go

    info = _get_events_info(events)

    colours = kind_colours(info.kinds)
    keys = sorted({c for per in info.counts.values() for c in per})
    labels = ["-" if c < 0 else str(c) for c in keys]
    fig = go.Figure()
    for k in info.kinds:
        fig.add_trace(
            go.Bar(x=labels, y=[info.counts[k].get(c, 0) for c in keys], name=k, marker_color=colours[k])
        )
    totals = [sum(info.counts[k].get(c, 0) for k in info.kinds) for c in keys]
    fig.update_layout(
        barmode="stack",
        title=title,
        xaxis_title="cycle",
        yaxis=int_axis([0, *totals], title="events"),
        xaxis={"type": "category"},
        height=300,
        margin={"l": 10, "r": 10, "t": 40, "b": 40},
        template="plotly_white",
    )
    return fig


THIS_DIRECTORY = "(this directory)"


def runs_in(root: str | Path) -> dict[str, Path]:
    """The runs an events view of ``root`` can open, by name: ``root`` itself (when it has an event
    log, as :data:`THIS_DIRECTORY`) and every run below it (an experiment's ``runs/<method>-seed<s>``,
    ``arms/<arm>``, ``predictors/seed<s>``...), named by their path relative to ``root``."""
    from rsi_workbench.records import has_events, list_runs

    p = Path(root)
    out: dict[str, Path] = {THIS_DIRECTORY: p} if has_events(p) else {}
    for r in list_runs(p):
        if r != p:
            out[r.relative_to(p).as_posix()] = r
    return out


class RunSummary(NamedTuple):
    """One run of a directory, for the runs table: its name, events, cycles and first event kind."""

    name: str
    path: Path
    events: int
    cycles: int
    first_kind: str
    last_kind: str


def run_summary(name: str, path: Path) -> RunSummary:
    """Count a run's whole events and cycles (read once, torn tail ignored)."""
    from rsi_workbench.records import open_log
    from rsi_workbench.records.run import EVENTS_FILE

    n, cycles, first, last = 0, set(), "", ""
    with open_log(path / EVENTS_FILE) as f:
        for line in f:
            if not line.endswith(b"\n"):
                break
            e = json.loads(line)
            n += 1
            first = first or str(e["kind"])
            last = str(e["kind"])
            if e.get("cycle") is not None:
                cycles.add(e["cycle"])
    return RunSummary(name, path, n, len(cycles), first, last)


def runs_table(runs: dict[str, Path]) -> pd.DataFrame:
    """The runs of a directory as a table (``run, events, cycles, first event, last event, path``)."""
    import pandas as pd

    rows = [run_summary(n, p) for n, p in runs.items()]
    return pd.DataFrame(
        [
            {
                "run": r.name,
                "events": r.events,
                "cycles": r.cycles,
                "first event": r.first_kind,
                "last event": r.last_kind,
            }
            for r in rows
        ],
        columns=["run", "events", "cycles", "first event", "last event"],
    )
