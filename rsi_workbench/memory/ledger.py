"""The ledger: per-project outcome records and committed wave boundaries, read back from events.

Every unit of learning (a BRS wave, a DRS target test, a DRS practice wave) is bracketed by a
``memory_wave_started`` event (whose ``seq`` is the unit's ``wave_key``) and, once every branch is
committed, a ``memory_wave_committed`` event. Outcome records (``memory_outcome``) carry the key of
the unit they belong to. A run resumes only from a fully committed boundary: records of a unit
that never committed are abandoned and the unit runs again. :func:`read_ledger` refuses a ledger
that is not contiguous (wave numbers, project indices) or whose ``memory_before`` differs from the
previous ``memory_after``, naming the first mismatch (:class:`LedgerError`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from rsi_workbench.memory.roles import OutcomeSummary
from rsi_workbench.records import Event

RUN_STARTED = "memory_run_started"
RESUMED = "memory_resumed"
WAVE_STARTED = "memory_wave_started"
HANDOFF = "memory_handoff"
BRANCH = "memory_branch"
INFRA = "memory_infra"
AUDIT_REJECT = "memory_audit_reject"
OUTCOME = "memory_outcome"
WAVE_COMMITTED = "memory_wave_committed"
PHASE_END = "memory_phase_end"
CURVE_POINT = "memory_curve_point"
FROZEN = "memory_frozen"
EVALUATION = "memory_evaluation"
RESULT = "memory_result"
STOPPED = "memory_run_stopped"


class LedgerError(RuntimeError):
    """The recorded ledger cannot be resumed from: it names the first mismatch."""


def _short(h: Any) -> str:
    return str(h)[:12]


@dataclass
class LedgerState:
    """What the committed part of a run's events says: the state a resume continues from."""

    initial_memory: str
    memory: str  # tree hash after the last committed unit
    committed: list[dict[str, Any]] = field(default_factory=list)  # memory_wave_committed payloads, in order
    records: list[dict[str, Any]] = field(default_factory=list)  # memory_outcome payloads of committed units
    abandoned_keys: list[int] = field(default_factory=list)  # wave keys started but never committed
    pending_handoffs: dict[int, dict[str, Any]] = field(default_factory=dict)  # wave -> last ok handoff

    @property
    def last_wave(self) -> int:
        return int(self.committed[-1]["wave"]) if self.committed else 0

    @property
    def next_project_index(self) -> int:
        return int(self.records[-1]["project_index"]) + 1 if self.records else 1

    def summaries(self) -> list[OutcomeSummary]:
        return [summary_of(r) for r in self.records]


def summary_of(record: dict[str, Any]) -> OutcomeSummary:
    """What the curriculum may see of an outcome record: ids, instruction, verdict (no hidden score)."""
    reports = record.get("verifier_reports") or []
    return OutcomeSummary(
        project_id=record["project_id"],
        instruction=record["instruction"],
        verdict=record.get("verdict"),
        phase=record["phase"],
        wave=int(record["wave"]),
        outcome=record["terminal_outcome"],
        evidence=tuple(reports[-1]["evidence"]) if reports else (),
        is_target=bool(record.get("is_target")),
    )


def _check_unit(
    c: dict[str, Any], recs: list[dict[str, Any]], chain: str, next_index: int
) -> tuple[str, int]:
    """Check one committed unit against the chain so far; return the chain and next index after it."""
    w = c["wave"]
    if c.get("memory_before") != chain:
        raise LedgerError(
            f"wave {w}: memory_before {_short(c.get('memory_before'))} != previous memory_after {_short(chain)}"
        )
    if len(recs) != int(c.get("n_records", -1)):
        raise LedgerError(
            f"wave {w}: {len(recs)} outcome records in the log, its commit says {c.get('n_records')}"
        )
    for r in recs:
        who = f"wave {w} project {r.get('project_index')} ({r.get('project_id')})"
        if r.get("wave") != w:
            raise LedgerError(f"{who}: recorded under wave {r.get('wave')}")
        if r.get("project_index") != next_index:
            raise LedgerError(
                f"{who}: project index {r.get('project_index')} where {next_index} was expected"
            )
        if r.get("memory_before") != chain:
            raise LedgerError(
                f"{who}: memory_before {_short(r.get('memory_before'))} != previous memory_after {_short(chain)}"
            )
        chain, next_index = r["memory_after"], next_index + 1
    if c.get("memory_after") != chain:
        raise LedgerError(
            f"wave {w}: memory_after {_short(c.get('memory_after'))} != its last record's {_short(chain)}"
        )
    return chain, next_index


def read_ledger(events: Sequence[Event]) -> LedgerState:
    """Rebuild and check the committed ledger of a run from its events (see the module docstring)."""
    started = [e for e in events if e.kind == RUN_STARTED]
    if not started:
        raise LedgerError("no memory_run_started event: not an RSIAgent run")
    initial = str(started[0].payload["initial_memory"])
    committed = [e.payload for e in events if e.kind == WAVE_COMMITTED]
    keys = {int(c["wave_key"]) for c in committed}
    by_key: dict[int, list[dict[str, Any]]] = {}
    for e in events:
        if e.kind == OUTCOME:
            by_key.setdefault(int(e.payload["wave_key"]), []).append(e.payload)
    wave_starts = [e for e in events if e.kind == WAVE_STARTED]
    unknown = [c["wave_key"] for c in committed if c["wave_key"] not in {e.seq for e in wave_starts}]
    if unknown:
        raise LedgerError(f"wave commit with wave_key {unknown[0]} has no memory_wave_started event")
    state = LedgerState(initial_memory=initial, memory=initial)
    chain, next_index = initial, 1
    for i, c in enumerate(committed, 1):
        if c.get("wave") != i:
            raise LedgerError(
                f"committed waves are not contiguous: wave {c.get('wave')} where wave {i} was expected"
            )
        chain, next_index = _check_unit(c, by_key.get(int(c["wave_key"]), []), chain, next_index)
        state.records.extend(by_key.get(int(c["wave_key"]), []))
    state.committed, state.memory = list(committed), chain
    state.abandoned_keys = [e.seq for e in wave_starts if e.seq not in keys]
    last_commit_seq = max((e.seq for e in events if e.kind == WAVE_COMMITTED), default=-1)
    for e in events:
        if e.kind == HANDOFF and e.seq > last_commit_seq and e.payload.get("ok"):
            state.pending_handoffs[int(e.payload["wave"])] = e.payload
    return state
