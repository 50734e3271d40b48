"""What every dashboard shares: the ``--run`` argument, a tail of the event log, background jobs.

Dashboards read runs; only a live session (``rsi-workbench serve --live``, or a notebook that owns
the run) writes, and only through an engine that appends whole events, so closing a page mid-job
never leaves a torn or half-written run.
"""

from __future__ import annotations

import argparse
import sys
import threading
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from rsi_workbench.records import Event, RunError
from rsi_workbench.records.events import log_size, read_log
from rsi_workbench.records.run import CONFIG_FILE, EVENTS_FILE


def run_from_argv(argv: Sequence[str] | None = None) -> tuple[Path, dict[str, str]]:
    """The run directory named by ``--run`` (``panel serve app.py --args --run DIR``) and extra ``--k v``."""
    p = argparse.ArgumentParser(prog="panel serve widgets/<app>.py --args", add_help=False)
    p.add_argument("--run", required=True, help="run directory (or discovery tree file) to show")
    known, rest = p.parse_known_args(list(sys.argv[1:] if argv is None else argv))
    extra = {rest[i].lstrip("-"): rest[i + 1] for i in range(0, len(rest) - 1, 2)}
    from rsi_workbench.widgets.tree_file import check_run_or_tree

    return check_run_or_tree(known.run), extra  # a run directory, or a discovery tree file


def check_run_dir(path: str | Path) -> Path:
    """``path`` as a run directory, or a :class:`RunError` that says what is missing."""
    p = Path(path)
    if not (p / CONFIG_FILE).exists():
        raise RunError(f"{p} is not a run directory (no {CONFIG_FILE}); pass --run runs/<id>")
    return p


class RunTail:
    """Reads a run's ``events.jsonl`` incrementally, so a page follows a run while it grows.

    Only whole lines are read; a torn tail (a writer mid-append or crashed) is left for later.
    """

    def __init__(self, run: str | Path):
        self.path = check_run_dir(run)
        self.events: list[Event] = []
        self._offset = 0

    def poll(self) -> list[Event]:
        """Read events appended since the last poll; returns just the new ones."""
        log = self.path / EVENTS_FILE
        if log_size(log) == self._offset:  # plain or compacted: the same offsets
            return []
        res = read_log(log, from_offset=self._offset, expect_seq=len(self.events))
        self._offset = res.valid_bytes
        self.events.extend(res.events)
        return res.events

    def frame(self, kind: str | None = None) -> Any:
        """Events so far as an unflattened DataFrame (``seq, time, kind, cycle, payload``)."""
        import pandas as pd

        rows = [
            {"seq": e.seq, "time": e.time, "kind": e.kind, "cycle": e.cycle, "payload": e.payload}
            for e in self.events
            if kind is None or e.kind == kind
        ]
        return pd.DataFrame(rows, columns=["seq", "time", "kind", "cycle", "payload"])


class BackgroundJob:
    """Runs one long function (a cycle, a training step) in a worker thread while the page stays usable.

    The function appends events itself; pages learn of progress by tailing the log. The job is not
    tied to a browser session: closing the page leaves it running to its next commit point.
    """

    def __init__(self) -> None:
        self._thread: threading.Thread | None = None
        self.error: str | None = None
        self.result: Any = None
        self.label = ""

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self, label: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> bool:
        """Start ``fn`` unless a job is running; returns whether it started."""
        if self.running:
            return False
        self.error, self.result, self.label = None, None, label

        def target() -> None:
            try:
                self.result = fn(*args, **kwargs)
            except Exception:  # reported on the page, never swallowed
                self.error = traceback.format_exc(limit=6)

        self._thread = threading.Thread(target=target, name=f"rsi-job:{label}", daemon=False)
        self._thread.start()
        return True

    def join(self, timeout: float | None = None) -> None:
        if self._thread is not None:
            self._thread.join(timeout)


def served_app(build: Callable[[Path, dict[str, str]], Any]) -> None:
    """Under ``panel serve``: build the dashboard for ``--run`` and mark it servable."""
    import panel as pn

    pn.extension("plotly", "tabulator", notifications=True)
    run, extra = run_from_argv()
    build(run, extra).servable(title=f"RSI Workbench · {run.name}")
