"""A cross-run model-call cache (``cache: true`` on a model block), shared by every run that uses it.

An entry is the answer to one request, keyed exactly like the replay key: the request key
(:func:`~rsi_workbench.models.interface.request_key`: call kind, backend identity, model, messages
or prompt, sampling parameters, JSON Schema, seed) plus the request's ordinal among identical
requests of its run, so the third identical sampled request of a run is answered by the third of
an earlier run, never by its first. Entries live under ``<models dir>/cache/`` (``$RSI_WORKBENCH_MODELS``,
see :func:`~rsi_workbench.models.prepare.models_dir`), one JSON file per key:
``v1/<first two hex digits>/<sha256>.json``.

Why one file per key: a reader needs no lock (an entry is written to a temporary file in its
directory and renamed into place, so it is either absent or complete), concurrent runs writing
different keys never wait on each other, and ``clear`` is a directory removal. A
:class:`filelock.FileLock` (``cache/.lock``) serialises writers and ``clear``: a writer that finds
the entry already there keeps it (first writer wins, so an entry never changes once written), and
the hit/miss counters in ``stats.json`` are updated under the same lock. A sqlite or duckdb file
would need its own locking discipline across processes on the same files and cannot be inspected
with ``ls``; the number of entries of a workbench cache (thousands, not millions) does not need it.

The recorder (:class:`~rsi_workbench.models.record.RecordedLLM`) consults the cache after the run's
own records and before a live call; a hit is recorded as a ``model_call`` event with
``cached: true`` and charged to the budgets exactly like the live call it replaces, so a run's
decisions and table never depend on how warm the cache was.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

VERSION = "v1"  # the entry layout; a new layout gets a new directory, old entries are left alone


def cache_dir() -> Path:
    """``<models dir>/cache`` (the models directory: ``$RSI_WORKBENCH_MODELS`` or the user cache)."""
    from rsi_workbench.models.prepare import models_dir

    return models_dir() / "cache"


def entry_key(key: str, ordinal: int) -> str:
    """The cache key of a request: sha256 of its replay key and ordinal."""
    return hashlib.sha256(f"{key}#{int(ordinal)}".encode()).hexdigest()


class CallCache:
    """Model answers by (request key, ordinal), on disk, safe for concurrent processes."""

    def __init__(self, root: str | os.PathLike[str] | None = None):
        self.root = Path(root) if root is not None else cache_dir()

    def _lock(self) -> Any:
        from filelock import FileLock

        self.root.mkdir(parents=True, exist_ok=True)
        return FileLock(str(self.root / ".lock"), timeout=120)

    def _path(self, key: str, ordinal: int) -> Path:
        h = entry_key(key, ordinal)
        return self.root / VERSION / h[:2] / f"{h}.json"

    def get(self, key: str, ordinal: int) -> dict[str, Any] | None:
        """The stored response (a ``ChatResult`` dict) of (key, ordinal), or None; counts the hit or miss."""
        p = self._path(key, ordinal)
        try:
            entry = json.loads(p.read_text())
        except FileNotFoundError:
            entry = None
        except (OSError, ValueError):  # unreadable: treated as absent (a write replaces it)
            entry = None
        ok = isinstance(entry, dict) and entry.get("key") == key and entry.get("ordinal") == ordinal
        self._count("hits" if ok else "misses")
        return dict(entry["response"]) if ok and entry is not None else None

    def contains(self, key: str, ordinal: int) -> bool:
        """Whether (key, ordinal) has an entry, without reading it or counting a hit or miss."""
        return self._path(key, ordinal).exists()

    def put(self, key: str, ordinal: int, kind: str, response: dict[str, Any]) -> bool:
        """Store ``response`` under (key, ordinal) unless an entry is already there (first writer
        wins); written atomically (temporary file, then rename). True when this call wrote it."""
        p = self._path(key, ordinal)
        entry = {"key": key, "ordinal": int(ordinal), "kind": kind, "response": response}
        data = json.dumps(entry, sort_keys=True, separators=(",", ":"), default=str)
        with self._lock():
            if p.exists():
                return False
            p.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=p.parent, prefix=".tmp-", suffix=".json")
            try:
                with os.fdopen(fd, "w") as f:
                    f.write(data)
                    f.flush()
                    os.fsync(f.fileno())
                os.replace(tmp, p)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
            self._bump({"writes": 1})
        return True

    def _count(self, what: str) -> None:
        with self._lock():
            self._bump({what: 1})

    def _bump(self, inc: dict[str, int]) -> None:
        """Add ``inc`` to the counters in ``stats.json`` (the caller holds the lock)."""
        p = self.root / "stats.json"
        try:
            counts = json.loads(p.read_text())
        except (OSError, ValueError):
            counts = {}
        for k, v in inc.items():
            counts[k] = int(counts.get(k, 0)) + v
        tmp = p.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(counts, sort_keys=True))
        os.replace(tmp, p)

    def stats(self) -> dict[str, Any]:
        """Entries, bytes on disk, and the hit/miss/write counters since the last ``clear``."""
        entries = size = 0
        base = self.root / VERSION
        if base.exists():
            for f in base.glob("*/*.json"):
                entries += 1
                size += f.stat().st_size
        try:
            counts = json.loads((self.root / "stats.json").read_text())
        except (OSError, ValueError):
            counts = {}
        return {
            "path": str(self.root),
            "entries": entries,
            "bytes": size,
            **{k: int(counts.get(k, 0)) for k in ("hits", "misses", "writes")},
        }

    def clear(self) -> int:
        """Remove every entry and reset the counters (under the lock); returns the entries removed."""
        if not self.root.exists():
            return 0
        with self._lock():
            n = (
                sum(1 for _ in (self.root / VERSION).glob("*/*.json"))
                if (self.root / VERSION).exists()
                else 0
            )
            shutil.rmtree(self.root / VERSION, ignore_errors=True)
            (self.root / "stats.json").unlink(missing_ok=True)
        return n
