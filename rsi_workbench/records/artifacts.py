"""Content-addressed artifact store: ``artifacts/<sha256>`` plus a small JSON sidecar.

Loading recomputes the sha256 and raises :class:`ArtifactCorrupted` on any mismatch, so a flipped
byte in a checkpoint, snapshot or tree fails loudly instead of silently changing a result.

A compacted store (:func:`rsi_workbench.records.compact.compact_artifacts`) keeps the same blobs
losslessly encoded (:func:`encode_blob`): larger ones as ``<sha>.z`` files (identical ones in other
runs may be hard links of one file), small ones inline in ``index.json`` with every sidecar. Reads
look for the loose file first, then ``<sha>.z``, then the index; every form is sha256-verified.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import threading
import zlib
from pathlib import Path
from typing import Any


class ArtifactCorrupted(RuntimeError):
    """An artifact's bytes no longer hash to its name."""


class ArtifactMissing(FileNotFoundError):
    """No artifact with that sha256 is stored."""


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


BLOB_MAGIC = b"rsiblob1"
INDEX_FILE = "index.json"
PACKED_SUFFIX = ".z"


def _shuffle8(data: bytes) -> bytes:
    """Byte planes of 8-byte words (every first byte, then every second, ...), then the remainder:
    the sign/exponent bytes of float64 tensors line up, which zlib then compresses."""
    n = len(data) - len(data) % 8
    return b"".join(data[i:n:8] for i in range(8)) + data[n:]


def _unshuffle8(data: bytes) -> bytes:
    n = len(data) - len(data) % 8
    out = bytearray(len(data))
    w = n // 8
    for i in range(8):
        out[i:n:8] = data[i * w : (i + 1) * w]
    out[n:] = data[n:]
    return bytes(out)


def encode_blob(data: bytes) -> bytes:
    """A lossless encoding of an artifact: the smallest of raw, zlib, and zlib over 8-byte planes."""
    forms = [
        b"r" + data,
        b"z" + zlib.compress(data, 9),
        b"s" + zlib.compress(_shuffle8(data), 9),
    ]
    return BLOB_MAGIC + min(forms, key=len)


def decode_blob(blob: bytes) -> bytes:
    """The artifact bytes of an :func:`encode_blob` encoding."""
    if not blob.startswith(BLOB_MAGIC):
        raise ValueError("not an encoded artifact")
    codec, body = blob[len(BLOB_MAGIC) : len(BLOB_MAGIC) + 1], blob[len(BLOB_MAGIC) + 1 :]
    if codec == b"r":
        return body
    if codec == b"z":
        return zlib.decompress(body)
    if codec == b"s":
        return _unshuffle8(zlib.decompress(body))
    raise ValueError(f"unknown artifact codec {codec!r}")


def read_index(root: Path) -> dict[str, Any]:
    """A compacted store's ``index.json``: ``{"meta": {sha: sidecar}, "inline": {sha: base64 blob}}``."""
    p = root / INDEX_FILE
    if not p.exists():
        return {"meta": {}, "inline": {}}
    idx = json.loads(p.read_text())
    return {"meta": idx.get("meta", {}), "inline": idx.get("inline", {})}


