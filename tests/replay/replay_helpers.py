"""Shared test trees for the replay tests (imported by basename; pytest puts this folder on sys.path)."""

from __future__ import annotations

from rsi_workbench.replay import ROOT, DiscoveryTree, Node


def worked_tree() -> DiscoveryTree:
    """Dream-RSI's example: r→v1(0.42)→v1a(0.51)→v1a1(0.58); r→v2(0.55)→v2a(0.60); v1 created before v2."""
    spec = [
        ("v1", ROOT, 1, 0.42),
        ("v1a", "v1", 2, 0.51),
        ("v2", ROOT, 2, 0.55),
        ("v1a1", "v1a", 3, 0.58),
        ("v2a", "v2", 3, 0.60),
    ]
    return DiscoveryTree.from_nodes(
        [
            Node(id=i, parent=p, created_seq=s, round=r, score=sc, valid=True)
            for s, (i, p, r, sc) in enumerate(spec)
        ],
        name="worked",
    )
