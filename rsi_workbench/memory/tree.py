"""Memory as an immutable file tree ``{relative path: bytes}`` with a canonical tree hash.

The tree hash is ``sha256(canonical_json({path: sha256(bytes)}))``, so it names the content of every
file and nothing else (no times, no permissions). Paths are relative POSIX paths; absolute paths,
``..``, ``.``, empty parts and backslashes are rejected (:class:`MemoryPathError`), so a memory can
never name a file outside its own folder when materialised.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any


class MemoryPathError(ValueError):
    """A memory path is absolute, climbs out (``..``), has empty parts, backslashes or is a link."""


def canonical_json(obj: Any) -> bytes:
    """Canonical JSON bytes: sorted keys, compact separators, no NaN/Infinity, UTF-8."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), allow_nan=False, ensure_ascii=False).encode(
        "utf-8"
    )


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def check_relpath(path: str) -> str:
    """Return ``path`` if it is a safe relative POSIX path inside a memory, else raise MemoryPathError."""
    if not isinstance(path, str) or not path:
        raise MemoryPathError(f"memory path must be a non-empty string, got {path!r}")
    if "\\" in path or "\x00" in path:
        raise MemoryPathError(f"memory path {path!r} contains a backslash or NUL")
    if path.startswith("/") or (len(path) > 1 and path[1] == ":"):
        raise MemoryPathError(f"memory path {path!r} is absolute")
    parts = path.split("/")
    for part in parts:
        if part in ("", ".", ".."):
            raise MemoryPathError(f"memory path {path!r} has an empty, '.' or '..' part")
    return path


@dataclass(frozen=True)
class MemoryDiff:
    """Paths created, deleted, modified and unchanged going from one tree to another (sorted)."""

    created: tuple[str, ...]
    deleted: tuple[str, ...]
    modified: tuple[str, ...]
    unchanged: tuple[str, ...]

    def as_dict(self) -> dict[str, list[str]]:
        return {
            "created": list(self.created),
            "deleted": list(self.deleted),
            "modified": list(self.modified),
            "unchanged": list(self.unchanged),
        }

    @property
    def changed(self) -> bool:
        return bool(self.created or self.deleted or self.modified)


def _to_bytes(v: bytes | str) -> bytes:
    if isinstance(v, str):
        return v.encode("utf-8")
    if isinstance(v, bytes | bytearray | memoryview):
        return bytes(v)
    raise TypeError(f"memory file content must be bytes or str, got {type(v).__name__}")


class MemoryTree:
    """An immutable memory: ``files`` maps relative paths to bytes (a read-only mapping)."""

    __slots__ = ("_files", "_hash", "_digests")

    _files: Mapping[str, bytes]

    def __init__(self, files: Mapping[str, bytes | str] | None = None):
        data = {check_relpath(p): _to_bytes(v) for p, v in (files or {}).items()}
        folders = {p[:i] for p in data for i, ch in enumerate(p) if ch == "/"}
        clash = folders & data.keys()
        if clash:  # a path may not be both a file and a folder
            raise MemoryPathError(f"memory path {min(clash)!r} is both a file and a folder")
        self._files: Mapping[str, bytes] = MappingProxyType(dict(sorted(data.items())))
        self._hash: str | None = None
        self._digests: dict[str, str] | None = None

    @property
    def files(self) -> Mapping[str, bytes]:
        return self._files

    @property
    def n_files(self) -> int:
        return len(self._files)

    @property
    def n_bytes(self) -> int:
        return sum(len(b) for b in self._files.values())

    def digests(self) -> dict[str, str]:
        """``{path: sha256(bytes)}``: the manifest the tree hash is taken over."""
        if self._digests is None:
            self._digests = {p: sha256_hex(b) for p, b in self._files.items()}
        return dict(self._digests)

    def manifest_bytes(self) -> bytes:
        """``canonical_json(digests())``: its sha256 is :meth:`tree_hash`."""
        return canonical_json(self.digests())

    def tree_hash(self) -> str:
        if self._hash is None:
            self._hash = sha256_hex(self.manifest_bytes())
        return self._hash

    def stats(self) -> dict[str, Any]:
        """What every snapshot record carries: tree hash, file count and bytes."""
        return {"tree_hash": self.tree_hash(), "n_files": self.n_files, "n_bytes": self.n_bytes}

    def read_text(self, path: str) -> str:
        return self._files[check_relpath(path)].decode("utf-8")

    def __contains__(self, path: object) -> bool:
        return path in self._files

    def __iter__(self) -> Iterator[str]:
        return iter(self._files)

    def __len__(self) -> int:
        return len(self._files)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, MemoryTree) and self.tree_hash() == other.tree_hash()

    def __hash__(self) -> int:
        return hash(self.tree_hash())

    def __repr__(self) -> str:
        return f"MemoryTree({self.n_files} files, {self.n_bytes} bytes, {self.tree_hash()[:12]})"

    def with_changes(self, writes: Mapping[str, bytes | str], deletes: Iterable[str] = ()) -> MemoryTree:
        """A new tree with ``writes`` applied, then ``deletes`` removed (missing deletes are ignored)."""
        data: dict[str, bytes | str] = dict(self._files)
        data.update(writes)
        for p in deletes:
            data.pop(check_relpath(p), None)
        return MemoryTree(data)

    def diff(self, other: MemoryTree) -> MemoryDiff:
        """What changed going from ``self`` (before) to ``other`` (after)."""
        a, b = self._files, other._files
        return MemoryDiff(
            created=tuple(sorted(set(b) - set(a))),
            deleted=tuple(sorted(set(a) - set(b))),
            modified=tuple(sorted(p for p in set(a) & set(b) if a[p] != b[p])),
            unchanged=tuple(sorted(p for p in set(a) & set(b) if a[p] == b[p])),
        )

    @classmethod
    def from_dir(cls, path: str | os.PathLike[str]) -> MemoryTree:
        """Read every regular file below ``path``; symbolic links are refused (MemoryPathError)."""
        root = Path(path)
        if not root.is_dir():
            raise MemoryPathError(f"{root} is not a directory")
        files: dict[str, bytes] = {}
        for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
            here = Path(dirpath)
            for name in dirnames + filenames:
                if (here / name).is_symlink():
                    raise MemoryPathError(f"{here / name} is a symbolic link; memories hold plain files")
            for name in filenames:
                rel = (here / name).relative_to(root).as_posix()
                files[check_relpath(rel)] = (here / name).read_bytes()
        return cls(files)

    def to_dir(self, path: str | os.PathLike[str]) -> Path:
        """Materialise the tree into ``path`` (created; must be empty if it exists) and return it."""
        root = Path(path)
        if root.exists() and any(root.iterdir()):
            raise FileExistsError(f"{root} is not empty; a memory is materialised into a fresh folder")
        root.mkdir(parents=True, exist_ok=True)
        for rel, data in self._files.items():
            dest = root.joinpath(*rel.split("/"))
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(data)
        return root


EMPTY = MemoryTree({})
