"""What an RSIAgent run ended with, and the seeds it declares for targets and practice."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from rsi_workbench.memory.ledger import RESULT
from rsi_workbench.memory.snapshots import load_snapshot
from rsi_workbench.memory.tree import MemoryTree
from rsi_workbench.records import Run


def target_seed(seed: int, i: int) -> int:
    """Seed of the i-th known target (even numbers)."""
    return 2 * (seed * 10_000 + i)


def practice_seed(seed: int, index: int) -> int:
    """Seed of practice project ``index`` (odd numbers: disjoint from every target seed)."""
    return 2 * (seed * 10_000_000 + index) + 1


@dataclass
class RsiAgentResult:
    """What a run ended with: status, frozen memory, per-target scores and Partial/Binary together."""

    status: Literal["done", "infra"]
    run_path: Path
    ablation: str
    memory: MemoryTree
    frozen_hash: str | None
    scores: dict[str, float]
    partial: float
    binary: float
    n_targets: int
    episodes: int  # learning attempts (practice + target tests), evaluation excluded
    calls: int
    brs_projects: int
    practice_projects: int
    waves: int
    brs_end: str | None = None
    drs_ends: dict[str, str] = field(default_factory=dict)
    stop_reason: str = ""

    def as_payload(self) -> dict[str, Any]:
        out = {k: v for k, v in self.__dict__.items() if k not in ("memory", "run_path")}
        return {**out, "memory_stats": self.memory.stats()}


def recorded_result(run: Run) -> RsiAgentResult | None:
    """The result a finished run recorded (its frozen memory loaded and verified), else None."""
    done = run.events(RESULT)
    if not done:
        return None
    p = dict(done[-1].payload)
    p.pop("memory_stats", None)
    return RsiAgentResult(run_path=run.path, memory=load_snapshot(run, p["frozen_hash"]), **p)
