"""Plain rows read back from an RSIAgent run's events, for reports, dashboards and notebooks.

Pure functions of the event list (``run.events()``): the committed ledger, waves, snapshots, the
recursion curve, evaluation scores and audit rejects. Only :func:`ledger_rows` and
:func:`wave_rows` drop the work of abandoned (never committed) waves; the others show every event.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rsi_workbench.memory.ledger import (
    AUDIT_REJECT,
    CURVE_POINT,
    EVALUATION,
    HANDOFF,
    OUTCOME,
    PHASE_END,
    RESULT,
    WAVE_COMMITTED,
)
from rsi_workbench.memory.snapshots import SNAPSHOT_EVENT
from rsi_workbench.records import Event


def _committed_keys(events: Sequence[Event]) -> set[int]:
    return {int(e.payload["wave_key"]) for e in events if e.kind == WAVE_COMMITTED}


def ledger_rows(events: Sequence[Event]) -> list[dict[str, Any]]:
    """One row per committed project (the ledger): indices, outcome, cycles, memory before/after, file counts."""
    keys = _committed_keys(events)
    rows = []
    for e in events:
        if e.kind != OUTCOME or int(e.payload["wave_key"]) not in keys:
            continue
        p = e.payload
        rows.append(
            {
                **{
                    k: p.get(k)
                    for k in ("wave", "phase", "unit", "project_index", "project_id", "instruction")
                },
                **{k: p.get(k) for k in ("is_target", "terminal_outcome", "verdict", "verification_cycles")},
                "memory_before": p["memory_before"],
                "memory_after": p["memory_after"],
                "n_files_after": p["memory_after_stats"]["n_files"],
                "n_bytes_after": p["memory_after_stats"]["n_bytes"],
                **{f"n_{k}": v for k, v in p["n_files_changed"].items()},
                "n_audit_rejects": p.get("n_audit_rejects", 0),
                "evidence": (p["verifier_reports"][-1]["evidence"] if p["verifier_reports"] else []),
            }
        )
    return rows


def wave_rows(events: Sequence[Event]) -> list[dict[str, Any]]:
    """One row per committed unit (BRS wave, DRS target test, DRS practice wave)."""
    return [dict(e.payload) for e in events if e.kind == WAVE_COMMITTED]


def snapshot_rows(events: Sequence[Event]) -> list[dict[str, Any]]:
    """Every stored snapshot: label, tree hash, files, bytes (and wave / project index when a commit)."""
    return [dict(e.payload) for e in events if e.kind == SNAPSHOT_EVENT]


def curve_rows(events: Sequence[Event]) -> list[dict[str, Any]]:
    """The recursion curve: the official score of each target after each committed wave (last probe wins)."""
    last: dict[tuple[int, str], dict[str, Any]] = {}
    for e in events:
        if e.kind == CURVE_POINT:
            p = e.payload
            last[(int(p["wave"]), str(p["target"]))] = {
                k: p.get(k) for k in ("wave", "phase", "target", "score", "memory")
            }
    return [last[k] for k in sorted(last)]


def evaluation_rows(events: Sequence[Event]) -> list[dict[str, Any]]:
    """The frozen evaluation of the latest freeze: target, seed, score, memory hash, frozen hash."""
    rows: dict[str, dict[str, Any]] = {}
    for e in events:
        if e.kind == EVALUATION:
            rows[e.payload["target"]] = {
                k: e.payload.get(k) for k in ("target", "seed", "score", "status", "memory", "frozen")
            }
    return list(rows.values())


def audit_reject_rows(events: Sequence[Event]) -> list[dict[str, Any]]:
    """Host-side only: every memory file (or failure summary) the shingle audit rejected."""
    return [dict(e.payload) for e in events if e.kind == AUDIT_REJECT]


def handoff_rows(events: Sequence[Event]) -> list[dict[str, Any]]:
    """Every curriculum turn: wave, phase, ok, decision or the reason it failed."""
    return [dict(e.payload) for e in events if e.kind == HANDOFF]


def phase_end_rows(events: Sequence[Event]) -> list[dict[str, Any]]:
    return [dict(e.payload) for e in events if e.kind == PHASE_END]


def result_payload(events: Sequence[Event]) -> dict[str, Any] | None:
    """The recorded :class:`RsiAgentResult` (as JSON) of a finished run, else None."""
    done = [e for e in events if e.kind == RESULT]
    return dict(done[-1].payload) if done else None
