"""CLI: ``rsi-workbench trees import openevolve|shinka PATH --out TREE`` and ``replay score``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any


def cmd_trees_import(args: argparse.Namespace) -> int:
    """Import a peer tree, write it as JSON (payloads in ``TREE.artifacts/``) and print its summary."""
    from rsi_workbench.records import ArtifactStore
    from rsi_workbench.replay.importers import import_openevolve, import_shinka
    from rsi_workbench.replay.tree import TreeError

    out = Path(args.out)
    if not out.parent.is_dir():
        print(f"error: --out {out}: folder {out.parent} does not exist", file=sys.stderr)
        return 2
    store = ArtifactStore(out.with_name(out.name + ".artifacts"))
    try:
        if args.format == "openevolve":
            tree = import_openevolve(args.path, metric=args.metric, store=store, ghosts=not args.strict)
        else:
            tree = import_shinka(args.path, store=store, ghosts=not args.strict)
    except TreeError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    tree.save(out)
    s = tree.summary()
    best = "-" if s["best_score"] is None else f"{s['best_score']:.6g}"
    print(
        f"{out}: {s['nodes']} nodes, depth {s['depth']}, {s['branches']} root branches, best score {best} "
        f"({s['best_node']}), {s['invalid']} invalid ({s['errors']} with errors), mode {s['mode']}"
    )
    n_ghosts = int(tree.meta.get("ghosts", 0))
    if n_ghosts:
        print(
            f"{n_ghosts} ghost node(s): parents missing from the record (evicted from the archive), "
            "imported unscored under r; they count as revealed nodes in replay but never as the best"
        )
    return 0


def _num(v: float | None, fmt: str) -> str:
    """A number for a table, or "—" when undefined (a replay that revealed no valid node)."""
    return "—" if v is None else format(v, fmt)


def cmd_replay_score(args: argparse.Namespace) -> int:
    """Replay each policy on each tree and print V per tree and the mean (V^m)."""
    from rsi_workbench.plugins import search_path
    from rsi_workbench.replay.policies import baseline
    from rsi_workbench.replay.simulator import score_policy
    from rsi_workbench.replay.tree import DiscoveryTree, TreeError

    try:
        trees = [DiscoveryTree.load(p) for p in args.trees]
        with search_path([str(Path(d).resolve()) for d in args.python_path]):
            policies = [baseline(n) for n in args.policy]
    except (TreeError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    names = [t.name or Path(p).stem for t, p in zip(trees, args.trees)]
    width = max(14, *(len(n) for n in names))
    if args.node_budget is not None and args.node_budget < 1:
        print(f"error: --node-budget must be at least 1, got {args.node_budget}", file=sys.stderr)
        return 2
    budget = "" if args.node_budget is None else f" node budget={args.node_budget}"
    print(f"β1={args.beta1:g} β2={args.beta2:g} W={args.workers}{budget} legal set={args.legal}")
    print(f"{'policy':<22}" + "".join(f"{n[:width]:>{width + 2}}" for n in names) + f"{'mean V':>12}")
    rows: list[dict[str, Any]] = []
    for pol in policies:
        s = score_policy(
            trees, pol, args.workers, args.beta1, args.beta2, node_budget=args.node_budget, legal=args.legal
        )
        rows.append({"policy": pol.name, "V": s.V, "out_of_tree_share": s.out_of_tree_share})
        cells = "".join(f"{_num(r['V'], '.6f'):>{width + 2}}" for r in s.per_tree)
        print(f"{pol.name:<22}{cells}{_num(s.V, '.6f'):>12}")
        for r in s.per_tree:
            oot = r.get("out_of_tree") or []
            outside = (
                f", {len(oot)} out-of-tree choice(s) ({r['out_of_tree_share']:.0%} of choices): "
                + " ".join(f"r{rnd}:{nid}" for rnd, nid in oot)
                if oot
                else ""
            )
            print(
                f"    {r['tree']}: revealed {r['n']} nodes in {r['k']} rounds, "
                f"best valid {_num(r['quality'], '.6g')}{outside}"
            )
        if args.node_budget is not None or args.legal != "recorded":
            print(f"    out-of-tree share over all trees: {s.out_of_tree_share:.1%}")
    print("— = undefined: the replay revealed no valid node (V^m is undefined if any tree's V is)")
    return 0


def register(subparsers: Any) -> None:
    """Add ``trees import`` and ``replay score`` to the ``rsi-workbench`` command line."""
    t = subparsers.add_parser("trees", help="discovery trees: import from peer systems")
    tsub = t.add_subparsers(dest="trees_command", required=True, metavar="SUBCOMMAND")
    ti = tsub.add_parser("import", help="import an OpenEvolve checkpoint or a ShinkaEvolve database")
    ti.add_argument("format", choices=["openevolve", "shinka"])
    ti.add_argument("path", help="OpenEvolve checkpoint folder (or its parent) / ShinkaEvolve SQLite file")
    ti.add_argument("--out", required=True, help="tree JSON to write")
    ti.add_argument("--metric", default="combined_score", help="OpenEvolve metric used as the score")
    ti.add_argument(
        "--strict",
        action="store_true",
        help="reject a program whose parent is missing instead of importing the parent as a ghost node",
    )
    ti.set_defaults(func=cmd_trees_import)

    r = subparsers.add_parser("replay", help="replay recorded trees under exploration policies")
    rsub = r.add_subparsers(dest="replay_command", required=True, metavar="SUBCOMMAND")
    rs = rsub.add_parser("score", help="V per policy per tree and the mean")
    rs.add_argument("trees", nargs="+", help="tree JSON files")
    rs.add_argument(
        "--policy",
        nargs="+",
        required=True,
        help="independent_roots, greedy_deepest_best, breadth_first, portfolio, or package.module:Name",
    )
    rs.add_argument(
        "--python-path",
        nargs="*",
        default=["."],
        metavar="DIR",
        help="folders searched first for --policy import paths (default: the current folder)",
    )
    rs.add_argument("--beta1", type=float, required=True, help="cost per revealed node")
    rs.add_argument("--beta2", type=float, required=True, help="bonus per node per round")
    rs.add_argument("--workers", type=int, default=4, help="W: batch width (default 4)")
    rs.add_argument(
        "--node-budget",
        type=int,
        default=None,
        metavar="N",
        help="per-tree budget of choices (revealed nodes + out-of-tree choices); default: none",
    )
    rs.add_argument(
        "--legal",
        choices=["recorded", "online"],
        default="recorded",
        help="legal set offered to the policy: nodes the record continues (default) or the online "
        "rollout's {r} ∪ leaves, where a choice the record never continued is an out-of-tree choice",
    )
    rs.set_defaults(func=cmd_replay_score)
