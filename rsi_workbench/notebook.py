"""One call at the top of every notebook: offline dashboards, figures that survive a save, paths from the repo.

``setup()`` loads Panel and Bokeh *inline* (their JavaScript goes into the notebook; no CDN, so the
dashboards render on a machine without internet and in a notebook converted to HTML), makes plotly
figures embed plotly.js with an HTML fallback, switches the library's ``tqdm.auto`` progress bars
to plain-text ones (an ipywidget bar is lost when the notebook is saved; text stays in the output),
and returns the repository root. A notebook's path parameters are relative to the notebook's folder
(``notebooks/``, where JupyterLab runs the kernel), whatever the working directory (papermill runs
the kernel where it was started): :func:`param_path`::

    from rsi_workbench.notebook import setup
    ROOT = setup()            # in a cell of its own: its output carries the Panel/Bokeh JavaScript
    run = experiment_run("../configs/dreaming/smoke.yaml")   # <repo>/runs/notebooks/dreaming-smoke-<hash>

:func:`experiment_run` opens the run a config makes under ``<repo>/runs/notebooks/`` (where
``rsi-workbench runs`` and the dashboards find it), making it first when it is not there.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from rsi_workbench.paths import repo_root, runs_dir
from rsi_workbench.viz._style import use_notebook_plotly_renderer

PANEL_EXTENSIONS = ("plotly", "tabulator")


def param_path(path: str | os.PathLike[str], start: str | os.PathLike[str] | None = None) -> Path:
    """A notebook's path parameter as an absolute path: unchanged when absolute (``~`` expanded), else
    relative to ``<repo>/notebooks/``, the folder JupyterLab runs the notebooks' kernel in (so a path
    typed in a notebook means what it means in JupyterLab's file browser and in ``open()`` there).

    >>> param_path("../runs/quickstart") == repo_root() / "runs" / "quickstart"
    True
    """
    p = Path(path).expanduser()
    return p if p.is_absolute() else Path(os.path.normpath(repo_root(start) / "notebooks" / p))


def use_text_progress_bars() -> None:
    """Route ``tqdm.auto`` / ``tqdm.autonotebook`` to the text ``tqdm.std`` bar (kept in a saved notebook)."""
    import tqdm.auto
    import tqdm.autonotebook
    import tqdm.std

    tqdm.auto.tqdm = tqdm.std.tqdm  # type: ignore[misc]
    tqdm.autonotebook.tqdm = tqdm.std.tqdm  # type: ignore[misc]
    tqdm.auto.trange = tqdm.std.trange
    tqdm.autonotebook.trange = tqdm.std.trange


def setup(*extensions: str) -> Path:
    """Prepare a notebook (see the module docstring); ``extensions`` default to plotly and tabulator."""
    import panel as pn

    pn.extension(*(extensions or PANEL_EXTENSIONS), inline=True)
    use_notebook_plotly_renderer()
    use_text_progress_bars()
    return repo_root()


def _merged(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in extra.items():
        out[k] = _merged(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def experiment_run(
    config: str | os.PathLike[str] | dict[str, Any], overrides: dict[str, Any] | None = None
) -> Path:
    """The experiment ``config`` makes, under ``<repo>/runs/notebooks/<kind>-<config stem>-<hash>``:
    opened when it is there, made (or finished, by resuming) when not.

    ``config`` is a config file (a relative path is relative to ``notebooks/``: :func:`param_path`) or the config
    itself as a dict; ``overrides`` are merged into it. The hash is over the validated config, so
    other parameters give another folder and the same ones open the same run again (also from
    another notebook).

    >>> run = experiment_run("../configs/dreaming/smoke.yaml")  # doctest: +SKIP
    >>> run = experiment_run({"experiment": "records_smoke"})  # doctest: +SKIP
    """
    from rsi_workbench.cli import experiment_module, save_report
    from rsi_workbench.config import ConfigError, read_config_file, validate_config

    src = Path("inline") if isinstance(config, dict) else param_path(config)
    data = _merged(config if isinstance(config, dict) else read_config_file(src), overrides or {})
    kind = data.get("experiment")
    if not isinstance(kind, str):
        raise ConfigError(f"{src}: experiment: required field is missing", file=str(src))
    mod = experiment_module(kind)
    cfg = validate_config(data, mod.Config, source=str(src))
    digest = hashlib.sha256(json.dumps(cfg.model_dump(mode="json"), sort_keys=True).encode()).hexdigest()[:8]
    out = runs_dir() / "notebooks" / f"{kind}-{src.stem}-{digest}"
    if not (out / "report.txt").exists():  # written last: a run without it is new or unfinished
        out.parent.mkdir(parents=True, exist_ok=True)
        mod.run_experiment(cfg, out, resume=out.exists())
        save_report(out, mod.report(out))
    return out
