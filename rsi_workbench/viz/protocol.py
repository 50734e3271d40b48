"""Reading retained-pair protocol runs (RSI-Anything) for the figures, the cycle stepper and the gate tuner.

A protocol run is a run directory whose log starts with ``loop_opened``; a code-repair experiment
directory groups several of them under ``runs/``. Events are taken as the engine itself takes
them (:func:`rsi_workbench.protocol.loop.effective_events`: a re-run cycle supersedes a cut-off one).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rsi_workbench.protocol.loop import effective_events
from rsi_workbench.records import Event, Run, list_runs, log_exists, open_log

PROTOCOL_KINDS = frozenset({"loop_opened", "proposal", "selection", "observation", "gate", "reliability"})


@dataclass
class ProtocolRun:
    """One (method, seed) run of the loop: its settings and its effective events grouped by kind and cycle."""

    path: Path
    name: str
    settings: dict[str, Any]
    events: list[Event]
    by_kind: dict[str, list[Event]] = field(default_factory=dict)

    def of(self, kind: str, cycle: int | None = None) -> list[Event]:
        evs = self.by_kind.get(kind, [])
        return evs if cycle is None else [e for e in evs if e.cycle == cycle]

    @property
    def cycles(self) -> list[int]:
        return sorted({int(e.cycle) for e in self.of("cycle_finished") if e.cycle is not None})

    @property
    def rule(self) -> str:
        """The selection rule's name (the one ``loop_opened`` records, e.g. a rule object of one's own)."""
        opened = self.of("loop_opened")
        used = opened[0].payload.get("components", {}).get("selection_rule", {}) if opened else {}
        return str(used.get("name") or self.settings.get("rule", "?"))


RunLike = ProtocolRun | str | os.PathLike[str]  # a loaded protocol run, or its directory


def as_protocol_run(run: RunLike) -> ProtocolRun:
    """``run`` when it is already a :class:`ProtocolRun`, else :func:`load_protocol_run` of the directory.

    ```python
    run = as_protocol_run("runs/notebooks/code_repair/runs/world_adaptive/seed0")
    run.cycles, run.rule
    ```
    """
    return run if isinstance(run, ProtocolRun) else load_protocol_run(run)


def as_protocol_runs(runs: RunLike | Sequence[ProtocolRun]) -> list[ProtocolRun]:
    """A list of protocol runs from one loaded run, a sequence of them, or a directory (one run or an
    experiment: :func:`load_protocol_runs`).

    ```python
    [r.name for r in as_protocol_runs("runs/notebooks/code_repair")]  # ['random_k-seed0', ...]
    ```
    """
    if isinstance(runs, ProtocolRun):
        return [runs]
    if isinstance(runs, str | os.PathLike):
        return load_protocol_runs(runs)
    return list(runs)


def is_protocol_run(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a run directory whose event log opens with ``loop_opened``."""
    log = Path(path) / "events.jsonl"
    if not log_exists(log):  # plain or compacted (events.jsonl.gz)
        return False
    with open_log(log) as f:
        first = f.readline()
    return b'"kind":"loop_opened"' in first


def protocol_run_paths(path: str | os.PathLike[str]) -> list[Path]:
    """The protocol runs at ``path``: the run itself, or every run of an experiment directory."""
    p = Path(path)
    if is_protocol_run(p):
        return [p]
    return [r for r in list_runs(p) if r != p and is_protocol_run(r)]


def load_protocol_run(path: str | os.PathLike[str]) -> ProtocolRun:
    """One protocol run directory, its effective events grouped by kind (raises ``ValueError`` if the
    directory is not a protocol run).

    ```python
    run = load_protocol_run("runs/notebooks/code_repair/runs/world_adaptive/seed0")
    [e.payload["gate"] for e in run.of("gate", run.cycles[-1])]
    ```
    """
    run = Run.open(path)
    evs = effective_events(run)
    by_kind: dict[str, list[Event]] = {}
    for e in evs:
        by_kind.setdefault(e.kind, []).append(e)
    opened = by_kind.get("loop_opened")
    if not opened:
        raise ValueError(f"{path} is not a protocol run (no loop_opened event)")
    p = Path(path)
    return ProtocolRun(p, p.name, opened[0].payload.get("settings", {}), evs, by_kind)


def load_protocol_runs(path: str | os.PathLike[str]) -> list[ProtocolRun]:
    """Every protocol run at ``path`` (one run or an experiment), loaded once."""
    runs = [load_protocol_run(p) for p in protocol_run_paths(path)]
    if not runs:
        raise ValueError(f"{path}: no protocol runs (no run with a loop_opened event)")
    return runs
