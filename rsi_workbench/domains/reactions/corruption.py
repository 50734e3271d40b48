"""Feedback that can mislead: a declared corruption of a campaign's measured yields.

``corruption: {fraction: 0.2, shift: -30, seed: 7}`` in a reactions config replaces a seeded
``fraction`` of each run's measurements by a shifted assay reading ``clip(y + shift, *clip)``. Which
measurements are misread is a property of the (grid, run seed) pair and the corruption's own seed —
the experiment number (1-based, initial design included) — never of the arm: every arm of a seed
has the same measurements misread (shared random numbers), so arms differ only in what they chose
to run. Exactly ``round(fraction · n_total)`` of the ``n_total`` measurements are misread.

What the system sees (the selector's state, the predictor's training data, the gates, EI's
incumbent) is the reading; the campaign's outcome — the best yield of the conditions run — is the
true yield of those conditions, since the experiments did produce it. Every observation records
whether it was misread (``corrupted`` in its detail or payload) and every run's summary lists its
misread experiments (``corrupted_experiments``).

The sensitivity pilot's oracle arm (``gates: oracle``) gates on the true yields: its gate-data path
(:class:`UncorruptedGateView`, composed in by :func:`oracle_gate_parts`) re-reads each gate record's
condition from the grid, for the gate decisions only; the predictor is trained, and the adaptation
trigger judges reliability, on the readings, as in every other arm.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np
from pydantic import Field, model_validator

from rsi_workbench.config import StrictModel
from rsi_workbench.protocol.loop import Collaborators, compose
from rsi_workbench.protocol.settings import ProtocolSettings
from rsi_workbench.protocol.spec import Observation, PairRecord
from rsi_workbench.protocol.state import LoopState


class CorruptionSpec(StrictModel):
    """A declared corruption of the experiment feedback (``corruption:`` of a reactions config)."""

    fraction: float = Field(gt=0.0, le=1.0, description="share of each run's measurements misread")
    shift: float = Field(description="the misread value is the true yield plus this shift (yield points)")
    seed: int = Field(default=0, description="seed of which experiments are misread (with the run's seed)")
    clip: tuple[float, float] = Field(default=(0.0, 100.0), description="a reading stays within these bounds")

    @model_validator(mode="after")
    def _check(self) -> CorruptionSpec:
        if self.clip[0] >= self.clip[1]:
            raise ValueError(f"clip {list(self.clip)}: the lower bound must be below the upper")
        return self


def _grid_key(grid: str) -> int:
    return int.from_bytes(hashlib.sha256(grid.encode()).digest()[:8], "big")


class Corruption:
    """One run's corruption: which of its ``n_total`` experiments are misread, and the reading."""

    def __init__(self, spec: CorruptionSpec, grid: str, seed: int, n_total: int) -> None:
        self.spec, self.grid, self.seed, self.n_total = spec, grid, int(seed), int(n_total)
        rng = np.random.default_rng([int(spec.seed) & 0xFFFFFFFF, self.seed & 0xFFFFFFFF, _grid_key(grid)])
        k = int(round(spec.fraction * n_total))
        self.experiments = frozenset(int(j) + 1 for j in rng.choice(n_total, size=k, replace=False))

    def read(self, experiment: int, y: float) -> tuple[float, bool]:
        """The reading of the ``experiment``-th measurement (1-based) of true yield ``y``, and whether
        it was misread."""
        if int(experiment) not in self.experiments:
            return float(y), False
        lo, hi = self.spec.clip
        return float(min(max(y + self.spec.shift, lo), hi)), True

    def describe(self) -> dict[str, object]:
        """What a run's summary records of its corruption."""
        return {
            **self.spec.model_dump(mode="json"),
            "corrupted_experiments": sorted(self.experiments),
        }


# -- the oracle arm of the sensitivity pilot: gates that read the true yields ------------------------
class UncorruptedGateView:
    """The loop state as an oracle arm's gates see it: every attribute is the loop's own, except that
    the gate records (:meth:`held_out_records`, the gate-data path of eq. 14 and 17) carry the true
    yields of their conditions in place of the readings. Only the gate data measure reads it; the
    update data, the adaptation trigger (eq. 10–11) and the predictor's training read the loop state."""

    def __init__(self, state: LoopState, truth: Callable[[PairRecord], Observation]) -> None:
        self._state, self._truth = state, truth

    def __getattr__(self, name: str) -> Any:
        return getattr(self._state, name)

    def held_out_records(self, k: int | None = None) -> list[PairRecord]:
        return [replace(p, observation=self._truth(p)) for p in self._state.held_out_records(k)]


def oracle_gate_parts(
    truth: Callable[[PairRecord], Observation],
) -> Callable[[LoopState, ProtocolSettings], Collaborators]:
    """A loop composition (``Loop.open(..., parts=...)``) whose gates read ``truth(record)`` — the
    uncorrupted observation — on the gate-data path, for gate decisions only: the default
    collaborators with the retention's gate data measure looking through :class:`UncorruptedGateView`."""

    def parts(state: LoopState, settings: ProtocolSettings) -> Collaborators:
        collab = compose(state, settings)
        collab.retention.measure.state = UncorruptedGateView(state, truth)  # type: ignore[assignment]
        return collab

    return parts
