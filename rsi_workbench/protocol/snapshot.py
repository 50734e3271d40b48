"""Cycle snapshots as a chain: what a resumed loop needs (task states, finished tasks, the retained
components' artifacts), stored without repeating what has not changed.

At the end of cycle k the loop records its snapshot in the ``cycle_finished`` event, either

- ``"snapshot": <sha256>`` — a full snapshot artifact (the only form before snapshot chains, so old
  runs load unchanged), written for the first cycle, whenever the change would be large
  (> :data:`MAX_DELTA_BYTES` of JSON) and at least every :data:`FULL_EVERY` cycles; or
- ``"snapshot_delta": {"base_cycle": k-1, "changes": ...}`` — only what changed since cycle k−1's
  snapshot (:func:`json_delta`; an append to a list stores the appended tail), inside the event.

A resumed loop loads the last full snapshot and applies the deltas after it (:func:`restore`), which
gives exactly the dictionary the full artifact would have held. A reaction campaign's state grows
by one observation per cycle, so a 40-cycle run stores two full snapshots instead of forty.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from rsi_workbench.records import Event
from rsi_workbench.records.artifacts import ArtifactStore

FULL_EVERY = 32
"""A full snapshot at least every this many cycles, so a chain never grows without bound."""
MAX_DELTA_BYTES = 4096
"""A change larger than this (JSON bytes) is stored as a full snapshot artifact instead."""


def normalized(obj: Any) -> Any:
    """``obj`` as the artifact store would give it back (sorted keys, tuples as lists, JSON floats)."""
    return json.loads(json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str))


def _canonical(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"))


def json_delta(old: Any, new: Any) -> dict[str, Any] | None:
    """What turns ``old`` into ``new`` (both JSON values); ``None`` when they are equal.

    ``{"set": v}`` replaces a value; ``{"extend": tail}`` appends to a list whose old value is a
    prefix of the new one; ``{"dict": {key: delta}, "drop": [keys]}`` changes a mapping key by key.
    """
    if _canonical(old) == _canonical(new):
        return None
    if isinstance(old, dict) and isinstance(new, dict):
        changed = {}
        for key, value in new.items():
            sub = json_delta(old[key], value) if key in old else {"set": value}
            if sub is not None:
                changed[key] = sub
        out: dict[str, Any] = {"dict": changed}
        dropped = [key for key in old if key not in new]
        if dropped:
            out["drop"] = dropped
        return out
    if (
        isinstance(old, list)
        and isinstance(new, list)
        and len(new) > len(old)
        and _canonical(new[: len(old)]) == _canonical(old)
    ):
        return {"extend": new[len(old) :]}
    return {"set": new}


def apply_delta(old: Any, delta: dict[str, Any] | None) -> Any:
    """The inverse of :func:`json_delta`: ``apply_delta(old, json_delta(old, new)) == new``."""
    if delta is None:
        return old
    if "set" in delta:
        return delta["set"]
    if "extend" in delta:
        if not isinstance(old, list):
            raise ValueError(f"snapshot delta extends a {type(old).__name__}, not a list")
        return [*old, *delta["extend"]]
    if not isinstance(old, dict):
        raise ValueError(f"snapshot delta changes keys of a {type(old).__name__}, not a mapping")
    out = {k: v for k, v in old.items() if k not in delta.get("drop", ())}
    for key, sub in delta["dict"].items():
        out[key] = apply_delta(out.get(key), sub)
    return out


class SnapshotChain:
    """The writer's side of the chain: the previous snapshot and the number of deltas since a full one."""

    def __init__(self, artifacts: ArtifactStore, previous: Any = None, since_full: int = 0):
        self.artifacts, self.previous, self.since_full = artifacts, previous, since_full

    def store(self, snapshot: dict[str, Any], cycle: int) -> dict[str, Any]:
        """Store cycle ``cycle``'s snapshot; returns the ``cycle_finished`` payload fields that refer to it."""
        snap = normalized(snapshot)
        ref: dict[str, Any] | None = None
        if self.previous is not None and self.since_full + 1 < FULL_EVERY:
            changes = json_delta(self.previous, snap)
            if len(json.dumps(changes, separators=(",", ":"))) <= MAX_DELTA_BYTES:
                ref = {"snapshot_delta": {"base_cycle": cycle - 1, "changes": changes}}
                self.since_full += 1
        if ref is None:
            ref = {"snapshot": self.artifacts.put_json(snapshot, name=f"snapshot-cycle{cycle}.json")}
            self.since_full = 0
        self.previous = snap
        return ref


def restore(artifacts: ArtifactStore, finished: Sequence[Event]) -> tuple[dict[str, Any], SnapshotChain]:
    """The last snapshot of a run from its (effective) ``cycle_finished`` events, oldest first: the
    last full snapshot artifact with the deltas after it applied in order; and the chain to continue."""
    last_full = max(i for i, e in enumerate(finished) if "snapshot" in e.payload)
    snap = artifacts.get_json(finished[last_full].payload["snapshot"])
    for e in finished[last_full + 1 :]:
        delta = e.payload["snapshot_delta"]
        if delta["base_cycle"] != snap["cycle"]:
            raise ValueError(
                f"snapshot chain broken: cycle {e.cycle}'s delta is based on cycle {delta['base_cycle']}, "
                f"but the snapshot before it is cycle {snap['cycle']}"
            )
        snap = apply_delta(snap, delta["changes"])
    snap = normalized(snap)
    return snap, SnapshotChain(artifacts, snap, len(finished) - 1 - last_full)
