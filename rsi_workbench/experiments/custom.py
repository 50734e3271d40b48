"""Experiments of one's own: ``experiment:`` names an entry point or an import path.

``rsi-workbench run`` first looks ``experiment:`` up among the built-in kinds
(``rsi_workbench.cli.EXPERIMENT_KINDS``), then among the entry points of the
:data:`ENTRY_POINT_GROUP` group that installed distributions declare, then as an import path
``package.module`` or ``package.module:object``. Whatever it names is used like a built-in
experiment module: it exposes ``Config`` (a pydantic model whose ``experiment`` field accepts that
name), ``run_experiment(config, out, *, resume) -> Path`` and ``report(path) -> str``, optionally
``check_config(config, source)`` (checks made before a run directory exists; raise
:class:`~rsi_workbench.config.ConfigError`). An import path must be importable where the command
runs (an installed package, or a folder on ``PYTHONPATH``): ``report`` and ``resume`` import it
again from the name stored in the run's ``config.json``.
"""

from __future__ import annotations

from typing import Any

from rsi_workbench.plugins import (
    PluginError,
    entry_point_names,
    import_object,
    is_import_path,
    load_entry_point,
)

__all__ = ["ENTRY_POINT_GROUP", "EXPERIMENT_API", "find_experiment"]

#: the importlib.metadata entry-point group of whole experiments
ENTRY_POINT_GROUP = "rsi_workbench.experiments"
#: what an experiment module (or object) must expose
EXPERIMENT_API = ("Config", "run_experiment", "report")


def find_experiment(kind: str, builtin: list[str]) -> Any:
    """The experiment module/object ``kind`` names (an entry point, else an import path); a
    :class:`PluginError` that lists the built-in kinds and installed entry points when nothing
    matches, or says what the named object lacks."""
    loaded = load_entry_point(ENTRY_POINT_GROUP, kind)
    installed = entry_point_names(ENTRY_POINT_GROUP)
    allowed = (
        f"allowed: a built-in kind ({', '.join(builtin)}), an entry point of {ENTRY_POINT_GROUP} "
        f"(installed: {', '.join(installed) or 'none'}) or an import path package.module[:object]"
    )
    if loaded is not None:
        obj, where = loaded
        where = f"entry point {kind!r} ({where})"
    elif is_import_path(kind):
        try:
            obj = import_object(kind)
        except PluginError as e:
            raise PluginError(f"unknown kind {kind!r} ({allowed}); as an import path: {e}") from None
        where = f"import path {kind!r}"
    else:
        raise PluginError(f"unknown kind {kind!r} ({allowed})")
    missing = [a for a in EXPERIMENT_API if not hasattr(obj, a)]
    if missing:
        raise PluginError(
            f"{where} lacks {', '.join(missing)} (an experiment exposes {', '.join(EXPERIMENT_API)})"
        )
    return obj
