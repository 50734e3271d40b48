"""Append-only event log: one JSON object per line, gap-free ``seq``, one writer lock.

Every append is handed to the operating system as one whole newline-terminated line in a single
``os.write`` on an ``O_APPEND`` descriptor, so an event acknowledged by :meth:`EventLog.append` survives
a SIGKILL of the writer. ``fsync`` happens at commit points (:meth:`EventLog.commit`, group commit per
cycle) or per event when ``fsync="always"``. A crash mid-write can leave a torn last line; readers
report it (:class:`TornLineWarning`) and the next writer truncates it before appending.

A finished run's log may be stored compacted as ``events.jsonl.gz`` (:mod:`rsi_workbench.records.compact`):
every reader here reads either form, byte offsets included, and a writer turns it back into the plain
append-only file before its first append.
"""

from __future__ import annotations

import dataclasses
import fcntl
import gzip
import io
import json
import math
import os
import time
import warnings
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO, ClassVar, Literal

from pydantic import BaseModel, ConfigDict

SCHEMA_VERSION = 1


class EventLogError(RuntimeError):
    """The event log is malformed (bad JSON mid-file, a gap or duplicate ``seq``)."""


class TornLineWarning(UserWarning):
    """The last line of an event log was incomplete (a crash mid-write); it is ignored or truncated."""


@dataclasses.dataclass(frozen=True)
class Event:
    """One recorded event. ``payload`` holds the kind-specific fields."""

    seq: int
    kind: str
    cycle: int | None
    payload: dict[str, Any]
    time: float
    schema: int = SCHEMA_VERSION

    def to_json(self) -> str:
        obj = {
            "schema": self.schema,
            "seq": self.seq,
            "time": self.time,
            "kind": self.kind,
            "cycle": self.cycle,
            "payload": self.payload,
        }
        return json.dumps(
            obj, separators=(",", ":"), ensure_ascii=False, default=_json_default, allow_nan=False
        )

    @classmethod
    def from_obj(cls, obj: dict[str, Any]) -> Event:
        return cls(
            seq=int(obj["seq"]),
            kind=str(obj["kind"]),
            cycle=obj.get("cycle"),
            payload=obj.get("payload") or {},
            time=float(obj.get("time", 0.0)),
            schema=int(obj.get("schema", SCHEMA_VERSION)),
        )


class EventPayload(BaseModel):
    """Base class for typed events. Subclasses set ``kind`` and declare their fields.

    ``run.append(GateDecision(...), cycle=k)`` writes ``kind`` and ``model_dump()`` as the payload;
    ``GateDecision.from_event(ev)`` reads it back validated.
    """

    model_config = ConfigDict(extra="forbid")
    kind: ClassVar[str] = "event"

    @classmethod
    def from_event(cls, event: Event) -> Any:
        if event.kind != cls.kind:
            raise EventLogError(f"event seq={event.seq} has kind {event.kind!r}, expected {cls.kind!r}")
        return cls.model_validate(event.payload)


def _json_default(o: Any) -> Any:
    """Make numpy scalars/arrays, paths, sets and pydantic models JSON-serialisable."""
    if isinstance(o, BaseModel):
        return o.model_dump(mode="json")
    if dataclasses.is_dataclass(o) and not isinstance(o, type):
        return dataclasses.asdict(o)
    if isinstance(o, Path):
        return str(o)
    if isinstance(o, set | frozenset):
        return sorted(o)
    try:
        import numpy as np

        if isinstance(o, np.generic):
            return o.item()
        if isinstance(o, np.ndarray):
            return o.tolist()
    except ImportError:  # pragma: no cover
        pass
    raise TypeError(f"object of type {type(o).__name__} is not JSON serialisable")


