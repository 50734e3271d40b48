"""Finished child runs a parent relies on, recorded and verified so that a child cannot shrink silently.

An experiment directory (the parent) holds one run per (method, seed), arm or generation (its
children) and records each one's completion as an event (``run_finished``, ``arm_finished``, ...).
A report reads the children's logs and a resume skips every child recorded as finished, so a child
log cut short or rewritten afterwards would be reported from fewer events, or never run again,
without a word. The parent therefore records, in that event's payload under ``child_runs``, each
child's event count and the digest of its decoded events (:meth:`Run.fingerprint`; compaction does
not change either), and ``rsi-workbench report`` / ``resume`` refuse a child that no longer matches
(:class:`ChildRunChanged`, exit status 2, naming the child and both fingerprints).

A child shared by several finished children and appended to after each one (a seed's record of
model calls) is recorded with ``grows``: then only the events it had when recorded must be there,
unchanged. Finished events written before fingerprints existed carry no ``child_runs``: their
children open as before, counted as not verified (:attr:`ChildCheck.unverified`).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from rsi_workbench.records.events import Event, EventLogError, iter_events, log_exists
from rsi_workbench.records.run import EVENTS_FILE, Run, RunError, events_digest

CHILD_RUNS = "child_runs"  # payload field of a parent's event: the fingerprints of the child runs it finished


class ChildRunChanged(RunError):
    """A child run's log no longer matches the fingerprint its parent recorded when it finished."""


@dataclasses.dataclass
class ChildCheck:
    """What :func:`verify_children` checked: the child runs verified (each once), and the parent's
    finished events (``"<parent>: <kind> seq <n>"``) recorded before fingerprints existed."""

    verified: list[Path] = dataclasses.field(default_factory=list)
    unverified: list[str] = dataclasses.field(default_factory=list)


def _dir(run: Run | str | os.PathLike[str]) -> Path:
    return run.path if isinstance(run, Run) else Path(run)


def _rel(parent: Path, child: Path) -> str:
    """``child`` relative to ``parent`` when it lies below it (the experiment directory can move)."""
    try:
        return Path(os.path.abspath(child)).relative_to(os.path.abspath(parent)).as_posix()
    except ValueError:
        return str(Path(os.path.abspath(child)))


def child_record(
    parent: Run | str | os.PathLike[str], child: Run | str | os.PathLike[str], *, grows: bool = False
) -> dict[str, Any]:
    """The fingerprint of a finished ``child`` run as its ``parent`` records it: ``path`` (relative to
    the parent directory), ``events`` (count) and ``sha256`` (of the decoded events); ``grows`` for a
    child that later finished siblings keep appending to (only this prefix is then checked)."""
    child_dir = _dir(child)
    count, digest = child.fingerprint() if isinstance(child, Run) else fingerprint(child_dir)
    rec: dict[str, Any] = {"path": _rel(_dir(parent), child_dir), "events": count, "sha256": digest}
    if grows:
        rec["grows"] = True
    return rec


def child_runs(
    parent: Run | str | os.PathLike[str],
    *children: Run | str | os.PathLike[str],
    grows: Iterable[Run | str | os.PathLike[str]] = (),
) -> dict[str, list[dict[str, Any]]]:
    """``{"child_runs": [...]}`` to merge into the payload of the parent's finished event: one
    :func:`child_record` per child (none: the event finished no child run, e.g. events kept inline)."""
    recs = [child_record(parent, c) for c in children]
    recs += [child_record(parent, c, grows=True) for c in grows]
    return {CHILD_RUNS: recs}


def fingerprint(run_dir: str | os.PathLike[str]) -> tuple[int, str]:
    """(event count, digest) of the run at ``run_dir``, plain or compacted (see :meth:`Run.fingerprint`)."""
    evs = list(iter_events(Path(run_dir) / EVENTS_FILE))
    return len(evs), events_digest(evs)


def _short(d: str) -> str:
    return d[:16]


def _found(child_dir: Path, cache: dict[Path, list[Event]]) -> list[Event]:
    key = Path(os.path.abspath(child_dir))
    if key not in cache:
        if not log_exists(child_dir / EVENTS_FILE):
            cache[key] = []
        else:
            cache[key] = list(iter_events(child_dir / EVENTS_FILE))
    return cache[key]


