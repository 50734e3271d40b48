"""A run is a directory: ``config.json``, ``events.jsonl``, ``artifacts/``, ``manifest.json``.

A finished run may be compacted (``events.jsonl.gz``, encoded artifacts; :mod:`rsi_workbench.records.compact`);
opening it reads both forms, and opening it to append expands the log first.

State is derived from events: re-opening a run (:meth:`Run.open`) replays nothing by itself but
gives the engine every recorded event, so it can rebuild its state and continue appending.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import platform
import socket
import sys
import time
import typing
import uuid
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from rsi_workbench.records.artifacts import ArtifactStore
from rsi_workbench.records.events import Event, EventLog, EventPayload, iter_events, log_exists
from rsi_workbench.records.events import _sanitize as sanitize_payload
from rsi_workbench.records.ordered import deferred_buffer

CONFIG_FILE = "config.json"
EVENTS_FILE = "events.jsonl"
MANIFEST_FILE = "manifest.json"
ARTIFACTS_DIR = "artifacts"


class RunError(RuntimeError):
    """A run directory is missing, incomplete, or already exists."""


class RunLocked(RunError):
    """Another process holds the run's single-writer lock."""


def default_runs_dir() -> Path:
    """Where runs land unless told otherwise: ``$RSI_WORKBENCH_RUNS`` or ``./runs``."""
    return Path(os.environ.get("RSI_WORKBENCH_RUNS", "runs"))


def new_run_id(prefix: str = "run") -> str:
    return f"{prefix}-{time.strftime('%Y%m%d-%H%M%S')}-{uuid.uuid4().hex[:6]}"


# Fields added to config models after runs were recorded, with the value every run made before them
# used. A stored config.json that lacks one means that value: resuming pins it
# (:func:`pin_config_additions`) and :meth:`Run.create` treats both spellings as one config.
CONFIG_ADDITIONS: dict[str, Any] = {
    "metrics_version": 1,
    "allow_failing_reference": False,
    "tie_break": "none",
    "tie_tolerance": 1e-9,
    "start_world": "initial",
    "start_policy": "initial",
    "reload_between_candidates": False,
    "brs_pages": "targets",
    "transfer_pages": [],
    "learning_verifier_calls": None,
}


