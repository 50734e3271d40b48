"""Offline sequential replay over a measured grid: running an experiment reveals one yield (E3).

The pool is every condition of a campaign. :class:`ReplayEnvironment` holds the measured yields
and is the only thing that reads them; a selector only ever receives a :class:`PoolView` — the
shared encoding of the pool plus the indices and yields of conditions already run — so nothing
about an unrun condition's outcome can leak into a decision. Each run spends one unit of the
external-feedback budget and refuses to run once it is spent or to re-run a condition.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from rsi_workbench.budget import EXTERNAL_FEEDBACK, BudgetLedger
from rsi_workbench.domains.reactions.corruption import Corruption
from rsi_workbench.domains.reactions.grid import ConditionGrid, encode_conditions

EVIDENCE_LEVEL = "E3"  # external measurement, here replayed from the published grid


class ReplayError(RuntimeError):
    """An experiment request the replay refuses (already run, out of the pool)."""


@dataclass(frozen=True)
class Observation:
    """One replayed measurement: which condition, its levels, the measured yield and its evidence level."""

    index: int
    condition: dict[str, Any]
    yield_: float
    step: int  # 1-based experiment count at which it was measured
    evidence: str = EVIDENCE_LEVEL
    true_yield: float | None = None  # under a declared corruption: the condition's true yield

    @property
    def actual(self) -> float:
        """The condition's true yield (the reading ``yield_`` unless a corruption misread it)."""
        return self.yield_ if self.true_yield is None else self.true_yield


@dataclass(frozen=True)
class PoolView:
    """All a selector may see: encoded conditions, which ones ran, and their measured yields."""

    features: np.ndarray  # (n, d) float64, read-only — the shared encoding of every condition
    feature_names: tuple[str, ...]
    observed_index: np.ndarray  # (m,) int64, read-only, in the order run
    observed_yield: np.ndarray  # (m,) float64, read-only, yields of observed_index only

    @property
    def unrun(self) -> np.ndarray:
        mask = np.ones(len(self.features), dtype=bool)
        mask[self.observed_index] = False
        return np.flatnonzero(mask)

    @property
    def best(self) -> float:
        return float(self.observed_yield.max()) if len(self.observed_yield) else float("-inf")


def _readonly(a: np.ndarray) -> np.ndarray:
    a = np.array(a, copy=True)
    a.flags.writeable = False
    return a


class ReplayEnvironment:
    """The measured grid behind a wall: only :meth:`run_experiment` reads a yield, and it spends budget."""

    def __init__(
        self,
        grid: ConditionGrid,
        ledger: BudgetLedger,
        *,
        budget: str = EXTERNAL_FEEDBACK,
        corruption: Corruption | None = None,
    ) -> None:
        """``corruption``: the run's declared misreading of its measurements (the view holds readings)."""
        self.corruption = corruption
        features, names = encode_conditions(grid)
        self._features = _readonly(features)
        self._names = tuple(names)
        self.__yields = grid.yields.copy()  # name-mangled: the oracle, never handed out
        self._conditions = grid.conditions
        self.ledger = ledger
        self.budget = budget
        self.observations: list[Observation] = []

    @property
    def n(self) -> int:
        return len(self._features)

    def view(self) -> PoolView:
        """A fresh snapshot for a selector: features plus the observed (index, yield) pairs only."""
        idx = np.array([o.index for o in self.observations], dtype=np.int64)
        ys = np.array([o.yield_ for o in self.observations], dtype=np.float64)
        return PoolView(self._features, self._names, _readonly(idx), _readonly(ys))

    def run_experiment(self, index: int, *, reason: str = "", cycle: int | None = None) -> Observation:
        """Reveal the measured yield of one condition, spending one unit of the experiment budget."""
        index = int(index)
        if not 0 <= index < self.n:
            raise ReplayError(f"condition {index} is not in the pool (0..{self.n - 1})")
        if any(o.index == index for o in self.observations):
            raise ReplayError(f"condition {index} was already run; replay reveals each yield once")
        self.ledger.spend(self.budget, 1, reason=reason or f"run condition {index}", cycle=cycle)
        step = len(self.observations) + 1
        y = float(self.__yields[index])
        reading, truth = y, None
        if self.corruption is not None:
            reading, _ = self.corruption.read(step, y)
            truth = y
        obs = Observation(
            index=index,
            condition={str(k): _plain(v) for k, v in self._conditions.iloc[index].items()},
            yield_=reading,
            step=step,
            true_yield=truth,
        )
        self.observations.append(obs)
        return obs


def _plain(v: Any) -> Any:
    return v.item() if hasattr(v, "item") else v


def initial_conditions(n_pool: int, n_initial: int, seed: int, task_id: str) -> list[int]:
    """The seeded initial conditions, identical for every method of a seed: exactly what the protocol
    loop's ``initial_design`` cycles pick (``initial_design_select`` over the unrun pool in order)."""
    from rsi_workbench.protocol.decisions import ScoredCandidate, initial_design_select

    run: list[int] = []
    for k in range(1, n_initial + 1):
        unrun = [i for i in range(n_pool) if i not in set(run)]
        dec = initial_design_select(
            [ScoredCandidate(p, True) for p in range(len(unrun))],
            seed=seed,
            cycle=k,
            task_id=task_id,
            budget_remaining=float("inf"),
        )
        run.append(unrun[dec.selected[0]])
    return run
