"""A standalone discovery-tree file (no run directory) in the tree inspector and the replay explorer.

``TREE.json`` is a tree in the top-level format of :class:`rsi_workbench.replay.DiscoveryTree`
(docs/extending-discovery.md): written by hand, imported with ``rsi-workbench trees import``, or saved
from a notebook. Both dashboards take it where they take a run directory:

    rsi-workbench serve examples/discovery_tree/tree.json      # pages /trees and /replay
    rsi-workbench export examples/discovery_tree/tree.json --html tree.html

A tree file records no dreaming rounds, so the replay explorer replays the tree when it opens, under
the built-in policies (:data:`TREE_FILE_POLICIES`; deterministic, nothing is re-run), and its β
sliders recompute V from those replays' (quality, n, k) exactly as for a recorded round. The first
policy stands where a dreaming round's deployed π0 stands: the deployment rule keeps it unless
another policy is strictly better.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rsi_workbench.records import RunError
from rsi_workbench.replay import DiscoveryTree, baseline, replay, score_policy

if TYPE_CHECKING:
    import pandas as pd

#: the policies a tree file is replayed under, in order (the first one plays π0)
TREE_FILE_POLICIES = ("portfolio", "independent_roots", "greedy_deepest_best", "breadth_first")
#: the replay batch width W for a tree file (``replay score``'s default)
TREE_FILE_WORKERS = 4
#: the compute-to-quality line of the tree as it was recorded (creation order)
RECORDED = "recorded"


def is_tree_file(path: str | Path) -> bool:
    """Whether ``path`` names a file (a tree file) rather than a run directory."""
    return Path(path).is_file()


def check_run_or_tree(path: str | Path, *, live: bool = False) -> Path:
    """``path`` as a tree file (loaded once to check it: a :class:`~rsi_workbench.replay.TreeError`
    names the file and field) or as a run directory (``check_run_dir``); ``live`` needs a run."""
    from rsi_workbench.widgets._app import check_run_dir

    if not is_tree_file(path):
        return check_run_dir(path)
    if live:
        raise RunError(f"{path}: --live needs a run directory; a tree file is served read-only")
    DiscoveryTree.load(path)
    return Path(path)


def tree_file_dashboards() -> dict[str, Any]:
    """The dashboards that open a tree file: name -> module (``build``, ``export_sections``)."""
    from rsi_workbench.widgets import replay_explorer, tree_inspector

    return {tree_inspector.APP_NAME: tree_inspector, replay_explorer.APP_NAME: replay_explorer}


def tree_label(path: str | Path, tree: DiscoveryTree) -> str:
    """How the dashboards name the tree of a file: its ``name`` (else the file's stem) and the file."""
    return f"{tree.name or Path(path).stem} ({Path(path).name})"


def node_records(tree: DiscoveryTree) -> list[dict[str, Any]]:
    """One record per node for the tree inspector: the node's fields, ``depth``, ``branch``, each
    ``meta`` key as ``meta.<key>``, and ``operation`` from ``meta.move``; undefined values left out."""
    out = []
    for r in tree.to_frame().to_dict("records"):
        rec = {k: v for k, v in r.items() if not (isinstance(v, float) and v != v)}
        rec["operation"] = rec.pop("meta.move", None)
        out.append(rec)
    return out


def tree_file_records(path: str | Path) -> dict[str, list[dict[str, Any]]]:
    """The tree of a tree file as the tree inspector's ``{label: node records}``."""
    tree = DiscoveryTree.load(path)
    return {tree_label(path, tree): node_records(tree)}


def _best_so_far(tree: DiscoveryTree, order: list[str], arm: str) -> list[dict[str, Any]]:
    """Rows ``arm, seed, calls, best_so_far``: the best valid score after each node of ``order``."""
    best: float | None = None
    rows = []
    for i, nid in enumerate(order, start=1):
        v = tree.nodes[nid]
        if v.valid and v.score is not None and math.isfinite(v.score):
            best = v.score if best is None else max(best, v.score)
        rows.append({"arm": arm, "seed": 0, "calls": i, "best_so_far": best})
    return rows


def tree_file_frames(
    path: str | Path,
    policies: tuple[str, ...] = TREE_FILE_POLICIES,
    W: int = TREE_FILE_WORKERS,
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """The replay explorer's three frames for a tree file, made by replaying it now.

    ``scores``: one ``replay_tree_scored``-shaped row per policy (``arm`` = the tree's label, seed 0,
    cycle 0, ``candidate`` = the policy's index, ``policy``, ``tree_name``, ``tree_index``,
    ``quality``, ``n``, ``k``); ``deployed``: empty (nothing was deployed); ``nodes``: best valid score
    against revealed nodes per policy, plus the tree's own creation order as :data:`RECORDED`.
    """
    import pandas as pd

    tree = DiscoveryTree.load(path)
    label = tree_label(path, tree)
    rows, curve = [], _best_so_far(tree, [v.id for v in tree], RECORDED)
    for i, name in enumerate(policies):
        pol = baseline(name)
        s = score_policy([tree], pol, W, 0.0, 0.0)  # V is recomputed per β from (quality, n, k)
        for r in s.per_tree:
            rows.append(
                {"arm": label, "seed": 0, "cycle": 0, "candidate": i, "policy": name, "W": W}
                | {k: r[k] for k in ("tree_index", "quality", "n", "k")}
                | {"tree_name": r["tree"]}
            )
        trace = replay(tree, pol, W, grid=pol.plan_grid([]))  # the grid score_policy used
        curve += _best_so_far(tree, trace.revealed, name)
    return pd.DataFrame(rows), pd.DataFrame(), pd.DataFrame(curve)


def policy_names(scores: pd.DataFrame) -> list[str] | None:
    """The policy of each candidate index of a tree file's scores (``None`` for a dreaming run's)."""
    if "policy" not in scores:
        return None
    d = scores.drop_duplicates("candidate").sort_values("candidate")
    return [str(p) for p in d["policy"]]


def tree_file_summary(info: Any, W: int = TREE_FILE_WORKERS) -> str:
    """The replay explorer's summary line for a tree file (``info``: a ``ReplayInfo``)."""
    from rsi_workbench.viz.replay import fmt_v

    chosen = info.policies[info.chosen]
    means = ", ".join(f"{p} {fmt_v(v)}" for p, v in zip(info.policies, info.mean_V))
    undefined = any(v is None for v in info.mean_V)
    return (
        f"**best policy for this tree: {chosen}** (mean V {fmt_v(info.mean_V[info.chosen])}) at "
        f"β1 = {info.beta1:g}, β2 = {info.beta2:g}, W = {W}; replayed when the page opened (a tree file "
        f"records no dreaming round); {info.policies[0]} plays π0 and is kept unless another policy is "
        f"strictly better. Mean V: {means}"
        + (" (— = undefined: a replay revealed no valid node)" if undefined else "")
    )


__all__ = [
    "RECORDED",
    "TREE_FILE_POLICIES",
    "TREE_FILE_WORKERS",
    "check_run_or_tree",
    "is_tree_file",
    "node_records",
    "policy_names",
    "tree_file_dashboards",
    "tree_file_frames",
    "tree_file_records",
    "tree_file_summary",
    "tree_label",
]
