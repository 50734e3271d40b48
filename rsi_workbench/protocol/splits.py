"""Disjoint data: update data, gate data and the audit set never share an item (asserted), split by
task or, for held-out history, by evenly spaced rounds of every task.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Hashable, Iterable, Sequence
from typing import Any, Literal

from rsi_workbench.protocol.seeds import derive_seed


def digest(obj: Any) -> str:
    """A short stable digest of any JSON-able value (gate-cache keys, data-split items)."""
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()[:16]


class SplitOverlap(AssertionError):
    """Update data, gate data and the audit set share an item."""


def assert_disjoint(**splits: Iterable[Hashable]) -> None:
    """Raise :class:`SplitOverlap` naming both splits and the shared items if any two overlap."""
    sets = {k: set(v) for k, v in splits.items()}
    names = sorted(sets)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            common = sets[a] & sets[b]
            if common:
                shown = sorted(map(str, common))[:5]
                raise SplitOverlap(f"splits {a!r} and {b!r} overlap in {len(common)} item(s), e.g. {shown}")


def split_tasks(task_ids: Sequence[str], gate_fraction: float, seed: int) -> dict[str, list[str]]:
    """Deterministic per-task split into update and gate tasks (the hidden audit lives elsewhere)."""
    ranked = sorted(task_ids, key=lambda t: derive_seed("split", seed, t))
    n_gate = round(len(ranked) * gate_fraction)
    if 0 < gate_fraction and n_gate == 0 and len(ranked) > 1:
        n_gate = 1
    gate = set(ranked[:n_gate])
    return {"update": [t for t in task_ids if t not in gate], "gate": [t for t in task_ids if t in gate]}


def observation_split(cycle: int, gate_fraction: float) -> Literal["update", "gate"]:
    """Held-out history: which split the observations of ``cycle`` belong to, evenly spaced.

    Cycle k is gate data iff ⌊k·f⌋ > ⌊(k−1)·f⌋ (f = 0.25: cycles 4, 8, 12, …); the same for every
    method and seed, so matched runs hold out the same rounds.
    """
    if not 0.0 <= gate_fraction < 1.0:
        raise ValueError(f"gate_fraction must be in [0, 1), got {gate_fraction}")
    return (
        "gate"
        if math.floor(cycle * gate_fraction + 1e-12) > math.floor((cycle - 1) * gate_fraction + 1e-12)
        else "update"
    )
