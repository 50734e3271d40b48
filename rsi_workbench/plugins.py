"""Objects named by import path or entry point: how configs and plug-ins name code of one's own.

An import path is ``package.module:Name`` (an attribute, dotted for nested ones:
``package.module:Outer.Inner``) or ``package.module`` (the module itself). Entry points are the
``importlib.metadata`` groups an installed distribution declares (``[project.entry-points."<group>"]``
in its pyproject.toml): ``rsi_workbench.experiments`` (whole experiments) and
``rsi_workbench.dashboards`` (dashboards). :func:`object_path` is the inverse, recorded in runs as
provenance. Only the standard library is used here (the lowest layer: everyone may import it).
"""

from __future__ import annotations

import contextlib
import importlib
import re
import sys
from collections.abc import Iterator, Sequence
from importlib.metadata import EntryPoint, entry_points
from typing import Any

__all__ = [
    "IMPORT_PATH",
    "PluginError",
    "entry_point_names",
    "import_object",
    "is_import_path",
    "load_entry_point",
    "object_path",
    "search_path",
]

#: ``package.module`` or ``package.module:Name`` (dotted names of identifiers)
IMPORT_PATH = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*(:[A-Za-z_]\w*(\.[A-Za-z_]\w*)*)?$")


class PluginError(ValueError):
    """An import path or entry point that does not name an importable object; says which and why."""


def is_import_path(text: str) -> bool:
    """Whether ``text`` has the form of an import path (``pkg.mod`` or ``pkg.mod:Name``)."""
    return bool(IMPORT_PATH.match(text))


@contextlib.contextmanager
def search_path(dirs: Sequence[str]) -> Iterator[None]:
    """Import with ``dirs`` in front of ``sys.path``; ``sys.path`` is restored afterwards (modules
    imported meanwhile stay imported)."""
    saved = list(sys.path)
    sys.path[:0] = [d for d in dirs if d not in sys.path]
    try:
        yield
    finally:
        sys.path[:] = saved


def import_object(path: str) -> Any:
    """The object ``path`` names (``pkg.mod:Name`` or ``pkg.mod``); a :class:`PluginError` saying
    whether the module or the attribute is missing (and the module's own import error)."""
    if not is_import_path(path):
        raise PluginError(f"{path!r} is not an import path (expected package.module:Name)")
    mod_name, _, attr = path.partition(":")
    try:
        obj: Any = importlib.import_module(mod_name)
    except ModuleNotFoundError as e:
        if e.name is not None and (mod_name == e.name or mod_name.startswith(e.name + ".")):
            raise PluginError(
                f"{path!r}: no module named {e.name!r} (is its folder on the import search path?)"
            ) from None
        raise PluginError(f"{path!r}: importing {mod_name} failed: {type(e).__name__}: {e}") from e
    except Exception as e:  # the module itself raised: show that error, not ours
        raise PluginError(f"{path!r}: importing {mod_name} failed: {type(e).__name__}: {e}") from e
    for part in attr.split(".") if attr else ():
        if not hasattr(obj, part):
            raise PluginError(f"{path!r}: module {mod_name} has no attribute {attr!r}")
        obj = getattr(obj, part)
    return obj


def object_path(obj: Any) -> str:
    """The import path of ``obj``'s class (or of ``obj`` itself when it is a class, function or module)."""
    if isinstance(obj, type(sys)):
        return obj.__name__
    target = obj if isinstance(obj, type) or callable(obj) and hasattr(obj, "__qualname__") else type(obj)
    return f"{target.__module__}:{target.__qualname__}"


def _group(group: str) -> dict[str, EntryPoint]:
    return {ep.name: ep for ep in entry_points(group=group)}


def entry_point_names(group: str) -> list[str]:
    """The names installed distributions declare in entry-point ``group``, sorted."""
    return sorted(_group(group))


def load_entry_point(group: str, name: str) -> tuple[Any, str] | None:
    """``(object, "dist value")`` of entry point ``name`` in ``group``, or None if no distribution
    declares it; a :class:`PluginError` when it is declared but does not load."""
    ep = _group(group).get(name)
    if ep is None:
        return None
    try:
        return ep.load(), ep.value
    except Exception as e:
        raise PluginError(
            f"entry point {name!r} of group {group!r} ({ep.value}) does not load: {type(e).__name__}: {e}"
        ) from e
