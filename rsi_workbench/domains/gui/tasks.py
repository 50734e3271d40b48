"""MiniWoB++ task names, read from the task pages shipped in the ``miniwob`` wheel."""

from __future__ import annotations

import difflib
import functools
from pathlib import Path


class UnknownTaskError(ValueError):
    """A MiniWoB++ task name that the installed ``miniwob`` package does not ship."""


def _html_dir() -> Path:
    try:
        import miniwob
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError("the GUI domain needs the `gui` extra: pip install 'rsi-workbench[gui]'") from err
    return Path(miniwob.__file__).parent / "html"


@functools.cache
def task_names() -> tuple[str, ...]:
    """Every MiniWoB++ task (``click-checkboxes``, ``flight.AA``, ...) in the installed wheel, sorted."""
    html = _html_dir()
    names = {p.stem for p in (html / "miniwob").glob("*.html")}
    flight = html / "flight"
    if flight.is_dir():
        names |= {f"flight.{d.name}" for d in flight.iterdir() if (d / "wrapper.html").is_file()}
    return tuple(sorted(names))


def resolve_task(name: str) -> str:
    """``name`` if it is a MiniWoB++ task, else :class:`UnknownTaskError` naming the closest tasks."""
    names = task_names()
    if name in names:
        return name
    close = difflib.get_close_matches(name, names, n=5, cutoff=0.5)
    hint = f"did you mean: {', '.join(close)}?" if close else f"{len(names)} tasks are available"
    raise UnknownTaskError(
        f"unknown MiniWoB++ task {name!r}; {hint} (see rsi_workbench.domains.gui.task_names())"
    )
