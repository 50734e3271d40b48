"""Wall time of runs and experiments, read back from their events (never from a clock at report time).

A run directory's events carry their append ``time``; where an experiment records its own timings
(``wall_s`` payloads of finished runs or sessions) those are used, else a run's time is the span from
its first to its last event — which includes any pause between an interruption and the resume.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from rsi_workbench.records import Event, Run, has_events


def fmt_s(seconds: float | None) -> str:
    """12.3 s, 4.2 min or 1.50 h; "—" when unknown."""
    if seconds is None:
        return "—"
    if seconds < 120:
        return f"{seconds:.1f} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.2f} h"


def span_s(events: Sequence[Event]) -> float | None:
    """Seconds from the first to the last event (None for fewer than two events)."""
    if len(events) < 2:
        return None
    return max(e.time for e in events) - min(e.time for e in events)


def run_span_s(path: str | Path) -> float | None:
    """The first-to-last-event span of one run directory's events (None when it has none)."""
    p = Path(path)
    if not has_events(p):
        return None
    return span_s(Run.open(p).events())


def wall_lines(
    runs: Iterable[tuple[str, float | None]], experiment_s: float | None, how: str, per: str = "run"
) -> list[str]:
    """Report lines: the wall time of the whole experiment and of each named run, saying how measured
    (the per-run list wraps onto indented lines)."""
    import textwrap

    runs = list(runs)
    lines = [f"wall time ({how}): experiment {fmt_s(experiment_s)}" + (f"; per {per}:" if runs else "")]
    per = ", ".join(f"{name} {fmt_s(s)}" for name, s in runs)
    if per:
        lines += textwrap.wrap(per, width=110, initial_indent="  ", subsequent_indent="  ")
    return lines
