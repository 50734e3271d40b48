"""Discovery trees: root ``r`` plus one node per generate-and-evaluate attempt.

A node records ``id, parent, created_seq, round, score`` (higher is better), ``valid``,
``fail_class``, ``error``, the ``payload`` artifact (the candidate solution's sha256) and metadata.
Trees serialise to plain JSON (stored as content-addressed run artifacts) and load as DataFrames.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    import pandas as pd

ROOT = "r"
TreeMode = Literal["chain", "general"]


class TreeError(ValueError):
    """A discovery tree (or the file it came from) is malformed; the message names the file and field."""


@dataclass(frozen=True)
class Node:
    """One attempt. ``parent`` is ``"r"`` for a new branch; ``score`` is ``None`` when nothing was scored."""

    id: str
    parent: str
    created_seq: int
    round: int
    score: float | None
    valid: bool
    fail_class: str | None = None
    error: str = ""
    payload: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)


# field -> (required, accepted JSON types, what the message says is allowed)
_NODE_FIELDS: dict[str, tuple[bool, tuple[type, ...], str]] = {
    "id": (True, (str,), "a string"),
    "parent": (True, (str,), 'a node id or "r"'),
    "created_seq": (True, (int,), "an integer"),
    "round": (True, (int,), "an integer"),
    "score": (True, (int, float, type(None)), "a number or null"),
    "valid": (True, (bool,), "true or false"),
    "fail_class": (False, (str, type(None)), "a string or null"),
    "error": (False, (str,), "a string"),
    "payload": (False, (str, type(None)), "an artifact sha256 or null"),
    "meta": (False, (dict,), "an object"),
}


def _node_from(raw: Any, where: str) -> Node:
    """A :class:`Node` from its JSON object; errors name the node and the field, and list the fields."""
    if not isinstance(raw, dict):
        raise TreeError(f"{where}: must be an object with fields {list(_NODE_FIELDS)}")
    for k in raw:
        if k not in _NODE_FIELDS:
            raise TreeError(f"{where}.{k}: unknown field (a node has {list(_NODE_FIELDS)})")
    for k, (required, types, allowed) in _NODE_FIELDS.items():
        if k not in raw:
            if required:
                raise TreeError(f"{where}.{k}: required field is missing")
            continue
        v = raw[k]
        if not isinstance(v, types) or (isinstance(v, bool) and bool not in types):
            raise TreeError(f"{where}.{k}: must be {allowed}, got {json.dumps(v)[:60]}")
    if raw["score"] is not None and not math.isfinite(raw["score"]):
        raise TreeError(f"{where}.score: must be a finite number or null, got {raw['score']}")
    return Node(**raw)


@dataclass
class DiscoveryTree:
    """An immutable-by-convention tree of :class:`Node`s below root ``r``, in creation order."""

    nodes: dict[str, Node]
    name: str = ""
    direction: str = "max"
    meta: dict[str, Any] = field(default_factory=dict)
    source: str = "<tree>"

    def __post_init__(self) -> None:
        self.children: dict[str, list[str]] = {ROOT: []}
        for nid in self.nodes:
            self.children.setdefault(nid, [])
        for node in sorted(self.nodes.values(), key=lambda v: v.created_seq):
            self.children[node.parent].append(node.id)

    # -- construction and checks ------------------------------------------------------------------
    @classmethod
    def from_nodes(cls, nodes: Iterable[Node], *, source: str = "<tree>", **kw: Any) -> DiscoveryTree:
        """Build a tree, rejecting duplicate ids, dangling parents and cycles (naming ``source``)."""
        by_id: dict[str, Node] = {}
        for i, v in enumerate(nodes):
            if v.id == ROOT:
                raise TreeError(f"{source}: nodes[{i}].id: {ROOT!r} is reserved for the root")
            if v.id in by_id:
                raise TreeError(f"{source}: nodes[{i}].id: duplicate id {v.id!r}")
            by_id[v.id] = v
        for v in by_id.values():
            if v.parent != ROOT and v.parent not in by_id:
                raise TreeError(
                    f"{source}: node {v.id!r}.parent: dangling parent {v.parent!r} (no such node)"
                )
        for v in by_id.values():  # every node must reach r
            seen = {v.id}
            p = v.parent
            while p != ROOT:
                if p in seen:
                    raise TreeError(
                        f"{source}: node {v.id!r}.parent: cycle through {p!r} (never reaches root)"
                    )
                seen.add(p)
                p = by_id[p].parent
        return cls(by_id, source=source, **kw)

    def mode(self) -> TreeMode:
        """``chain`` if every non-root node has at most one child (built under A(T) = {r} ∪ leaves)."""
        return "chain" if all(len(c) <= 1 for k, c in self.children.items() if k != ROOT) else "general"

    # -- queries ----------------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.nodes)

    def __iter__(self) -> Iterator[Node]:
        return iter(sorted(self.nodes.values(), key=lambda v: v.created_seq))

    def depth(self, nid: str) -> int:
        d = 0
        while nid != ROOT:
            nid = self.nodes[nid].parent
            d += 1
        return d

    def max_depth(self) -> int:
        return max((self.depth(n) for n in self.nodes), default=0)

    def best(self) -> Node | None:
        """The best valid node (highest score), or ``None``."""
        valid = [v for v in self.nodes.values() if v.valid and v.score is not None and math.isfinite(v.score)]
        return max(valid, key=lambda v: (v.score, -v.created_seq)) if valid else None

    def summary(self) -> dict[str, Any]:
        b = self.best()
        return {
            "nodes": len(self),
            "depth": self.max_depth(),
            "branches": len(self.children[ROOT]),
            "best_score": None if b is None else b.score,
            "best_node": None if b is None else b.id,
            "invalid": sum(not v.valid for v in self.nodes.values()),
            "errors": sum(bool(v.error) for v in self.nodes.values()),
            "mode": self.mode(),
        }

    # -- (de)serialisation ------------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        return {
            "format": "rsi-workbench.discovery-tree/1",
            "name": self.name,
            "direction": self.direction,
            "meta": self.meta,
            "nodes": [asdict(v) for v in self],
        }

    @classmethod
    def from_json(cls, obj: Any, *, source: str = "<tree>") -> DiscoveryTree:
        if not isinstance(obj, dict) or not isinstance(obj.get("nodes"), list):
            raise TreeError(f"{source}: nodes: required list of nodes is missing")
        nodes = [_node_from(raw, f"{source}: nodes[{i}]") for i, raw in enumerate(obj["nodes"])]
        return cls.from_nodes(
            nodes,
            source=source,
            name=str(obj.get("name", "")),
            direction=str(obj.get("direction", "max")),
            meta=dict(obj.get("meta") or {}),
        )

    def save(self, path: str | Path) -> Path:
        p = Path(path)
        p.write_text(json.dumps(self.to_json(), indent=1, allow_nan=False))
        return p

    @classmethod
    def load(cls, path: str | Path) -> DiscoveryTree:
        p = Path(path)
        if not p.exists():
            raise TreeError(f"{p}: tree file not found")
        try:
            obj = json.loads(p.read_text())
        except json.JSONDecodeError as e:
            raise TreeError(f"{p}: not valid JSON: {e}") from None
        return cls.from_json(obj, source=str(p))

    def to_frame(self) -> pd.DataFrame:
        """One row per node with ``depth`` and ``branch`` (the root child it descends from) added."""
        import pandas as pd

        rows = []
        for v in self:
            b = v.id
            while self.nodes[b].parent != ROOT:
                b = self.nodes[b].parent
            rows.append(
                {
                    **{k: val for k, val in asdict(v).items() if k != "meta"},
                    "depth": self.depth(v.id),
                    "branch": b,
                    **{f"meta.{k}": m for k, m in v.meta.items()},
                }
            )
        return pd.DataFrame(rows)