def _sanitize(obj: Any) -> Any:
    """Replace non-finite floats by None so every line is strict JSON."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _sanitize(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_sanitize(v) for v in obj]
    return obj


@dataclasses.dataclass
class ReadResult:
    events: list[Event]
    torn_tail: bytes | None  # bytes of an incomplete last line, if any
    valid_bytes: int  # offset just past the last complete line


def compressed_path(path: str | os.PathLike[str]) -> Path:
    """Where the compacted form of the log at ``path`` lives: ``events.jsonl`` -> ``events.jsonl.gz``."""
    path = Path(path)
    return path.with_name(path.name + ".gz")


def _complete_bytes(data: bytes) -> int:
    """Length of ``data`` up to and including its last newline (its complete lines)."""
    return data.rfind(b"\n") + 1


def _gunzip(gz: Path) -> bytes:
    try:
        return gzip.decompress(gz.read_bytes())
    except (OSError, EOFError, ValueError, zlib.error) as e:
        raise EventLogError(f"{gz}: the compacted event log cannot be read: {e}") from e


def log_source(path: str | os.PathLike[str]) -> Path | None:
    """The file that holds the log at ``path`` (``events.jsonl``): itself, its compacted
    ``events.jsonl.gz``, or None when neither exists.

    Both exist only when a compaction or an expansion was cut off between its rename and its unlink;
    both then hold the same events. The one with more complete bytes wins, the plain file on a tie
    (and whenever the compressed one cannot be read), so every reader picks the same file.
    """
    plain, gz = Path(path), compressed_path(path)
    if not gz.exists():
        return plain if plain.exists() else None
    if not plain.exists():
        return gz
    try:
        g = _complete_bytes(_gunzip(gz))
    except EventLogError:
        return plain
    return plain if _complete_bytes(plain.read_bytes()) >= g else gz


def log_exists(path: str | os.PathLike[str]) -> bool:
    """Whether the log at ``path`` exists, plain or compacted."""
    return Path(path).exists() or compressed_path(path).exists()


def _read_from(path: Path, from_offset: int = 0) -> bytes | None:
    """The log's bytes from ``from_offset`` on, plain or compacted (None: no log). A compaction or
    expansion in another process may remove the file just chosen: then the other one is read."""
    for attempt in (0, 1):
        src = log_source(path)
        if src is None:
            return None
        try:
            if src != path:
                return _gunzip(src)[from_offset:]
            with open(path, "rb") as f:
                f.seek(from_offset)
                return f.read()
        except (FileNotFoundError, EventLogError):
            if attempt:
                raise
    return None  # pragma: no cover - the loop returns or raises


def log_bytes(path: str | os.PathLike[str]) -> bytes:
    """The whole log at ``path`` as written (decompressed if compacted); ``b""`` if there is none."""
    return _read_from(Path(path)) or b""


def log_size(path: str | os.PathLike[str]) -> int:
    """The log's size in plain bytes (what offsets count), compacted or not; 0 if there is none.

    For a compacted log this is the gzip trailer's length field (exact below 4 GiB)."""
    src = log_source(path)
    if src is None:
        return 0
    if src == Path(path):
        return src.stat().st_size
    with open(src, "rb") as f:
        f.seek(-4, os.SEEK_END)
        return int.from_bytes(f.read(4), "little")


def open_log(path: str | os.PathLike[str]) -> BinaryIO:
    """The log at ``path`` opened for binary reading (plain or compacted), e.g. to scan its lines."""
    path = Path(path)
    for _attempt in (0, 1):
        src = log_source(path)
        if src is None:
            break
        try:
            f = open(src, "rb")  # once open, a compaction removing the file does not matter
        except FileNotFoundError:
            continue
        if src == path:
            return f
        with f:
            try:
                return io.BytesIO(gzip.decompress(f.read()))
            except (OSError, EOFError, zlib.error) as e:
                raise EventLogError(f"{src}: the compacted event log cannot be read: {e}") from e
    raise FileNotFoundError(f"no event log at {path}")


def read_log(
    path: str | os.PathLike[str], *, from_offset: int = 0, expect_seq: int | None = None
) -> ReadResult:
    """Read complete lines of an event log (plain or compacted), validating ``seq`` continuity.

    A torn (unterminated) last line is reported, not raised. Malformed JSON on a complete line,
    or a gap / duplicate in ``seq``, raises :class:`EventLogError` naming the line number.
    """
    path = Path(path)
    data = _read_from(path, from_offset)
    if data is None:
        return ReadResult([], None, 0)
    return _parse(path, data, from_offset, expect_seq)


def _parse(path: Path, data: bytes, from_offset: int, expect_seq: int | None) -> ReadResult:
    events: list[Event] = []
    pos = 0
    lineno = 0
    next_seq = expect_seq
    torn: bytes | None = None
    while pos < len(data):
        nl = data.find(b"\n", pos)
        if nl < 0:
            torn = data[pos:]
            break
        lineno += 1
        raw = data[pos:nl]
        pos = nl + 1
        if not raw.strip():
            raise EventLogError(
                f"{path}: empty line at byte {from_offset + pos - 1} (line {lineno} from offset)"
            )
        try:
            obj = json.loads(raw)
            ev = Event.from_obj(obj)
        except (ValueError, KeyError, TypeError) as e:
            raise EventLogError(f"{path}: line {lineno} is not a valid event: {e}") from e
        if next_seq is None:
            next_seq = ev.seq
        if ev.seq != next_seq:
            what = "duplicate" if ev.seq < next_seq else "gap in"
            raise EventLogError(f"{path}: line {lineno}: {what} seq (expected {next_seq}, found {ev.seq})")
        next_seq += 1
        events.append(ev)
    return ReadResult(events, torn, from_offset + pos)


def iter_events(path: str | os.PathLike[str]) -> Iterator[Event]:
    """Yield events of a log, warning (not failing) on a torn last line."""
    res = read_log(path, expect_seq=0)
    if res.torn_tail is not None:
        warnings.warn(
            f"{path}: torn last line ({len(res.torn_tail)} bytes) ignored — the writer crashed mid-append",
            TornLineWarning,
            stacklevel=2,
        )
    yield from res.events


