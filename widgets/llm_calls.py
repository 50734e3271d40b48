"""LLM-calls view: a run's model calls (role, backend/model, tokens, latency, finish reason, live or
replayed), filtered by role; selecting a call shows its prompt messages and every sample.

Embedded in the run-events dashboard (:mod:`rsi_workbench.widgets.run_events`), which shares its
tail of the event log; usable alone in a notebook (``LLMCallsView(run="runs/<id>")``). The rows come
from the ``model_call`` (live) and ``model_replay`` (answered from the run's records) events; the
texts from the calls' request and response artifacts.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import panel as pn
import param

from rsi_workbench.models.usage import KINDS, Usage, call_detail, call_row, sum_usage, usage_lines
from rsi_workbench.records import Event
from rsi_workbench.records.artifacts import ArtifactStore
from rsi_workbench.records.run import ARTIFACTS_DIR
from rsi_workbench.viz.html import Section
from rsi_workbench.widgets._app import RunTail

ALL_ROLES = "(all roles)"
COLUMNS = ["seq", "role", "call", "model", "in", "out", "latency_s", "finish", "source"]
NO_CALLS = "No model calls in this run."


def _table_row(r: dict[str, Any]) -> dict[str, Any]:
    return {
        "seq": r["seq"],
        "role": r["role"] or "-",
        "call": r["call"],
        "model": f"{r['backend']} · {r['model']}",
        "in": r["prompt_tokens"],
        "out": r["completion_tokens"],
        "latency_s": round(r["latency_s"], 3) if r["source"] == "live" else None,
        "finish": ", ".join(r["finish_reasons"]),
        "source": r["source"],
    }


def _pre(text: Any) -> str:
    return f'<pre style="white-space: pre-wrap; margin: 2px 0 8px 0">{html.escape(str(text))}</pre>'


def detail_html(row: dict[str, Any], d: dict[str, Any]) -> str:
    """The selected call: its header, the prompt messages (or prompt and continuations) and all samples."""
    params = ", ".join(f"{k}={v}" for k, v in d["params"].items())
    parts = [
        f"<div><b>call {row['seq']}</b> · {html.escape(row['role'] or '-')} · {row['call']} · "
        f"{html.escape(row['backend'])} · {html.escape(row['model'])} · {row['source']}</div>"
        + (f"<div><small>{html.escape(params)}</small></div>" if params else "")
    ]
    parts += [f"<div><b>{html.escape(m['role'])}</b>{_pre(m['content'])}</div>" for m in d["messages"]]
    if not d["messages"]:
        parts.append(f"<div><b>prompt</b>{_pre(d['prompt'])}</div>")
    finish = d["finish_reasons"]
    for i, s in enumerate(d["samples"]):
        label = d["continuations"][i] if d["continuations"] else f"sample {i}"
        why = f" ({finish[i]})" if i < len(finish) else ""
        parts.append(f"<div><b>{html.escape(str(label))}{why}</b>{_pre(s)}</div>")
    return "\n".join(parts)


class LLMCallsView(pn.viewable.Viewer):
    """Table of a run's model calls with a role filter; click a row for its prompt and samples."""

    run = param.String(doc="run directory")
    role = param.Selector(default=ALL_ROLES, objects=[ALL_ROLES], doc="show only this role's calls")

    def __init__(self, tail: RunTail | None = None, **params: Any):
        super().__init__(**params)
        if tail is None:
            tail = RunTail(self.run)
            tail.poll()
        self._tail = tail
        self._artifacts = ArtifactStore(Path(self.run) / ARTIFACTS_DIR, create=False)
        self._all: list[dict[str, Any]] = []
        self._shown: list[dict[str, Any]] = []
        self._seq: int | None = None  # the call shown in the detail pane
        self._summary = pn.pane.Markdown(sizing_mode="stretch_width", css_classes=["rsi-llm-summary"])
        self._role_w = pn.widgets.Select.from_param(self.param.role, name="role")
        self._table = pn.widgets.Tabulator(
            sizing_mode="stretch_width",
            height=280,
            selectable=1,
            show_index=False,
            disabled=True,
            pagination="local",
            page_size=50,
        )
        self._detail = pn.pane.HTML(
            "",
            sizing_mode="stretch_width",
            align="start",
            css_classes=["rsi-llm-detail"],
            styles={"overflow": "auto"},
        )
        self._calls = pn.Row(self._table, self._detail, sizing_mode="stretch_width")
        self._layout = pn.Column(self._summary, sizing_mode="stretch_width")
        self._table.param.watch(self._on_select, "selection")
        self.param.watch(self._filter, "role")
        self.refresh()

    # -- data ------------------------------------------------------------------------------------
    @property
    def usage(self) -> Usage:
        """Live and replayed calls and tokens, in all and by role (as reports print them)."""
        return sum_usage((e.kind, e.payload) for e in self._tail.events if e.kind in KINDS)

    @property
    def rows(self) -> list[dict[str, Any]]:
        """The rows the table shows now (the role filter applied)."""
        return [_table_row(r) for r in self._shown]

    def detail(self, seq: int) -> dict[str, Any]:
        """Prompt messages (or prompt), samples, finish reasons and parameters of call event ``seq``."""
        row = next(r for r in self._all if r["seq"] == seq)
        return call_detail(self._artifacts, row)

    # -- updates ---------------------------------------------------------------------------------
    def refresh(self, new: Sequence[Event] | None = None) -> None:
        """Re-read the calls from the tail; the run-events dashboard passes the events that just
        landed, and nothing changes unless a model event is among them (a clicked call stays shown)."""
        if new is not None and not any(e.kind in KINDS for e in new):
            return
        self._all = [
            call_row(e.seq, e.cycle, e.kind, e.payload) for e in self._tail.events if e.kind in KINDS
        ]
        roles = sorted({r["role"] or "-" for r in self._all})
        self.param.role.objects = [ALL_ROLES, *roles]
        if self.role not in self.param.role.objects:
            self.role = ALL_ROLES
        if self._all:
            self._summary.object = "### LLM calls\n```text\n" + "\n".join(usage_lines(self.usage)) + "\n```"
        else:
            self._summary.object = f"### LLM calls\n{NO_CALLS}"
        # a run without calls lays out only the summary (its page builds no table)
        parts = [self._summary, self._role_w, self._calls] if self._all else [self._summary]
        if len(self._layout.objects) != len(parts):
            self._layout.objects = parts
        self._filter()

    def _filter(self, *_: Any) -> None:
        want = None if self.role == ALL_ROLES else self.role
        self._shown = [r for r in self._all if want is None or (r["role"] or "-") == want]
        import pandas as pd

        self._table.value = pd.DataFrame(self.rows, columns=COLUMNS)
        self._detail.object = ""
        seqs = [r["seq"] for r in self._shown]
        if self._shown:  # the first call until a row is clicked
            self.select(seqs.index(self._seq) if self._seq in seqs else 0)

    def _on_select(self, event: Any) -> None:
        if event.new:
            self.select(event.new[0])

    def select(self, i: int) -> str:
        """Show row ``i`` of the table in the detail pane; returns its HTML."""
        row = self._shown[i]
        self._seq = row["seq"]
        self._detail.object = detail_html(row, call_detail(self._artifacts, row))
        return str(self._detail.object)

    def __panel__(self) -> pn.viewable.Viewable:
        return self._layout


