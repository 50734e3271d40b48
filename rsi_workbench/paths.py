"""Where the repository is, wherever the code runs from (a notebook kernel's cwd is ``notebooks/``).

Relative paths in the workbench (``configs/...``, ``runs/...``) are relative to the repository
root. A notebook opened in JupyterLab runs with its own folder as the working directory, so every
notebook resolves its paths here instead of against the cwd::

    >>> from rsi_workbench.paths import repo_root, resolve
    >>> (repo_root() / "pyproject.toml").is_file()
    True
    >>> resolve("configs/dreaming/smoke.yaml") == repo_root() / "configs" / "dreaming" / "smoke.yaml"
    True

The root is ``$RSI_WORKBENCH_ROOT`` when set, else the nearest folder at or above the working
directory whose ``pyproject.toml`` names the project ``rsi-workbench``, else the checkout this
package was imported from.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

ROOT_ENV = "RSI_WORKBENCH_ROOT"
PROJECT_NAME = "rsi-workbench"


def is_repo_root(folder: str | os.PathLike[str]) -> bool:
    """Whether ``folder`` holds a ``pyproject.toml`` whose ``[project] name`` is ``rsi-workbench``."""
    f = Path(folder) / "pyproject.toml"
    try:
        return tomllib.loads(f.read_text(encoding="utf-8")).get("project", {}).get("name") == PROJECT_NAME
    except (OSError, tomllib.TOMLDecodeError):
        return False


def repo_root(start: str | os.PathLike[str] | None = None) -> Path:
    """The repository root: ``$RSI_WORKBENCH_ROOT``, else found upward from ``start`` (default: the cwd).

    Falls back to the checkout this package lives in (an editable install). Raises
    ``FileNotFoundError`` naming what was searched when none is found, or when
    ``$RSI_WORKBENCH_ROOT`` names a folder that is not the repository.
    """
    env = os.environ.get(ROOT_ENV)
    if env:
        root = Path(env).expanduser().resolve()
        if not is_repo_root(root):
            raise FileNotFoundError(f"{ROOT_ENV}={env}: no pyproject.toml naming {PROJECT_NAME!r} in {root}")
        return root
    here = Path(start if start is not None else Path.cwd()).expanduser().resolve()
    for folder in (here, *here.parents):
        if is_repo_root(folder):
            return folder
    package_checkout = Path(__file__).resolve().parent.parent
    if is_repo_root(package_checkout):
        return package_checkout
    raise FileNotFoundError(
        f"no {PROJECT_NAME} repository at or above {here} nor at {package_checkout}; "
        f"set {ROOT_ENV} to the repository folder"
    )


def resolve(path: str | os.PathLike[str], start: str | os.PathLike[str] | None = None) -> Path:
    """``path`` as an absolute path: unchanged when absolute (``~`` expanded), else under :func:`repo_root`.

    >>> resolve("/tmp/x") == Path("/tmp/x")
    True
    """
    p = Path(path).expanduser()
    return p if p.is_absolute() else repo_root(start) / p


def runs_dir(start: str | os.PathLike[str] | None = None) -> Path:
    """``<repo>/runs``: where notebooks write the runs they make, and where the dashboards look."""
    return repo_root(start) / "runs"
