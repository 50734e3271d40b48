"""What a dashboard is (:class:`Dashboard`) and where ``serve`` / ``export`` find them.

A dashboard is any object (usually a module) with ``APP_NAME``, ``applies(run, kinds)``,
``build(run, extra, live=None)`` and ``export_sections(run)``; optionally ``open_live(run, owner)``
(made once per ``serve --live``, passed to every ``build`` as ``live``). The built-in ones are
listed in :func:`rsi_workbench.widgets.commands.dashboards_for`; a distribution of one's own adds
more without editing the package, through the :data:`ENTRY_POINT_GROUP` entry-point group::

    # pyproject.toml of your package
    [project.entry-points."rsi_workbench.dashboards"]
    my_view = "my_package.my_dashboard"      # a module (or module:object) that is a Dashboard

``rsi-workbench serve RUN`` then serves it at ``/<APP_NAME>`` for every run it ``applies`` to, and
``rsi-workbench export`` includes its sections.
"""

from __future__ import annotations

import sys
from collections.abc import Collection
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from rsi_workbench.plugins import PluginError, entry_point_names, load_entry_point

__all__ = ["ENTRY_POINT_GROUP", "Dashboard", "registered_dashboards"]

#: the importlib.metadata entry-point group of dashboards
ENTRY_POINT_GROUP = "rsi_workbench.dashboards"


@runtime_checkable
class Dashboard(Protocol):
    """One page of ``rsi-workbench serve`` and its part of ``rsi-workbench export``.

    Example (a module ``my_package/my_dashboard.py``)::

        import panel as pn
        from rsi_workbench.viz.html import Section

        APP_NAME = "budget"

        def applies(run, kinds):                 # kinds: the event kinds the run holds
            return "budget_spent" in kinds

        def build(run, extra, live=None):        # extra: the page's query arguments
            return pn.pane.Markdown(f"budget events of {run.name}")

        def export_sections(run):
            return [Section("Budget", f"budget events of {run.name}", [])]
    """

    APP_NAME: str

    def applies(self, run: Path, kinds: set[str]) -> bool:
        """Whether this dashboard has something to show for ``run`` (``kinds``: its event kinds)."""
        ...

    def build(self, run: Path, extra: dict[str, str], live: Any = None) -> Any:
        """The page for ``run`` (a Panel viewable); ``live`` is ``open_live``'s object or None."""
        ...

    def export_sections(self, run: Path) -> list[Any]:
        """Static report sections (:class:`rsi_workbench.viz.html.Section`) for ``export --html``."""
        ...


def registered_dashboards(taken: Collection[str] = ()) -> list[Any]:
    """The dashboards installed distributions declare in :data:`ENTRY_POINT_GROUP`; one that does
    not load, is not a :class:`Dashboard` or reuses a name in ``taken`` is skipped with a warning
    on stderr (a broken plug-in never takes the built-in dashboards down)."""
    out: list[Any] = []
    names = set(taken)
    for name in entry_point_names(ENTRY_POINT_GROUP):
        try:
            loaded = load_entry_point(ENTRY_POINT_GROUP, name)
        except PluginError as e:
            print(f"warning: dashboard {e}; skipped", file=sys.stderr)
            continue
        if loaded is None:
            continue
        obj, where = loaded
        if not isinstance(obj, Dashboard):
            missing = [a for a in ("APP_NAME", "applies", "build", "export_sections") if not hasattr(obj, a)]
            print(
                f"warning: dashboard entry point {name!r} ({where}) lacks {missing}; skipped", file=sys.stderr
            )
            continue
        if obj.APP_NAME in names:
            print(
                f"warning: dashboard entry point {name!r} ({where}) reuses the name {obj.APP_NAME!r}; skipped",
                file=sys.stderr,
            )
            continue
        names.add(obj.APP_NAME)
        out.append(obj)
    return out
