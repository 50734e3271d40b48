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
different keys never wait on each other, and ``clear`` is a directory removal. A lock file
(``cache/.lock``, ``flock``, compatible with :class:`filelock.FileLock`) serialises writers and ``clear``: a writer that finds
the entry already there keeps it (first writer wins, so an entry never changes once written), and
the hit/miss counters in ``stats.json`` are updated under the same lock. A sqlite or duckdb file
would need its own locking discipline across processes on the same files and cannot be inspected
with ``ls``; the number of entries of a workbench cache (thousands, not millions) does not need it.

A cache directory may be shared, so nothing is written through a path someone else could have
planted: every write (an entry, ``stats.json``) goes to a fresh ``tempfile.mkstemp`` file in the
directory it lands in and is renamed over its name with ``os.replace`` (which replaces a planted
link, never its target); the lock file is opened with ``O_NOFOLLOW`` and never truncated, so a
``.lock`` link is refused with :class:`CacheError` naming it and its target is left alone; an entry
directory (``v1``, ``v1/<2 hex>``) that is a link is refused the same way.

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
import stat
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

VERSION = "v1"  # the entry layout; a new layout gets a new directory, old entries are left alone


def cache_dir() -> Path:
    """``<models dir>/cache`` (the models directory: ``$RSI_WORKBENCH_MODELS`` or the user cache)."""
    from rsi_workbench.models.prepare import models_dir

    return models_dir() / "cache"


class CacheError(OSError):
    """A cache directory holds a link (or another non-regular file) where the cache writes."""


@contextmanager
def nofollow_lock(path: str | os.PathLike[str], timeout: float = 120.0) -> Iterator[None]:
    """An exclusive ``flock`` on ``path`` (the lock :class:`filelock.FileLock` takes on POSIX),
    refusing a link or a non-regular file at ``path`` with :class:`CacheError` instead of following
    it; the file is created if absent and never truncated or written."""
    import fcntl

    p = Path(path)
    try:
        st = os.lstat(p)
    except FileNotFoundError:
        st = None
    if st is not None and not stat.S_ISREG(st.st_mode):
        what = f"a link to {os.readlink(p)}" if stat.S_ISLNK(st.st_mode) else "not a regular file"
        raise CacheError(
            f"refusing the lock file {p}: it is {what}; remove it (a lock file is created afresh)"
        )
    try:
        fd = os.open(
            p, os.O_RDONLY | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0), 0o644
        )
    except OSError as e:
        if os.path.islink(p):  # planted between the check and the open
            raise CacheError(f"refusing the lock file {p}: it is a link to {os.readlink(p)}") from e
        raise
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise CacheError(f"refusing the lock file {p}: it is not a regular file")
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise TimeoutError(f"the lock {p} was held for more than {timeout:g} s") from None
                time.sleep(0.01)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _real_dir(d: Path) -> None:
    """Refuse ``d`` when it is a link or not a directory (created when absent)."""
    try:
        st = os.lstat(d)
    except FileNotFoundError:
        d.mkdir(parents=True, exist_ok=True)
        st = os.lstat(d)
    if not stat.S_ISDIR(st.st_mode):
        what = f"a link to {os.readlink(d)}" if stat.S_ISLNK(st.st_mode) else "not a directory"
        raise CacheError(f"refusing the cache directory {d}: it is {what}")


def replace_file(dest: Path, data: str) -> None:
    """Write ``data`` to ``dest`` through a fresh temporary file in its directory and
    ``os.replace`` (a link planted at ``dest`` or at any other name is replaced, never followed)."""
    fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=".tmp-", suffix=dest.suffix)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, dest)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def entry_key(key: str, ordinal: int) -> str:
    """The cache key of a request: sha256 of its replay key and ordinal."""
    return hashlib.sha256(f"{key}#{int(ordinal)}".encode()).hexdigest()


class CallCache:
    """Model answers by (request key, ordinal), on disk, safe for concurrent processes."""

    def __init__(self, root: str | os.PathLike[str] | None = None):
        self.root = Path(root) if root is not None else cache_dir()

    def _lock(self) -> Any:
        self.root.mkdir(parents=True, exist_ok=True)
        return nofollow_lock(self.root / ".lock", timeout=120)

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
            if os.path.lexists(p):
                return False
            _real_dir(self.root / VERSION)
            _real_dir(p.parent)
            replace_file(p, data)
            self._bump({"writes": 1})
        return True

    def _count(self, what: str) -> None:
        with self._lock():
            self._bump({what: 1})

    def _bump(self, inc: dict[str, int]) -> None:
        """Add ``inc`` to the counters in ``stats.json`` (the caller holds the lock)."""
        p = self.root / "stats.json"
        counts = _counts(p)
        for k, v in inc.items():
            counts[k] = counts.get(k, 0) + v
        replace_file(p, json.dumps(counts, sort_keys=True))

    def stats(self) -> dict[str, Any]:
        """Entries, bytes on disk, and the hit/miss/write counters since the last ``clear``."""
        entries = size = 0
        base = self.root / VERSION
        if base.exists():
            for f in base.glob("*/*.json"):
                entries += 1
                size += f.stat().st_size
        counts = _counts(self.root / "stats.json")
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
            if os.path.islink(self.root / VERSION):
                _real_dir(self.root / VERSION)  # refuses it: rmtree would leave the link's entries
            shutil.rmtree(self.root / VERSION, ignore_errors=True)
            (self.root / "stats.json").unlink(missing_ok=True)
        return n


def _counts(p: Path) -> dict[str, int]:
    """The counters of a ``stats.json`` (a missing, unreadable or malformed one counts nothing)."""
    try:
        raw = json.loads(p.read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(raw, dict):
        return {}
    return {str(k): v for k, v in raw.items() if isinstance(v, int) and not isinstance(v, bool)}
