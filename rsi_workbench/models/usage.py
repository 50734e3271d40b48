"""Model calls of a run as rows (prompt, samples, tokens, latency, role) and token totals per role:
the data behind an LLM-calls view and a report's token line (``rsi-workbench models calls RUN``)."""

from __future__ import annotations

from typing import Any

from rsi_workbench.models.record import EVENT_KIND
from rsi_workbench.records.run import Run


def call_rows(run: Run, role: str | None = None, *, with_text: bool = True) -> list[dict[str, Any]]:
    """One row per recorded model call (in log order), optionally only one role's; with the last
    prompt message and the sampled texts read from the call's artifacts when ``with_text``."""
    rows = []
    for ev in run.events(EVENT_KIND):
        p = ev.payload
        if role is not None and p.get("role") != role:
            continue
        row = {
            "seq": ev.seq,
            "call": p["call"],
            "role": p.get("role", ""),
            "model": p["model"],
            "backend": p["backend"],
            "ordinal": p["ordinal"],
            "prompt_tokens": p["prompt_tokens"],
            "completion_tokens": p["completion_tokens"],
            "latency_s": p["latency_s"],
            "truncated_tokens": p.get("truncated_tokens", 0),
            "finish_reasons": p.get("finish_reasons", []),
        }
        if with_text:
            req = run.artifacts.get_json(p["request"])
            resp = run.artifacts.get_json(p["response"])
            msgs = req.get("messages")
            row["prompt"] = msgs[-1]["content"] if msgs else req.get("prompt", "")
            row["samples"] = resp.get("texts") or resp.get("meta", {}).get("scores", [])
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
