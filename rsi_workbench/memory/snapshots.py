"""Memory snapshots as content-addressed run artifacts, and their materialisation per branch.

A snapshot is stored as one artifact per file (deduplicated across snapshots by the artifact store)
plus its manifest ``canonical_json({path: sha256})``, whose own sha256 *is* the tree hash: loading a
snapshot by its tree hash therefore verifies every byte. A branch gets its own materialised copy
(:class:`MaterialisedMemory`, files made read-only); since CI runs as root, permissions alone do not
stop writes, so :func:`check_untouched` re-hashes the folder afterwards and a branch that wrote into
its snapshot fails with :class:`SnapshotMutated`.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rsi_workbench.memory.tree import MemoryTree
from rsi_workbench.records import Run

SNAPSHOT_EVENT = "memory_snapshot"


class SnapshotMutated(RuntimeError):
    """A branch (or the frozen evaluation) wrote into the snapshot it was given."""


def store_snapshot(
    run: Run, tree: MemoryTree, *, label: str, base: MemoryTree | None = None, **detail: Any
) -> str:
    """Store ``tree`` as artifacts, append a ``memory_snapshot`` event and return its tree hash.

    ``base``: a snapshot already stored in this run; files identical to it are not stored again.
    """
    same = base.files if base is not None else {}
    for path, data in tree.files.items():
        if same.get(path) != data:
            run.put_artifact(data, name=path, memory_file=True)
    sha = run.put_artifact(tree.manifest_bytes(), name=f"memory-{label}.json", media_type="application/json")
    if sha != tree.tree_hash():  # pragma: no cover - the manifest's sha256 is the tree hash by definition
        raise RuntimeError(f"snapshot manifest hashes to {sha}, not the tree hash {tree.tree_hash()}")
    run.append(SNAPSHOT_EVENT, {"label": label, **tree.stats(), **detail})
    return sha


def load_snapshot(run: Run, tree_hash: str) -> MemoryTree:
    """The memory stored under ``tree_hash`` (every file sha256-verified by the artifact store)."""
    manifest: Mapping[str, str] = json.loads(run.get_artifact(tree_hash))
    tree = MemoryTree({p: run.get_artifact(sha) for p, sha in manifest.items()})
    if tree.tree_hash() != tree_hash:
        raise RuntimeError(f"snapshot {tree_hash} rebuilt to a different tree {tree.tree_hash()}")
    return tree


class MaterialisedMemory(MemoryTree):
    """A memory tree that also lies on disk at ``path`` (read-only by contract; re-hashed afterwards)."""

    __slots__ = ("path",)

    def __init__(self, tree: MemoryTree, path: Path):
        super().__init__(tree.files)
        self.path = path


def materialise(tree: MemoryTree, dest: str | os.PathLike[str]) -> MaterialisedMemory:
    """Write ``tree`` into the fresh folder ``dest``, make its files read-only and return the handle."""
    root = tree.to_dir(dest)
    for p in root.rglob("*"):
        if p.is_file():
            p.chmod(stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
    return MaterialisedMemory(tree, root)


def check_untouched(mem: MaterialisedMemory, *, who: str) -> None:
    """Raise :class:`SnapshotMutated` if the folder no longer holds exactly the snapshot's files."""
    try:
        now = MemoryTree.from_dir(mem.path)
    except Exception as e:  # a link or a bad name appeared: that is a write too
        raise SnapshotMutated(f"{who} changed its memory snapshot at {mem.path}: {e}") from e
    if now.tree_hash() != mem.tree_hash():
        d = mem.diff(now)
        raise SnapshotMutated(
            f"{who} wrote into its immutable memory snapshot {mem.tree_hash()[:12]} "
            f"(created {list(d.created)}, deleted {list(d.deleted)}, modified {list(d.modified)})"
        )


def remove_materialised(mem: MaterialisedMemory) -> None:
    """Delete a materialised copy (restoring write permission first)."""
    for p in mem.path.rglob("*"):
        if p.is_file() and not p.is_symlink():
            p.chmod(stat.S_IRUSR | stat.S_IWUSR)
    shutil.rmtree(mem.path, ignore_errors=True)
