"""Untrusted exploration policies: policy code (a model's, a researcher's) replayed in a sandbox session.

A :class:`PolicyProgram` is Python source defining ``select_batch(view, W) -> list[str]`` and,
optionally, ``plan_grid(history) -> (width, depth)`` (``None`` = unbounded). :class:`SandboxedPolicy`
runs it only inside a :class:`~rsi_workbench.sandbox.Session`: one session (one process, one time
budget) per tree, one call per replay round. Each call sends plain data — the revealed prefix of
*this* tree (the nodes the replay has revealed, their depth, branch and reveal round), the legal set
and the grid — never the recorded tree; ``plan_grid`` gets the finished past trees only. Inside,
:data:`PRELUDE` rebuilds a ``view`` with the :class:`~rsi_workbench.replay.simulator.TreeView`
methods. Back on the host the answer is validated: a program that does not load, raises, runs past
its clock, names a node outside the revealed prefix, or returns anything but a legal batch raises
:class:`PolicyFailure` with its kind, reason, tree and round — a failed candidate, never a score.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from rsi_workbench import sandbox
from rsi_workbench.replay.simulator import Grid, IllegalBatch, TreeView, check_batch
from rsi_workbench.replay.tree import ROOT, DiscoveryTree, Node

#: per call 2 s wall; per tree (one session, one process) 30 s wall, 10/11 s CPU, 512 MiB
POLICY_LIMITS = sandbox.Limits(
    cpu_soft_s=10, cpu_hard_s=11, address_space_bytes=512 << 20, wall_s=2.0, session_wall_s=30.0
)
ENTRY = "__rsi_policy_call__"
FAILURE_KINDS = ("load", "raised", "timeout", "unrevealed_node", "illegal_batch", "bad_output", "error")

#: the sandbox side: a read-only view rebuilt from the data sent, and the one entry point
PRELUDE = '''
class Node:
    """A revealed node: id, parent, score, valid, fail_class, error, created_seq, round."""

    def __init__(self, d):
        for k in ("id", "parent", "score", "valid", "fail_class", "error", "created_seq", "round"):
            setattr(self, k, d.get(k))

    def __repr__(self):
        return "Node(%r, parent=%r, score=%r, valid=%r)" % (self.id, self.parent, self.score, self.valid)


class View:
    """The revealed prefix of the current tree (the TreeView methods); "r" is the root."""

    def __init__(self, d):
        self.round, self.width, self.depth = d["round"], d["width"], d["depth"]
        self._nodes, self._order, self._children = {}, [], {"r": []}
        self._depth, self._branch, self._rr, self._best = {"r": 0}, {}, {}, None
        for raw in d["nodes"]:
            v = Node(raw)
            self._nodes[v.id] = v
            self._order.append(v.id)
            self._children.setdefault(v.parent, []).append(v.id)
            self._children.setdefault(v.id, [])
            self._depth[v.id] = self._depth[v.parent] + 1
            self._branch[v.id] = v.id if v.parent == "r" else self._branch[v.parent]
            self._rr[v.id] = raw["revealed_round"]
            ok = v.valid and v.score is not None and v.score == v.score
            if ok and (self._best is None or v.score > self._best.score):
                self._best = v
        self._capacity = dict(d["legal"])

    def nodes(self):
        return [self._nodes[i] for i in self._order]

    def node(self, nid):
        return self._nodes[nid]

    def __len__(self):
        return len(self._order)

    def children(self, nid):
        return list(self._children.get(nid, []))

    def depth_of(self, nid):
        return self._depth[nid]

    def branch_of(self, nid):
        return self._branch[nid]

    def branches(self):
        return list(self._children["r"])

    def branch_nodes(self, branch):
        return [v for v in self.nodes() if self._branch[v.id] == branch]

    def revealed_round(self, nid):
        return self._rr[nid]

    def legal(self):
        return list(self._capacity)

    def capacity(self, nid):
        return self._capacity.get(nid, 0)

    def best(self):
        return self._best


class Tree:
    """A finished past tree (for plan_grid): nodes in creation order, children, best(), depth(nid)."""

    def __init__(self, d):
        self.name = d["name"]
        self.nodes = [Node(raw) for raw in d["nodes"]]
        self.by_id = {v.id: v for v in self.nodes}
        self.children = {"r": []}
        for v in self.nodes:
            self.children.setdefault(v.id, [])
            self.children.setdefault(v.parent, []).append(v.id)

    def __len__(self):
        return len(self.nodes)

    def depth(self, nid):
        d = 0
        while nid != "r":
            nid, d = self.by_id[nid].parent, d + 1
        return d

    def best(self):
        ok = [v for v in self.nodes if v.valid and v.score is not None and v.score == v.score]
        return max(ok, key=lambda v: (v.score, -v.created_seq)) if ok else None


def __rsi_policy_call__(op, data, W):
    if op == "plan_grid":
        fn = globals().get("plan_grid")
        return [None, None] if fn is None else fn([Tree(t) for t in data])
    fn = globals().get("select_batch")
    if fn is None:
        raise LookupError("__rsi_no_select_batch__")
    return fn(View(data), W)
'''


@dataclass(frozen=True)
class PolicyProgram:
    """Exploration-policy source code (untrusted); ``origin`` says who wrote it (``model``, ``builtin``...)."""

    source: str
    name: str = "program"
    origin: str = ""

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.source.encode()).hexdigest()


class PolicyFailure(RuntimeError):
    """A sandboxed policy failed: ``kind`` (one of :data:`FAILURE_KINDS`), the reason, and where
    (``tree``: index in the replayed history or online round; ``round``: the replay round, 1-based;
    ``None`` for ``plan_grid`` or loading)."""

    def __init__(self, kind: str, reason: str, *, tree: int | None = None, round: int | None = None):
        super().__init__(f"{kind}: {reason}" + (f" (tree {tree}, round {round})" if tree is not None else ""))
        self.kind, self.reason, self.tree, self.round = kind, reason, tree, round

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "reason": self.reason, "tree": self.tree, "round": self.round}


def policy_isolation(
    mode: str | None = None, *, isolation: sandbox.Isolation | None = None
) -> sandbox.IsolationGrant:
    """The sandbox plan for policy programs (stdlib only; probed once per process) through the choke
    point: the stricter of ``mode`` and ``RSI_WORKBENCH_SANDBOX_MODE`` refuses a weaker plan
    (:class:`~rsi_workbench.sandbox.SandboxUnavailable`) or warns (``best_effort``)."""
    return sandbox.obtain_isolation((), mode=mode, purpose="policy programs", isolation=isolation)


def _node_data(n: Node, view: TreeView | None = None) -> dict[str, Any]:
    d = {
        "id": n.id,
        "parent": n.parent,
        "score": n.score,
        "valid": n.valid,
        "fail_class": n.fail_class,
        "error": n.error[:300],
        "created_seq": n.created_seq,
        "round": n.round,
    }
    if view is not None:
        d["revealed_round"] = view.revealed_round(n.id)
    return d


def view_data(view: TreeView) -> dict[str, Any]:
    """What one replay round sends into the sandbox: the revealed prefix, the legal set, the grid."""
    return {
        "round": view.round,
        "width": view.width,
        "depth": view.depth,
        "nodes": [_node_data(n, view) for n in view.nodes()],
        "legal": [[nid, view.capacity(nid)] for nid in view.legal()],
    }


def tree_data(tree: DiscoveryTree) -> dict[str, Any]:
    """A finished past tree as plain data (what ``plan_grid`` may read)."""
    return {"name": tree.name, "nodes": [_node_data(n) for n in tree]}


def _call_failure(res: sandbox.CallResult) -> tuple[str, str]:
    if res.kind == "timeout":
        return "timeout", res.message or "wall clock exceeded"
    if res.kind == "raised" and res.error == ("LookupError", "__rsi_no_select_batch__"):
        return "load", "the program defines no select_batch(view, W)"
    if res.kind == "raised":
        return "raised", res.message
    return "error", res.message or res.kind


def _grid(value: Any) -> Grid:
    ok = isinstance(value, list) and len(value) == 2
    ok = ok and all(v is None or (type(v) is int and v >= 1) for v in value)
    if not ok:
        raise ValueError(
            f"plan_grid must return (width, depth), each None or an int >= 1; got {str(value)[:200]}"
        )
    return (value[0], value[1])


class SandboxedPolicy:
    """An :class:`~rsi_workbench.replay.policies.ExplorationPolicy` whose decisions come from an
    untrusted :class:`PolicyProgram` run in a sandbox session (one per tree); see the module doc.

    ``plan_grid`` opens the session of the next tree; a tree replayed without it (``use_grid=False``)
    gets its session at its first ``select_batch``. Any failure raises :class:`PolicyFailure`.
    In a replay the session's wall clock (``limits.session_wall_s``) is the tree's time budget; online,
    where real attempts run between two calls, pass a long session clock and ``policy_time_s``: the
    budget then counts only the time spent in the policy's calls.
    """

    def __init__(
        self,
        program: PolicyProgram,
        *,
        name: str | None = None,
        limits: sandbox.Limits = POLICY_LIMITS,
        isolation: sandbox.Isolation | None = None,
        mode: str | None = None,
        policy_time_s: float | None = None,
    ):
        self.program, self.limits, self.policy_time_s = program, limits, policy_time_s
        self.name = name or program.name
        self.grant = policy_isolation(mode, isolation=isolation)
        self.isolation = self.grant.isolation
        self.source = PRELUDE + "\n# ---- policy program ----\n" + program.source + "\n"
        self.calls = 0
        self.spent = 0.0  # seconds of this tree's calls (checked against ``policy_time_s``)
        self.tree = -1  # index of the tree being replayed (sessions opened − 1)
        self._session: sandbox.Session | None = None
        self._view: TreeView | None = None
        self._fresh = False

    def __repr__(self) -> str:
        return f"SandboxedPolicy({self.name!r}, sha256={self.program.sha256[:12]})"

    def close(self) -> None:
        if self._session is not None:
            self._session.close()
            self._session = None

    def __enter__(self) -> SandboxedPolicy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _open(self) -> sandbox.Session:
        self.close()
        self.tree += 1
        self.spent = 0.0
        self._session = s = sandbox.Session(self.source, ENTRY, isolation=self.isolation, limits=self.limits)
        if s.loaded.kind != "passed":
            self.close()
            raise PolicyFailure("load", f"program did not load: {s.loaded.message}", tree=self.tree)
        return s

    def _call(self, args: list[Any], round_: int | None) -> Any:
        assert self._session is not None
        self.calls += 1
        res = self._session.call(args)
        self.spent += res.wall_s
        if res.kind == "value" and self.policy_time_s is not None and self.spent > self.policy_time_s:
            self.close()
            raise PolicyFailure(
                "timeout",
                f"policy time {self.spent:.1f} s over the tree's {self.policy_time_s:g} s",
                tree=self.tree,
                round=round_,
            )
        if res.kind != "value":
            kind, why = _call_failure(res)
            self.close()
            raise PolicyFailure(kind, why, tree=self.tree, round=round_)
        return res.value

    def plan_grid(self, history: Sequence[DiscoveryTree]) -> Grid:
        self._open()
        self._fresh = True
        value = self._call(["plan_grid", [tree_data(t) for t in history], 0], None)
        try:
            return _grid(value)
        except ValueError as e:
            self.close()
            raise PolicyFailure("bad_output", str(e), tree=self.tree) from None

    def select_batch(self, view: TreeView, W: int) -> list[str]:
        if view is not self._view:  # a new tree
            if not self._fresh or self._session is None:
                self._open()
            self._fresh, self._view = False, view
        rnd = view.round + 1
        value = self._call(["select_batch", view_data(view), W], rnd)
        if not (isinstance(value, list) and all(type(v) is str for v in value)):
            self.close()
            raise PolicyFailure(
                "bad_output",
                f"select_batch must return a list of node ids; got {str(value)[:200]}",
                tree=self.tree,
                round=rnd,
            )
        unrevealed = [nid for nid in value if nid != ROOT and nid not in view._nodes]
        if unrevealed:
            self.close()
            raise PolicyFailure(
                "unrevealed_node",
                f"names {unrevealed[0]!r}, which is not in the revealed prefix",
                tree=self.tree,
                round=rnd,
            )
        try:
            return check_batch(view, value, W)
        except IllegalBatch as e:
            self.close()
            raise PolicyFailure("illegal_batch", str(e), tree=self.tree, round=rnd) from None


class GuardedPolicy:
    """Online use of a sandboxed policy: on a :class:`PolicyFailure` the rest of the tree is decided
    by ``fallback`` (the failure is reported to ``on_failure`` once), so a real tree is never lost."""

    def __init__(
        self,
        primary: SandboxedPolicy,
        fallback: Any,
        on_failure: Callable[[PolicyFailure], None] = lambda f: None,
    ):
        self.primary, self.fallback, self.on_failure = primary, fallback, on_failure
        self.name = primary.name
        self.failed: PolicyFailure | None = None

    def _fail(self, f: PolicyFailure) -> None:
        self.failed = f
        self.primary.close()
        self.on_failure(f)

    def plan_grid(self, history: Sequence[DiscoveryTree]) -> Grid:
        self.failed = None
        try:
            return self.primary.plan_grid(history)
        except PolicyFailure as f:
            self._fail(f)
            return self.fallback.plan_grid(history)  # type: ignore[no-any-return]

    def select_batch(self, view: TreeView, W: int) -> list[str]:
        if self.failed is None:
            try:
                return self.primary.select_batch(view, W)
            except PolicyFailure as f:
                self._fail(f)
        return self.fallback.select_batch(view, W)  # type: ignore[no-any-return]

    def close(self) -> None:
        self.primary.close()
