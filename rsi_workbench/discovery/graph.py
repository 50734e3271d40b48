"""The research graph: versioned hypothesis nodes whose parent links form a DAG.

Lineage comes only from ``HypothesisVersion.parents`` (revision: one parent, crossover: several,
restart: none). Linked records — a shared split file, a dataset, a dependency — attach through
``SupportLink`` and are kept apart: two hypotheses that share an artifact are not relatives.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

from rsi_workbench.discovery.records import DiscoveryRecords, HypothesisVersion

if TYPE_CHECKING:
    import pandas as pd


class LineageError(ValueError):
    """A parent link points at an unknown or later hypothesis (the graph would not be a DAG)."""


@dataclass
class ResearchGraph:
    """Hypothesis versions (nodes), lineage edges (parent → child) and support links (source → node)."""

    nodes: dict[str, HypothesisVersion] = field(default_factory=dict)
    support: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))  # source -> hypotheses

    @classmethod
    def from_records(cls, recs: DiscoveryRecords) -> ResearchGraph:
        g = cls()
        for h in recs.hypotheses:
            g.add(h)
        for s in recs.support_links:
            g.support[s.source_id].add(s.hypothesis_id)
        return g

    def add(self, h: HypothesisVersion) -> None:
        """Add a node; parents must already be in the graph, which keeps it acyclic by construction."""
        if h.hypothesis_id in self.nodes:
            raise LineageError(f"hypothesis {h.hypothesis_id!r} is already in the graph")
        unknown = [p for p in h.parents if p not in self.nodes]
        if unknown:
            raise LineageError(f"{h.hypothesis_id}: unknown parent(s) {unknown}")
        self.nodes[h.hypothesis_id] = h
        self.__dict__.pop("children", None)

    # -- lineage ---------------------------------------------------------------------------------
    def lineage_edges(self) -> list[tuple[str, str]]:
        """Parent → child edges: the only edges that mean scientific descent."""
        return [(p, h.hypothesis_id) for h in self.nodes.values() for p in h.parents]

    @cached_property
    def children(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = defaultdict(list)
        for p, c in self.lineage_edges():
            out[p].append(c)
        return out

    def ancestors(self, hid: str) -> set[str]:
        seen: set[str] = set()
        stack = list(self.nodes[hid].parents)
        while stack:
            p = stack.pop()
            if p not in seen:
                seen.add(p)
                stack.extend(self.nodes[p].parents)
        return seen

    def depth(self, hid: str) -> int:
        """Longest parent chain above ``hid`` (0 for a restart)."""
        memo: dict[str, int] = {}

        def d(x: str) -> int:
            if x not in memo:
                ps = self.nodes[x].parents
                memo[x] = 0 if not ps else 1 + max(d(p) for p in ps)
            return memo[x]

        return d(hid)

    def max_depth(self) -> int:
        return max((self.depth(h) for h in self.nodes), default=0)

    def roots(self) -> list[str]:
        return [h for h, n in self.nodes.items() if not n.parents]

    def leaves(self) -> list[str]:
        return [h for h in self.nodes if not self.children.get(h)]

    def path_to(self, hid: str) -> list[str]:
        """The development path ending at ``hid``: its ancestors and itself in true lineage order."""
        members = self.ancestors(hid) | {hid}
        return sorted(members, key=lambda x: (self.nodes[x].episode, x))

    def related_by_support(self, a: str, b: str) -> bool:
        """Whether two hypotheses share a linked source (says nothing about lineage)."""
        return any(a in hs and b in hs for hs in self.support.values())

    def to_frame(self) -> pd.DataFrame:
        """One row per node: id, direction, operation, parents, episode, depth, children."""
        import pandas as pd

        rows = [
            {
                "hypothesis_id": h.hypothesis_id,
                "direction": h.direction,
                "family": h.family,
                "operation": h.operation,
                "parents": list(h.parents),
                "episode": h.episode,
                "depth": self.depth(h.hypothesis_id),
                "children": len(self.children.get(h.hypothesis_id, [])),
            }
            for h in self.nodes.values()
        ]
        return pd.DataFrame(rows)
