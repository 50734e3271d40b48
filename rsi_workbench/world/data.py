"""Transition batches: the (state, action, context, observed outcome) rows a predictor learns from.

A row is one transition s_t --a_t--> o_{t+1} under context c. ``state``/``action``/``context``/
``outcome`` hold encoder inputs: cached backbone features ``[N, H]`` (the CPU default) or lists of
strings (when a text encoder with LoRA runs inside the model). Labels: ``status`` (index into
``STATUS_CLASSES``), ``runtime_s``, ``is_suite`` (whole-suite row vs per-test row),
``pass_fraction`` (suite rows; NaN elsewhere) and ``group`` (rows that compete for the same state
and test; ranking pairs are formed only inside a group).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, fields
from typing import Any

import numpy as np
import torch


@dataclass
class TransitionBatch:
    """Encoder inputs + labels for N transition rows (see module docstring)."""

    state: Any
    action: Any
    context: Any
    status: torch.Tensor  # long [N]
    runtime_s: torch.Tensor  # float [N]
    is_suite: torch.Tensor  # bool [N]
    pass_fraction: torch.Tensor  # float [N], NaN on per-test rows
    group: torch.Tensor  # long [N]
    outcome: Any = None  # next-state observation for the EMA target (None at inference)

    def __post_init__(self) -> None:
        n = len(self.status)
        for f in fields(self):
            v = getattr(self, f.name)
            if v is not None and len(v) != n:
                raise ValueError(f"TransitionBatch.{f.name} has {len(v)} rows, status has {n}")

    def __len__(self) -> int:
        return len(self.status)

    def subset(self, idx: Sequence[int] | np.ndarray | torch.Tensor) -> TransitionBatch:
        ix = torch.as_tensor(np.asarray(idx, dtype=np.int64))

        def take(v: Any) -> Any:
            if v is None:
                return None
            if isinstance(v, torch.Tensor):
                return v[ix]
            return [v[int(i)] for i in ix]

        return TransitionBatch(**{f.name: take(getattr(self, f.name)) for f in fields(self)})

    def to(self, device: str) -> TransitionBatch:
        def mv(v: Any) -> Any:
            return v.to(device) if isinstance(v, torch.Tensor) else v

        return TransitionBatch(**{f.name: mv(getattr(self, f.name)) for f in fields(self)})

    def without_outcome(self) -> TransitionBatch:
        return TransitionBatch(**{f.name: getattr(self, f.name) for f in fields(self) if f.name != "outcome"})


def make_batch(
    state: Any,
    action: Any,
    context: Any,
    status: Sequence[int] | np.ndarray,
    *,
    runtime_s: Sequence[float] | np.ndarray | None = None,
    is_suite: Sequence[bool] | np.ndarray | None = None,
    pass_fraction: Sequence[float] | np.ndarray | None = None,
    group: Sequence[int] | np.ndarray | None = None,
    outcome: Any = None,
) -> TransitionBatch:
    """Build a batch from numpy/lists; features become float32 tensors, missing labels get defaults."""
    n = len(status)

    def feat(x: Any) -> Any:
        if x is None or isinstance(x, list):
            return x
        return torch.as_tensor(np.asarray(x, dtype=np.float32))

    return TransitionBatch(
        state=feat(state),
        action=feat(action),
        context=feat(context),
        status=torch.as_tensor(np.asarray(status, dtype=np.int64)),
        runtime_s=torch.as_tensor(
            np.zeros(n) if runtime_s is None else np.asarray(runtime_s), dtype=torch.float32
        ),
        is_suite=torch.as_tensor(np.zeros(n, bool) if is_suite is None else np.asarray(is_suite, dtype=bool)),
        pass_fraction=torch.as_tensor(
            np.full(n, np.nan) if pass_fraction is None else np.asarray(pass_fraction, dtype=np.float64),
            dtype=torch.float32,
        ),
        group=torch.as_tensor(np.arange(n) if group is None else np.asarray(group, dtype=np.int64)),
        outcome=feat(outcome),
    )


def group_batches(groups: np.ndarray, batch_size: int, rng: np.random.Generator) -> Iterator[np.ndarray]:
    """One epoch of row indices, whole groups kept together so ranking pairs land in one batch."""
    uniq = rng.permutation(np.unique(groups))
    members: dict[int, list[int]] = {}
    for i, g in enumerate(groups.tolist()):
        members.setdefault(g, []).append(i)
    cur: list[int] = []
    for g in uniq.tolist():
        cur.extend(members[g])
        if len(cur) >= batch_size:
            yield np.array(cur)
            cur = []
    if cur:
        yield np.array(cur)
