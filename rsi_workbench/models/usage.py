"""Model calls of a run as rows (prompt, samples, tokens, latency, role) and token totals per role:
the data behind the run-events dashboard's LLM-calls view, every experiment report's ``model calls``
lines (:func:`with_model_calls`) and ``rsi-workbench models calls RUN``.

A live call is a ``model_call`` event; a recorded call answered again (a resumed or ``replay: true``
run) is a ``model_replay`` event that points at the same artifacts and is charged nothing.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rsi_workbench.models.record import EVENT_KIND, REPLAY_KIND
from rsi_workbench.records.artifacts import ArtifactStore
from rsi_workbench.records.events import compressed_path, log_bytes
from rsi_workbench.records.run import ARTIFACTS_DIR, EVENTS_FILE, Run

KINDS = (EVENT_KIND, REPLAY_KIND)


def call_row(seq: int, cycle: int | None, kind: str, p: dict[str, Any]) -> dict[str, Any]:
    """The table row of one ``model_call`` or ``model_replay`` event (no texts)."""
    return {
        "seq": seq,
        "cycle": cycle,
        "source": "live" if kind == EVENT_KIND else "replayed",
        "call": p["call"],
        "role": p.get("role", ""),
        "model": p["model"],
        "backend": p["backend"],
        "ordinal": p["ordinal"],
        "prompt_tokens": int(p.get("prompt_tokens") or 0),
        "completion_tokens": int(p.get("completion_tokens") or 0),
        "latency_s": float(p.get("latency_s") or 0.0),  # a replay takes no model time
        "truncated_tokens": p.get("truncated_tokens", 0),
        "finish_reasons": list(p.get("finish_reasons") or []),
        "request": p.get("request"),
        "response": p.get("response"),
    }


def call_detail(artifacts: ArtifactStore, row: dict[str, Any]) -> dict[str, Any]:
    """What a call asked and got, from its artifacts: ``messages`` (chat) or ``prompt`` (complete,
    score), ``continuations`` (score), ``samples`` (texts, or scores), ``finish_reasons``, ``params``."""
    req = artifacts.get_json(row["request"])
    resp = artifacts.get_json(row["response"])
    scores = resp.get("meta", {}).get("scores")
    return {
        "messages": req.get("messages") or [],
        "prompt": req.get("prompt", ""),
        "continuations": req.get("continuations") or [],
        "samples": resp.get("texts") or (scores if scores is not None else []),
        "finish_reasons": resp.get("finish_reasons") or [],
        "params": req.get("params", {}),
    }


def call_rows(
    run: Run, role: str | None = None, *, with_text: bool = True, replays: bool = False
) -> list[dict[str, Any]]:
    """One row per recorded model call (in log order), optionally only one role's, with replays when
    ``replays``; with the last prompt message and the sampled texts read from the call's artifacts
    when ``with_text``."""
    rows = []
    for ev in run.events():
        if ev.kind != EVENT_KIND and not (replays and ev.kind == REPLAY_KIND):
            continue
        if role is not None and ev.payload.get("role") != role:
            continue
        row = call_row(ev.seq, ev.cycle, ev.kind, ev.payload)
        if with_text:
            d = call_detail(run.artifacts, row)
            row["prompt"] = d["messages"][-1]["content"] if d["messages"] else d["prompt"]
            row["samples"] = d["samples"]
        rows.append(row)
    return rows


def token_totals(run: Run) -> dict[str, dict[str, float]]:
    """Calls, prompt and completion tokens and latency summed per role (and ``all``), live calls
    only (replayed calls are not re-recorded)."""
    out: dict[str, dict[str, float]] = {}
    for r in call_rows(run, with_text=False):
        for key in (r["role"] or "-", "all"):
            t = out.setdefault(
                key, {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "latency_s": 0.0}
            )
            t["calls"] += 1
            t["prompt_tokens"] += r["prompt_tokens"]
            t["completion_tokens"] += r["completion_tokens"]
            t["latency_s"] += r["latency_s"]
    return out


# -- totals of a run or an experiment tree -------------------------------------------------------
@dataclass
class Usage:
    """Model calls summed: live calls with their tokens and model time, and replayed calls (their
    recorded tokens, charged nothing)."""

    live: int = 0
    replayed: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    replayed_tokens: int = 0
    by_role: dict[str, Usage] = field(default_factory=dict)

    @property
    def calls(self) -> int:
        return self.live + self.replayed

    def add(self, kind: str, p: dict[str, Any]) -> None:
        tokens_in, tokens_out = int(p.get("prompt_tokens") or 0), int(p.get("completion_tokens") or 0)
        if kind == EVENT_KIND:
            self.live += 1
            self.prompt_tokens += tokens_in
            self.completion_tokens += tokens_out
            self.latency_s += float(p.get("latency_s") or 0.0)
        else:
            self.replayed += 1
            self.replayed_tokens += tokens_in + tokens_out


def run_dirs(path: str | Path) -> Iterator[Path]:
    """``path`` and every run directory below it (those holding an event log, plain or compacted),
    artifacts skipped."""
    for root, dirs, files in os.walk(path):
        dirs[:] = sorted(d for d in dirs if d != ARTIFACTS_DIR)
        if EVENTS_FILE in files or compressed_path(EVENTS_FILE).name in files:
            yield Path(root)


def _model_events(log: Path) -> Iterable[tuple[str, dict[str, Any]]]:
    """(kind, payload) of the model events of one log; a cheap byte scan first, since most logs of
    most experiments hold none (a torn last line is skipped)."""
    data = log_bytes(log)  # plain or compacted
    if b'"kind":"model_' not in data:
        return
    for line in data.splitlines():
        if b'"kind":"model_call"' not in line and b'"kind":"model_replay"' not in line:
            continue
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if obj.get("kind") in KINDS:
            yield obj["kind"], obj.get("payload") or {}


def sum_usage(events: Iterable[tuple[str, dict[str, Any]]]) -> Usage:
    """(kind, payload) of ``model_call``/``model_replay`` events summed, in all and by role."""
    total = Usage()
    for kind, p in events:
        total.add(kind, p)
        total.by_role.setdefault(p.get("role") or "-", Usage()).add(kind, p)
    return total


def model_usage(path: str | Path) -> Usage:
    """The model calls of a run, or of every run of an experiment tree, summed and by role."""
    return sum_usage(ev for d in run_dirs(path) for ev in _model_events(d / EVENTS_FILE))


def usage_lines(u: Usage) -> list[str]:
    """``model calls: none``, or the totals and one line per role."""
    if not u.calls:
        return ["model calls: none"]

    def part(x: Usage) -> str:
        s = (
            f"{x.live} live ({x.prompt_tokens} tokens in + {x.completion_tokens} out = "
            f"{x.prompt_tokens + x.completion_tokens}, {x.latency_s:.1f} s)"
        )
        return s + (
            f", {x.replayed} replayed ({x.replayed_tokens} tokens, not charged)" if x.replayed else ""
        )

    width = max(len(r) for r in u.by_role)
    return [f"model calls: {part(u)}"] + [f"  {r:<{width}}  {part(x)}" for r, x in sorted(u.by_role.items())]


def with_model_calls(text: str, path: str | Path) -> str:
    """A report's text with the model-call totals of ``path`` (a run or an experiment tree) appended
    after a blank line; unchanged when no model was called, so reports of model-free runs stay as
    they were (``rsi-workbench models calls RUN`` says ``none`` explicitly)."""
    u = model_usage(path)
    return text if not u.calls else text.rstrip("\n") + "\n\n" + "\n".join(usage_lines(u))


def format_calls(rows: list[dict[str, Any]], width: int = 60) -> str:
    """A plain-text table of call rows (prompt and first sample cut to ``width`` characters)."""

    def cut(s: Any) -> str:
        s = str(s).replace("\n", " ")
        return s if len(s) <= width else s[: width - 1] + "…"

    lines = [f"{'seq':>5} {'role':<12} {'call':<5} {'in':>6} {'out':>5} {'s':>6}  prompt → first sample"]
    for r in rows:
        first = r.get("samples", [""])[0] if r.get("samples") else ""
        lines.append(
            f"{r['seq']:>5} {r['role'] or '-':<12} {r['call']:<5} {r['prompt_tokens']:>6} "
            f"{r['completion_tokens']:>5} {r['latency_s']:>6.2f}  {cut(r.get('prompt', ''))} → {cut(first)}"
        )
    return "\n".join(lines)


def cost_lines(run: Run) -> list[str]:
    """The model calls' cost in USD (``cost_usd`` of each live call, where the model block has a
    price) and the ``usd`` budget (opened, spent, left; the lanes it stopped)."""
    costs = [float(e.payload["cost_usd"]) for e in run.events("model_call") if "cost_usd" in e.payload]
    opened = [e.payload["budgets"] for e in run.events("budget_opened") if "usd" in e.payload["budgets"]]
    if not costs and not opened:
        return []
    line = f"model cost: ${sum(costs):.4f} over {len(costs)} live call(s)"
    if opened:
        budget = float(opened[0]["usd"])
        spent = sum(
            float(e.payload["amount"]) for e in run.events("budget_spent") if e.payload["budget"] == "usd"
        )
        line += f"; usd budget ${budget:.4f}: spent ${spent:.4f}, left ${budget - spent:.4f}"
        stopped = run.events("budget_exhausted")
        if stopped:
            line += f"; spent out — {len(stopped)} lane(s) stopped early"
    return ["", line]
