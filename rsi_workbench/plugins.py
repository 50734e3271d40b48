"""Objects named by import path or entry point: how configs and plug-ins name code of one's own.

An import path is ``package.module:Name`` (an attribute, dotted for nested ones:
``package.module:Outer.Inner``) or ``package.module`` (the module itself). Entry points are the
``importlib.metadata`` groups an installed distribution declares (``[project.entry-points."<group>"]``
in its pyproject.toml): ``rsi_workbench.experiments`` (whole experiments) and
``rsi_workbench.dashboards`` (dashboards). :func:`object_path` is the inverse, recorded in runs as
provenance. Only the standard library is used here (the lowest layer: everyone may import it).

Code named by a run's own files is imported only when the user names it too: while
:func:`only_trusted` is in force (``report``, ``resume`` and ``serve``), :func:`import_object`
refuses, with :class:`UntrustedImport`, every import path not in the set the user gave on the
command line (``--trust-plugin pkg.mod:Name``, or ``pkg.mod`` for all of a module's names). Entry points are installed code and load as ever.
"""

from __future__ import annotations

import contextlib
import importlib
import re
import sys
from collections.abc import Collection, Iterator, Sequence
from importlib.metadata import EntryPoint, entry_points
from typing import Any

__all__ = [
    "IMPORT_PATH",
    "PluginError",
    "UntrustedImport",
    "entry_point_names",
    "import_object",
    "is_import_path",
    "is_trusted",
    "load_entry_point",
    "object_path",
    "only_trusted",
    "untrusted_message",
    "search_path",
]

#: ``package.module`` or ``package.module:Name`` (dotted names of identifiers)
IMPORT_PATH = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*(:[A-Za-z_]\w*(\.[A-Za-z_]\w*)*)?$")


class PluginError(ValueError):
    """An import path or entry point that does not name an importable object; says which and why."""


class UntrustedImport(RuntimeError):
    """An import path a run's own files name that the user did not name (``--trust-plugin``); not a
    :class:`PluginError`, so callers that turn those into config errors let it through."""


#: while :func:`only_trusted` is in force: the import paths the user named; None: any
_TRUSTED: frozenset[str] | None = None


@contextlib.contextmanager
def only_trusted(paths: Sequence[str], flag: str = "--trust-plugin") -> Iterator[None]:
    """Within this block :func:`import_object` imports only ``paths`` (the user's ``flag`` values)
    and refuses any other with :class:`UntrustedImport`. Process-wide (threads included), not
    nested: the command that views or resumes a run sets it once."""
    global _TRUSTED
    saved = _TRUSTED
    _TRUSTED = frozenset(paths)
    try:
        yield
    finally:
        _TRUSTED = saved


def is_trusted(path: str, trusted: Collection[str]) -> bool:
    """Whether the user named ``path``: itself, or its module (``pkg.mod`` covers ``pkg.mod:Name``)."""
    return path in trusted or path.partition(":")[0] in trusted


def untrusted_message(path: str, where: str, flag: str = "--trust-plugin") -> str:
    """The refusal of import path ``path`` that ``where`` (a run's file and field) names."""
    module = path.partition(":")[0]
    whole = f" (or {flag} {module}: all of that module's names)" if module != path else ""
    return (
        f"{where} names the import path {path!r}: code a run's own files name is imported only when "
        f"you name it too; if you trust it, add {flag} {path}{whole}"
    )


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
    if _TRUSTED is not None and not is_trusted(path, _TRUSTED):
        raise UntrustedImport(untrusted_message(path, "the run"))
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