class ArtifactStore:
    """Stores immutable blobs under their sha256 (deduplicated); metadata in ``<sha>.json``.

    ``create=False`` opens a store for reading: its folder is made only by the first :meth:`put`,
    so viewing a run that has none (``report``, ``serve`` without ``--live``) writes nothing."""

    def __init__(self, root: str | os.PathLike[str], *, create: bool = True):
        self.root = Path(root)
        if create:
            self.root.mkdir(parents=True, exist_ok=True)
        self._index_cache: dict[str, Any] = {"meta": {}, "inline": {}}
        self._index_key: tuple[int, int, int] | None = None

    def path(self, sha: str) -> Path:
        """Where the loose (not compacted) artifact lives."""
        return self.root / sha

    def packed_path(self, sha: str) -> Path:
        """Where the compacted, encoded artifact lives when it is not inline in the index."""
        return self.root / f"{sha}{PACKED_SUFFIX}"

    def _index(self) -> dict[str, Any]:
        p = self.root / INDEX_FILE
        try:
            st = p.stat()
        except FileNotFoundError:
            return {"meta": {}, "inline": {}}
        key = (st.st_ino, st.st_mtime_ns, st.st_size)
        if self._index_key != key:
            self._index_cache, self._index_key = read_index(self.root), key
        return self._index_cache

    def has(self, sha: str) -> bool:
        """Whether the artifact is stored, loose or compacted."""
        return self.path(sha).exists() or self.packed_path(sha).exists() or sha in self._index()["inline"]

    def put(
        self, data: bytes, *, name: str = "", media_type: str = "application/octet-stream", **meta: Any
    ) -> str:
        """Store ``data`` (atomically: temp file, fsync, rename) and return its sha256."""
        sha = sha256_bytes(data)
        dest = self.path(sha)
        if not self.has(sha):
            self.root.mkdir(parents=True, exist_ok=True)
            tmp = dest.with_name(f".{sha}.{os.getpid()}.{threading.get_ident()}.tmp")  # threads too
            with open(tmp, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, dest)
            side = {"sha256": sha, "name": name, "media_type": media_type, "size": len(data), **meta}
            (self.root / f"{sha}.json").write_text(json.dumps(side, indent=1, default=str))
        return sha

    def put_json(self, obj: Any, *, name: str = "", **meta: Any) -> str:
        data = json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str).encode()
        return self.put(data, name=name, media_type="application/json", **meta)

    def put_file(self, src: str | os.PathLike[str], *, name: str = "", **meta: Any) -> str:
        return self.put(Path(src).read_bytes(), name=name or Path(src).name, **meta)

    def get(self, sha: str) -> bytes:
        """Return the artifact's bytes (loose or compacted) after verifying their sha256."""
        p = self.path(sha)
        try:
            data = p.read_bytes()
        except FileNotFoundError:  # compacted (perhaps a moment ago, by a compaction in another process)
            p, data = self._get_compacted(sha)
        actual = sha256_bytes(data)
        if actual != sha:
            raise ArtifactCorrupted(
                f"artifact {p} is corrupted: its content hashes to {actual}, not {sha}. "
                "Restore it from a backup or re-run the step that produced it."
            )
        return data

    def _get_compacted(self, sha: str) -> tuple[Path, bytes]:
        p = self.packed_path(sha)
        if p.exists():
            return p, self._decode(p, p.read_bytes())
        inline = self._index()["inline"]
        if sha in inline:
            p = self.root / INDEX_FILE
            return p, self._decode(p, base64.b64decode(inline[sha]))
        raise ArtifactMissing(f"artifact {sha} not found in {self.root}")

    @staticmethod
    def _decode(p: Path, blob: bytes) -> bytes:
        try:
            return decode_blob(blob)
        except (ValueError, zlib.error) as e:
            raise ArtifactCorrupted(f"artifact {p} is corrupted: {e}") from e

    def get_json(self, sha: str) -> Any:
        return json.loads(self.get(sha))

    def meta(self, sha: str) -> dict[str, Any]:
        p = self.root / f"{sha}.json"
        if p.exists():
            return dict(json.loads(p.read_text()))
        return dict(self._index()["meta"].get(sha, {"sha256": sha}))

    def list(self) -> list[str]:
        """Every stored artifact's sha256, loose or compacted."""
        if not self.root.is_dir():
            return []
        names = {p.name for p in self.root.iterdir() if len(p.name) == 64 and "." not in p.name}
        names |= {
            p.name[: -len(PACKED_SUFFIX)]
            for p in self.root.iterdir()
            if len(p.name) == 64 + len(PACKED_SUFFIX) and p.name.endswith(PACKED_SUFFIX)
        }
        return sorted(names | set(self._index()["inline"]))

    def verify_all(self) -> dict[str, bool]:
        ok: dict[str, bool] = {}
        for sha in self.list():
            try:
                self.get(sha)
                ok[sha] = True
            except ArtifactCorrupted:
                ok[sha] = False
        return ok