def _model_of(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for a in typing.get_args(annotation):
        m = _model_of(a)
        if m is not None:
            return m
    return None


def pin_config_additions(data: dict[str, Any], model: type[BaseModel]) -> dict[str, Any]:
    """A stored config (``config.json`` as read) with every field of :data:`CONFIG_ADDITIONS` that the
    model has but the file lacks set to the value the run was made with, at any nesting depth."""
    out = dict(data)
    for name, field in model.model_fields.items():
        key = field.alias or name
        if key not in out:
            if name in CONFIG_ADDITIONS:
                out[key] = CONFIG_ADDITIONS[name]
            continue
        sub = _model_of(field.annotation)
        if sub is not None and isinstance(out[key], dict):
            out[key] = pin_config_additions(out[key], sub)
    return out


def same_config(stored: Any, new: Any) -> bool:
    """``stored == new``, except that a :data:`CONFIG_ADDITIONS` key absent from ``stored`` equals
    ``new`` stating the value runs used before that key existed."""
    if isinstance(stored, dict) and isinstance(new, dict):
        keys = set(stored) | set(new)
        for k in keys:
            if k not in stored:
                if not (k in CONFIG_ADDITIONS and new[k] == CONFIG_ADDITIONS[k]):
                    return False
            elif k not in new or not same_config(stored[k], new[k]):
                return False
        return True
    if isinstance(stored, list) and isinstance(new, list):
        return len(stored) == len(new) and all(same_config(a, b) for a, b in zip(stored, new, strict=True))
    return bool(stored == new)


def _config_dict(config: BaseModel | dict[str, Any]) -> dict[str, Any]:
    if isinstance(config, BaseModel):
        return config.model_dump(mode="json")
    return json.loads(json.dumps(config, default=str))


class Run:
    """Handle on a run directory. Use :meth:`create` for a new run and :meth:`open` to resume/read."""

    def __init__(
        self,
        path: Path,
        *,
        mode: Literal["r", "a"],
        exclusive: bool = False,
        fsync: Literal["commit", "always", "never"] = "commit",
    ):
        self.path = Path(path)
        if not (self.path / CONFIG_FILE).exists():
            raise RunError(f"{self.path} is not a run directory (no {CONFIG_FILE})")
        self.mode = mode
        self.config: dict[str, Any] = json.loads((self.path / CONFIG_FILE).read_text())
        mp = self.path / MANIFEST_FILE
        self.manifest: dict[str, Any] = json.loads(mp.read_text()) if mp.exists() else {}
        self.artifacts = ArtifactStore(self.path / ARTIFACTS_DIR, create=mode == "a")
        self._writer_lock_fd: int | None = None
        if exclusive:
            self._take_writer_lock()
        self.log: EventLog | None = EventLog(self.path / EVENTS_FILE, fsync=fsync) if mode == "a" else None

    # -- construction ----------------------------------------------------------------------------
    @classmethod
    def create(
        cls,
        path: str | os.PathLike[str],
        config: BaseModel | dict[str, Any],
        *,
        kind: str = "run",
        exist_ok: bool = False,
        exclusive: bool = False,
        fsync: Literal["commit", "always", "never"] = "commit",
        **manifest: Any,
    ) -> Run:
        """Create a run directory with its frozen config; with ``exist_ok`` re-open an existing one."""
        path = Path(path)
        cfg = _config_dict(config)
        if (path / CONFIG_FILE).exists():
            if not exist_ok:
                raise RunError(f"run {path} already exists; use Run.open() or `rsi-workbench resume {path}`")
            existing = json.loads((path / CONFIG_FILE).read_text())
            if not same_config(existing, cfg):
                raise RunError(
                    f"run {path} exists with a different config; refusing to mix configs in one run"
                )
            return cls(path, mode="a", exclusive=exclusive, fsync=fsync)
        path.mkdir(parents=True, exist_ok=True)
        (path / ARTIFACTS_DIR).mkdir(exist_ok=True)
        _atomic_write(path / CONFIG_FILE, json.dumps(cfg, indent=2, sort_keys=True))
        man = {
            "run_id": path.name,
            "kind": kind,
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "python": sys.version.split()[0],
            "platform": platform.platform(),
            "host": socket.gethostname(),
            "schema": 1,
            **manifest,
        }
        _atomic_write(path / MANIFEST_FILE, json.dumps(man, indent=2, sort_keys=True, default=str))
        return cls(path, mode="a", exclusive=exclusive, fsync=fsync)

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        *,
        mode: Literal["r", "a"] = "r",
        exclusive: bool = False,
        fsync: Literal["commit", "always", "never"] = "commit",
    ) -> Run:
        """Open an existing run to read (``"r"``) or to resume appending (``"a"``)."""
        return cls(Path(path), mode=mode, exclusive=exclusive, fsync=fsync)

    # -- events ----------------------------------------------------------------------------------
    def append(
        self, kind: str | EventPayload, payload: dict[str, Any] | None = None, *, cycle: int | None = None
    ) -> Event:
        """Append an event: ``run.append("kind", {...}, cycle=k)`` or ``run.append(TypedPayload(...))``."""
        if self.log is None:
            raise RunError(f"run {self.path} was opened read-only")
        if isinstance(kind, EventPayload):
            if payload is not None:
                raise TypeError("pass either a typed payload or kind + payload, not both")
            payload = kind.model_dump(mode="json")
            kind = type(kind).kind
        buf = deferred_buffer()  # inside a parallel phase: written later, in item order (records.ordered)
        if buf is not None:
            held = sanitize_payload(payload or {})  # a copy: later changes to the caller's dict do not leak
            buf.entries.append((self, kind, held, cycle))
            return Event(seq=-1, kind=kind, cycle=cycle, payload=held, time=0.0)
        return self.log.append(kind, payload, cycle=cycle)

    def commit(self) -> None:
        """Group commit (fsync) — call at the end of each cycle."""
        if self.log is not None:
            self.log.commit()

    def events(self, kind: str | None = None) -> list[Event]:
        evs = list(iter_events(self.path / EVENTS_FILE))
        return [e for e in evs if kind is None or e.kind == kind]

    def fingerprint(self) -> tuple[int, str]:
        """(event count, digest of the decoded events): what a parent records of a finished child run
        (:func:`rsi_workbench.records.children.child_record`); compaction does not change it."""
        evs = self.events()
        return len(evs), events_digest(evs)

    def update_manifest(self, **fields: Any) -> None:
        self.manifest.update(fields)
        _atomic_write(
            self.path / MANIFEST_FILE, json.dumps(self.manifest, indent=2, sort_keys=True, default=str)
        )

    # -- artifacts -------------------------------------------------------------------------------
    def put_artifact(self, data: bytes, *, name: str = "", **meta: Any) -> str:
        return self.artifacts.put(data, name=name, **meta)

    def get_artifact(self, sha: str) -> bytes:
        return self.artifacts.get(sha)

    # -- locks / lifecycle -----------------------------------------------------------------------
    def _take_writer_lock(self) -> None:
        fd = os.open(self.path / "run.lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise RunLocked(f"run {self.path} is held by another writer (run.lock)") from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._writer_lock_fd = fd

    def close(self) -> None:
        if self.log is not None:
            self.log.close()
            self.log = None
        if self._writer_lock_fd is not None:
            fcntl.flock(self._writer_lock_fd, fcntl.LOCK_UN)
            os.close(self._writer_lock_fd)
            self._writer_lock_fd = None

    def __enter__(self) -> Run:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Run({str(self.path)!r}, kind={self.manifest.get('kind')!r})"


def events_digest(events: list[Event]) -> str:
    """sha256 over the canonical JSON of each decoded event (all its fields, keys sorted), one line
    each, in order: the same for a plain and a compacted log of the same events."""
    h = hashlib.sha256()
    for e in events:
        obj = {
            "schema": e.schema,
            "seq": e.seq,
            "time": e.time,
            "kind": e.kind,
            "cycle": e.cycle,
            "payload": e.payload,
        }
        h.update(json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode())
        h.update(b"\n")
    return h.hexdigest()


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def has_events(run_dir: str | os.PathLike[str]) -> bool:
    """Whether ``run_dir`` holds an event log, plain (``events.jsonl``) or compacted (``.gz``)."""
    return log_exists(Path(run_dir) / EVENTS_FILE)


def list_runs(root: str | os.PathLike[str] | None = None) -> list[Path]:
    """Every run directory (a folder with ``config.json`` and an event log, plain or compacted) below ``root``."""
    root = Path(root) if root is not None else default_runs_dir()
    if not root.exists():
        return []
    return sorted(p.parent for p in root.rglob(CONFIG_FILE) if has_events(p.parent))
