"""Compaction of finished runs: the event log gzip-compressed, artifacts losslessly encoded and packed.

``rsi-workbench runs compact DIR...`` (and an experiment whose runs finish, where it asks for it)
turns each run below DIR into its compact form:

* ``events.jsonl`` -> ``events.jsonl.gz``: written whole under a temp name, fsynced and renamed,
  only then is the plain file removed; every reader in :mod:`rsi_workbench.records.events` reads
  either form, and the next writer expands it back to the plain append-only file before appending
  (``resume``, ``run --extend``). A kill at any point leaves at least one complete copy.
* ``artifacts/``: each blob encoded losslessly (:func:`~rsi_workbench.records.artifacts.encode_blob`),
  large ones as ``<sha>.z`` (hard links of one file where other runs hold the same blob), small
  ones inline in ``index.json`` with every sidecar; the loose files go only after the encoded
  forms and the index are durable.

Nothing a report, a resume or the gate tuner reads changes: the same events, the same artifact bytes.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import dataclasses
import fcntl
import gzip
import json
import os
import re
import warnings
from collections.abc import Iterable, Iterator
from pathlib import Path

from rsi_workbench.records.artifacts import (
    INDEX_FILE,
    PACKED_SUFFIX,
    ArtifactStore,
    decode_blob,
    encode_blob,
    read_index,
    sha256_bytes,
)
from rsi_workbench.records.events import (
    EventLogError,
    TornLineWarning,
    compressed_path,
    fsync_dir,
    log_source,
    read_log,
    write_durable,
)
from rsi_workbench.records.run import ARTIFACTS_DIR, EVENTS_FILE, list_runs

INLINE_MAX = 2048  # encoded blobs up to this size live inline in index.json (no 4 KiB file each)
_SHA = re.compile(r"^[0-9a-f]{64}$")


@dataclasses.dataclass
class CompactResult:
    """What compacting one run did (sizes in plain bytes: before = as written, after = as stored)."""

    path: Path
    log_before: int = 0
    log_after: int = 0
    artifacts: int = 0  # blobs compacted now
    artifact_bytes_before: int = 0
    artifact_bytes_after: int = 0
    linked: int = 0  # blobs stored as a hard link of an identical one in another run
    skipped: str | None = None  # why the run was left as it was


class Twins:
    """Compacted blobs already on disk by sha256, so an identical blob in another run becomes a hard link."""

    def __init__(self) -> None:
        self.paths: dict[str, Path] = {}

    def scan(self, root: str | os.PathLike[str]) -> Twins:
        for p in Path(root).rglob(f"*{PACKED_SUFFIX}"):
            sha = p.name[: -len(PACKED_SUFFIX)]
            if p.parent.name == ARTIFACTS_DIR and _SHA.match(sha):
                self.paths.setdefault(sha, p)
        return self

    @classmethod
    def near(cls, run_dir: str | os.PathLike[str], depth: int = 1) -> Twins:
        """The compacted blobs of the runs ``depth`` folders around ``run_dir``: 1 = its siblings,
        2 = every run of the folder above (e.g. ``runs/<grid>/<run>``: the runs of every grid)."""
        twins = cls()
        for p in Path(run_dir).parents[depth - 1].glob(f"{'*/' * depth}{ARTIFACTS_DIR}/*{PACKED_SUFFIX}"):
            if _SHA.match(sha := p.name[: -len(PACKED_SUFFIX)]):
                twins.paths.setdefault(sha, p)
        return twins


@contextlib.contextmanager
def _log_lock(log: Path) -> Iterator[None]:
    """The event log's writer lock (the one :class:`~rsi_workbench.records.events.EventLog` takes)."""
    fd = os.open(log.with_name(log.name + ".lock"), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def _held_by_writer(run_dir: Path) -> bool:
    """Whether an exclusive writer holds ``run.lock`` (then the run is in use, not finished)."""
    lock = run_dir / "run.lock"
    if not lock.exists():
        return False
    fd = os.open(lock, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # closing drops the lock if we took it
    return False


def _remove_stale_temps(folder: Path, pattern: re.Pattern[str]) -> None:
    """Temp files a killed compaction or expansion left (call with the run's log lock held)."""
    for p in folder.iterdir():
        if pattern.match(p.name):
            p.unlink(missing_ok=True)


def compact_log(path: str | os.PathLike[str]) -> tuple[int, int]:
    """Store the event log at ``path`` (``events.jsonl``) as ``events.jsonl.gz``; call with its lock held.

    Returns (plain bytes, compressed bytes); (0, 0) when there is no log. A malformed log raises
    :class:`EventLogError` and is left as it is; a torn last line (a writer killed mid-append) is
    dropped with a :class:`TornLineWarning`, as the next writer would.
    """
    path = Path(path)
    gz = compressed_path(path)
    _remove_stale_temps(path.parent, re.compile(rf"^\.{re.escape(path.name)}(\.gz)?\.\d+\.tmp$"))
    src = log_source(path)
    if src is None:
        return 0, 0
    if src == gz:  # already compacted; a plain copy left by a cut-off compaction or expansion goes
        if path.exists():
            path.unlink()
            fsync_dir(path.parent)
        size = read_log(path).valid_bytes
        return size, gz.stat().st_size
    data = path.read_bytes()
    res = read_log(path, expect_seq=0)  # validates every line and the seq chain
    if res.torn_tail is not None:
        warnings.warn(
            f"{path}: torn last line ({len(res.torn_tail)} bytes) dropped while compacting",
            TornLineWarning,
            stacklevel=2,
        )
    data = data[: res.valid_bytes]
    blob = gzip.compress(data, compresslevel=9, mtime=0)
    if gzip.decompress(blob) != data:  # pragma: no cover - a broken zlib
        raise EventLogError(f"{path}: compressed log does not read back identically; left as it is")
    write_durable(gz, blob)
    path.unlink()
    fsync_dir(path.parent)
    return len(data), len(blob)


def _write_packed(store: ArtifactStore, sha: str, enc: bytes, twins: Twins | None) -> bool:
    """Write ``<sha>.z``, as a hard link of an identical twin when there is one; returns whether linked."""
    dest = store.packed_path(sha)
    twin = twins.paths.get(sha) if twins is not None else None
    if twin is not None and twin != dest:
        try:  # link only a twin that still decodes to this exact blob
            if sha256_bytes(decode_blob(twin.read_bytes())) == sha:
                tmp = dest.with_name(f".{dest.name}.{os.getpid()}.tmp")
                tmp.unlink(missing_ok=True)
                os.link(twin, tmp)
                os.replace(tmp, dest)
                return True
        except (OSError, ValueError):
            pass  # another file system, or a damaged twin: write our own copy
    write_durable(dest, enc)
    if twins is not None:
        twins.paths.setdefault(sha, dest)
    return False


def compact_artifacts(root: str | os.PathLike[str], twins: Twins | None = None) -> CompactResult:
    """Encode every loose artifact of the store at ``root`` (see the module docstring).

    A loose blob that fails its sha256 check is left loose, so reading it still fails loudly.
    Call with the run's log lock held (:func:`compact_run` does)."""
    root = Path(root)
    out = CompactResult(root)
    if not root.is_dir():
        return out
    _remove_stale_temps(
        root, re.compile(rf"^\.([0-9a-f]{{64}}{re.escape(PACKED_SUFFIX)}|{INDEX_FILE})\.\d+\.tmp$")
    )
    store = ArtifactStore(root)
    idx = read_index(root)
    loose = sorted(p.name for p in root.iterdir() if _SHA.match(p.name))
    done: list[str] = []
    for sha in loose:
        data = (root / sha).read_bytes()
        if sha256_bytes(data) != sha:
            continue
        side = root / f"{sha}.json"
        try:  # a sidecar still being written by a put() in another process: next time
            idx["meta"][sha] = json.loads(side.read_text()) if side.exists() else {"sha256": sha}
        except ValueError:
            continue
        enc = encode_blob(data)
        if len(enc) <= INLINE_MAX:
            idx["inline"][sha] = base64.b64encode(enc).decode()
        else:
            out.linked += _write_packed(store, sha, enc, twins)
            out.artifact_bytes_after += len(enc)
        out.artifacts += 1
        out.artifact_bytes_before += len(data)
        done.append(sha)
    orphans = [  # sidecars of blobs compacted before (a cut-off compaction's leftovers)
        p for p in root.glob("*.json") if p.stem in idx["meta"] and not (root / p.stem).exists()
    ]
    for p in orphans:  # the sidecar on disk is the one the writer meant (kept in the index)
        with contextlib.suppress(ValueError):
            idx["meta"][p.stem] = json.loads(p.read_text())
    if not done and not orphans:
        return out
    body = json.dumps(idx, sort_keys=True, separators=(",", ":")).encode()
    write_durable(root / INDEX_FILE, body)
    out.artifact_bytes_after += len(body)
    for sha in done:
        (root / sha).unlink(missing_ok=True)
        (root / f"{sha}.json").unlink(missing_ok=True)
    for p in orphans:
        p.unlink(missing_ok=True)
    fsync_dir(root)
    return out


def compact_run(run_dir: str | os.PathLike[str], twins: Twins | None = None) -> CompactResult:
    """Compact one run directory's event log and artifacts (a run held by an exclusive writer is skipped)."""
    run_dir = Path(run_dir)
    if _held_by_writer(run_dir):
        return CompactResult(run_dir, skipped="held by a writer (run.lock)")
    log = run_dir / EVENTS_FILE
    with _log_lock(log):
        try:
            before, after = compact_log(log)
        except EventLogError as e:
            return CompactResult(run_dir, skipped=str(e))
        res = compact_artifacts(run_dir / ARTIFACTS_DIR, twins)
    res.path, res.log_before, res.log_after = run_dir, before, after
    return res


def compact_tree(roots: Iterable[str | os.PathLike[str]]) -> list[CompactResult]:
    """Compact every run below each root (a run directory itself, or an experiment's whole tree);
    identical blobs across the runs of one root become hard links of one file."""
    results: list[CompactResult] = []
    for root in roots:
        twins = Twins().scan(root)
        for run_dir in list_runs(root):
            results.append(compact_run(run_dir, twins))
    return results


def cmd_runs_compact(args: argparse.Namespace) -> int:
    """``rsi-workbench runs compact DIR...``: compact finished runs (recursively) and print what it did."""
    results = compact_tree(args.dirs)
    skipped = [r for r in results if r.skipped]
    done = [r for r in results if not r.skipped]
    for r in skipped:
        print(f"skipped {r.path}: {r.skipped}")
    lb, la = sum(r.log_before for r in done), sum(r.log_after for r in done)
    ab, aa = sum(r.artifact_bytes_before for r in done), sum(r.artifact_bytes_after for r in done)
    print(
        f"compacted {len(done)} run(s): event logs {lb:,} -> {la:,} bytes; "
        f"{sum(r.artifacts for r in done)} artifacts {ab:,} -> {aa:,} bytes "
        f"({sum(r.linked for r in done)} hard-linked to an identical one)"
    )
    if not results:
        print(f"no runs under {', '.join(map(str, args.dirs))}")
    return 1 if skipped else 0


def add_compact_parser(runs_sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """``runs compact`` under the CLI's ``runs`` command."""
    c = runs_sub.add_parser(
        "compact",
        help="store finished runs compactly (events.jsonl.gz, packed artifacts); readers read both",
    )
    c.add_argument("dirs", nargs="+", help="run or experiment directories (searched recursively)")
    c.set_defaults(func=cmd_runs_compact)
