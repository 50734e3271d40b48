"""Lazy re-exports for package ``__init__`` modules (PEP 562), so importing a package stays cheap.

A package lists ``{name: defining module}``; the module is imported on first attribute access, and
the value is cached in the package's namespace (later accesses are plain lookups)::

    __getattr__, __dir__ = lazy_exports(__name__, globals(), {"Loop": "rsi_workbench.protocol.loop"})
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(
    package: str, namespace: dict[str, Any], exports: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A module ``__getattr__`` that imports ``exports[name]`` on first access of ``name``, and a
    ``__dir__`` that lists the exports beside what is already defined."""

    def __getattr__(name: str) -> Any:
        where = exports.get(name)
        if where is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(where), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(exports))

    return __getattr__, __dir__