def _cut(text: Any, width: int) -> str:
    """One line of at most ``width`` characters, HTML-escaped (plotly tables read tags in cells)."""
    t = str(text).replace("\n", " ")
    return html.escape(t if len(t) <= width else t[: width - 1] + "…")


def export_section(run: Path, limit: int = 500) -> Section | None:
    """Static report part: the totals and a table of the run's model calls (last prompt message and
    first sample cut to 160 characters; the last ``limit`` calls); None when the run has none."""
    import plotly.graph_objects as go

    tail = RunTail(run)
    tail.poll()
    evs = [e for e in tail.events if e.kind in KINDS]
    if not evs:
        return None
    arts = ArtifactStore(Path(run) / ARTIFACTS_DIR, create=False)
    rows = [call_row(e.seq, e.cycle, e.kind, e.payload) for e in evs[-limit:]]
    texts = [call_detail(arts, r) for r in rows]
    cols = {
        **{c: [_table_row(r)[c] for r in rows] for c in COLUMNS},
        "prompt": [_cut(d["messages"][-1]["content"] if d["messages"] else d["prompt"], 160) for d in texts],
        "first sample": [_cut(d["samples"][0] if d["samples"] else "", 160) for d in texts],
    }
    fig = go.Figure(go.Table(header={"values": list(cols)}, cells={"values": list(cols.values())}))
    fig.update_layout(
        title=f"model calls (last {len(rows)} of {len(evs)})", height=200 + 30 * min(len(rows), 20)
    )
    usage = sum_usage((e.kind, e.payload) for e in evs)
    return Section("LLM calls", " · ".join(line.strip() for line in usage_lines(usage)), [fig])
