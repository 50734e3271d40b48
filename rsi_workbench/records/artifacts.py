"""Content-addressed artifact store: ``artifacts/<sha256>`` plus a small JSON sidecar.

Loading recomputes the sha256 and raises :class:`ArtifactCorrupted` on any mismatch, so a flipped
byte in a checkpoint, snapshot or tree fails loudly instead of silently changing a result.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any


class ArtifactCorrupted(RuntimeError):
    """An artifact's bytes no longer hash to its name."""


class ArtifactMissing(FileNotFoundError):
    """No artifact with that sha256 is stored."""


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class ArtifactStore:
    """Stores immutable blobs under their sha256 (deduplicated); metadata in ``<sha>.json``."""

    def __init__(self, root: str | os.PathLike[str]):
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)

    def path(self, sha: str) -> Path:
        return self.root / sha

    def put(
        self, data: bytes, *, name: str = "", media_type: str = "application/octet-stream", **meta: Any
    ) -> str:
        """Store ``data`` (atomically: temp file, fsync, rename) and return its sha256."""
        sha = sha256_bytes(data)
        dest = self.path(sha)
        if not dest.exists():
            tmp = dest.with_name(f".{sha}.{os.getpid()}.tmp")
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
        """Return the artifact's bytes after verifying their sha256."""
        p = self.path(sha)
        if not p.exists():
            raise ArtifactMissing(f"artifact {sha} not found in {self.root}")
        data = p.read_bytes()
        actual = sha256_bytes(data)
        if actual != sha:
            raise ArtifactCorrupted(
                f"artifact {p} is corrupted: its content hashes to {actual}, not {sha}. "
                "Restore it from a backup or re-run the step that produced it."
            )
        return data

    def get_json(self, sha: str) -> Any:
        return json.loads(self.get(sha))

    def meta(self, sha: str) -> dict[str, Any]:
        p = self.root / f"{sha}.json"
        return json.loads(p.read_text()) if p.exists() else {"sha256": sha}

    def list(self) -> list[str]:
        return sorted(p.name for p in self.root.iterdir() if len(p.name) == 64 and "." not in p.name)

    def verify_all(self) -> dict[str, bool]:
        ok: dict[str, bool] = {}
        for sha in self.list():
            try:
                self.get(sha)
                ok[sha] = True
            except ArtifactCorrupted:
                ok[sha] = False
        return ok