def verify_child(
    parent: Run | str | os.PathLike[str],
    child: Mapping[str, Any],
    *,
    where: str = "",
    _cache: dict[Path, list[Event]] | None = None,
) -> Path:
    """Check one recorded child (a :func:`child_record`) against its log now; returns its directory.

    Raises :class:`ChildRunChanged` naming the child, the parent event (``where``) and the recorded
    and found counts and digests when the log has fewer or other events (for a ``grows`` child:
    when its first recorded events are not all there unchanged), or none at all."""
    parent_dir = _dir(parent)
    child_dir = parent_dir / str(child["path"])
    n, digest = int(child["events"]), str(child["sha256"])
    grows = bool(child.get("grows", False))
    try:
        evs = _found(child_dir, {} if _cache is None else _cache)
    except EventLogError as e:
        raise ChildRunChanged(
            f"{child_dir}: child run of {parent_dir}{where} cannot be read ({e}); it was recorded as "
            f"finished with {n} events (sha256 {_short(digest)}). Restore its log from a copy or rerun "
            "the experiment in a new directory."
        ) from e
    got = events_digest(evs[:n] if grows else evs)
    if (len(evs) >= n if grows else len(evs) == n) and got == digest:
        return child_dir
    if not evs:
        found = "no event log" if not log_exists(child_dir / EVENTS_FILE) else "0 events"
    elif grows:
        found = f"{len(evs)} events, the first {min(n, len(evs))} with sha256 {_short(got)}"
    else:
        found = f"{len(evs)} events (sha256 {_short(got)})"
    if not log_exists(child_dir / EVENTS_FILE):
        what = "removed"
    elif len(evs) < n:
        what = "truncated"
    elif len(evs) > n and events_digest(evs[:n]) == digest:
        what = "appended to"
    else:
        what = "rewritten"
    raise ChildRunChanged(
        f"{child_dir}: child run no longer matches what {parent_dir} recorded when it finished{where}: "
        f"recorded {n} events{' (a prefix of a growing record)' if grows else ''} (sha256 {_short(digest)}), "
        f"found {found}; its log was {what} after it finished, so a report would be read from other "
        "events and a resume would not run it again. Restore the child's events.jsonl (or .gz) from a "
        "copy, or rerun the experiment in a new directory."
    )


def verify_children(parent: Run | str | os.PathLike[str], kinds: Iterable[str] = ()) -> ChildCheck:
    """Verify every child run the parent's events record (``child_runs``), and theirs in turn.

    ``kinds``: the parent's event kinds that finish a child run; those without ``child_runs`` (written
    before fingerprints existed) are listed in :attr:`ChildCheck.unverified` instead of refused.
    Raises :class:`ChildRunChanged` for the first child that no longer matches."""
    parent_dir = _dir(parent)
    check = ChildCheck()
    kinds = set(kinds)
    cache: dict[Path, list[Event]] = {}
    seen = {Path(os.path.abspath(parent_dir))}
    todo = [parent_dir]
    while todo:
        here = todo.pop(0)
        if here == parent_dir:
            evs = list(iter_events(here / EVENTS_FILE))
        else:  # read once while verifying it; dropped now (only shared records are looked up again)
            evs = _found(here, cache)
            cache.pop(Path(os.path.abspath(here)), None)
        for e in evs:
            recs = e.payload.get(CHILD_RUNS)
            if recs is None:
                if here == parent_dir and e.kind in kinds:
                    check.unverified.append(f"{parent_dir}: {e.kind} seq {e.seq}")
                continue
            for rec in recs:
                d = verify_child(here, rec, where=f" ({e.kind} seq {e.seq})", _cache=cache)
                key = Path(os.path.abspath(d))
                if key not in seen:
                    seen.add(key)
                    check.verified.append(d)
                    todo.append(d)
    return check


__all__ = [
    "CHILD_RUNS",
    "ChildCheck",
    "ChildRunChanged",
    "child_record",
    "child_runs",
    "fingerprint",
    "verify_child",
    "verify_children",
]