def fsync_dir(path: str | os.PathLike[str]) -> None:
    """Make a rename or unlink in directory ``path`` durable."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_durable(path: Path, data: bytes) -> None:
    """Write ``data`` as ``path`` all or nothing: a temp name, fsync, rename, fsync of the folder."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    fsync_dir(path.parent)


def expand_log(path: str | os.PathLike[str]) -> bool:
    """Turn a compacted log back into the plain append-only ``events.jsonl`` (before appending).

    The plain file is written whole under a temp name and renamed before the compressed one is
    removed, so a kill at any point leaves at least one complete copy (:func:`log_source` picks it).
    Call with the log's writer lock held. Returns whether there was a compacted log."""
    path = Path(path)
    gz = compressed_path(path)
    if not gz.exists():
        return False
    if log_source(path) == gz:
        write_durable(path, _gunzip(gz))
    gz.unlink()
    fsync_dir(path.parent)
    return True


class EventLog:
    """The single writer path for ``events.jsonl``.

    Appends from several processes are serialised through an exclusive ``flock`` on
    ``events.jsonl.lock``; each writer re-reads only the bytes other writers added since its own last
    append to learn the next ``seq``.
    """

    def __init__(
        self, path: str | os.PathLike[str], *, fsync: Literal["commit", "always", "never"] = "commit"
    ):
        self.path = Path(path)
        self.fsync = fsync
        self.lock_path = self.path.with_name(self.path.name + ".lock")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock_fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        self._fd = -1
        self.repaired: bytes | None = None  # the torn tail truncated when opening, if any
        self._dirty = False
        with self._locked():
            self._reopen()

    def _reopen(self) -> None:
        """(Re)open the plain log for appending, expanding a compacted one first (lock held)."""
        if self._fd >= 0:
            os.close(self._fd)
        expand_log(self.path)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self._end = 0  # byte offset we know the file is consistent up to
        self._next_seq = 0
        self._sync_tail(repair=True)

    def _still_current(self) -> bool:
        """Whether our descriptor is still the file at ``path`` (a compaction replaces it; lock held)."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return False
        own = os.fstat(self._fd)
        return (st.st_ino, st.st_dev) == (own.st_ino, own.st_dev)

    # -- locking ---------------------------------------------------------------------------------
    class _Lock:
        def __init__(self, fd: int):
            self.fd = fd

        def __enter__(self) -> None:
            fcntl.flock(self.fd, fcntl.LOCK_EX)

        def __exit__(self, *exc: object) -> None:
            fcntl.flock(self.fd, fcntl.LOCK_UN)

    def _locked(self) -> EventLog._Lock:
        return EventLog._Lock(self._lock_fd)

    def _sync_tail(self, *, repair: bool) -> None:
        """Catch up with bytes appended by other writers; truncate a torn tail (lock held)."""
        size = os.fstat(self._fd).st_size
        if size == self._end:
            return
        res = read_log(self.path, from_offset=self._end, expect_seq=self._next_seq)
        if res.events:
            self._next_seq = res.events[-1].seq + 1
        if res.torn_tail is not None:
            if not repair:  # pragma: no cover - only when another writer is mid-crash
                raise EventLogError(f"{self.path}: torn line found while appending")
            warnings.warn(
                f"{self.path}: torn last line ({len(res.torn_tail)} bytes) truncated before appending",
                TornLineWarning,
                stacklevel=3,
            )
            self.repaired = res.torn_tail
            os.truncate(self.path, res.valid_bytes)
            os.fsync(self._fd)
        self._end = res.valid_bytes

    # -- writing ---------------------------------------------------------------------------------
    @property
    def next_seq(self) -> int:
        return self._next_seq

    def append(self, kind: str, payload: dict[str, Any] | None = None, *, cycle: int | None = None) -> Event:
        """Append one event; returns it once the whole line has been written to the OS."""
        payload = _sanitize(payload or {})
        with self._locked():
            if not self._still_current():  # compacted since we opened it: expand and catch up
                self._reopen()
            self._sync_tail(repair=True)
            ev = Event(seq=self._next_seq, kind=kind, cycle=cycle, payload=payload, time=time.time())
            line = (ev.to_json() + "\n").encode("utf-8")
            n = os.write(self._fd, line)
            if n != len(line):  # pragma: no cover - regular files write whole buffers
                raise OSError(f"short write to {self.path}: {n} of {len(line)} bytes")
            if self.fsync == "always":
                os.fsync(self._fd)
            else:
                self._dirty = True
            self._end += n
            self._next_seq += 1
        return ev

    def commit(self) -> None:
        """Group commit: make every appended event durable (``fsync``)."""
        if self._dirty and self.fsync != "never":
            os.fsync(self._fd)
        self._dirty = False

    def close(self) -> None:
        if self._fd >= 0:
            self.commit()
            os.close(self._fd)
            os.close(self._lock_fd)
            self._fd = self._lock_fd = -1

    def __enter__(self) -> EventLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
