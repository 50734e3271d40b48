"""The Lead role: choose direction, parents and operation from the research graph's state.

:class:`Lead` is a small Protocol so a model-backed Lead (a causal LM emitting the constrained
format of :func:`format_lead_decision`) plugs in beside the built-in :class:`RuleLead`. Whatever
the Lead, :func:`validate_lead_decision` checks the decision against the graph and the harness's
operation budget before the campaign acts on it.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from rsi_workbench.discovery.records import OPERATIONS, check_parents
from rsi_workbench.discovery.workflow import Harness

DEFECTS = ("unavailable_data", "missing_control", "undecidable", "execution_failed")


class InvalidLeadDecision(ValueError):
    """A Lead decision names an unknown operation, direction or parent, or breaks the budget."""


@dataclass(frozen=True)
class NodeSummary:
    """What the Lead sees of one hypothesis version (no transcripts, no raw data)."""

    hypothesis_id: str
    direction: str
    family: str
    operation: str
    parents: tuple[str, ...]
    episode: int
    weighted: float | None  # DFM-Bench weighted profile, None until assessed
    verdict: str | None  # supports / weakens / inconclusive / blocked / failed
    progress: str | None  # progress label relative to its predecessor(s)
    defects: tuple[str, ...] = ()
    children: int = 0
    repaired: bool = False  # some child already repairs it
    added: tuple[str, ...] = ()  # what the hypothesis adds (feature groups, for crossover choice)
    ancestors: tuple[str, ...] = ()  # its lineage (so a crossover combines different branches)


@dataclass(frozen=True)
class LeadState:
    """The graph state a Lead decides from; :meth:`prompt` renders it for a language model."""

    episode: int
    round: int
    n_episodes: int
    directions: tuple[str, ...]
    nodes: tuple[NodeSummary, ...]
    operation_counts: dict[str, int]
    harness: Harness = field(default_factory=lambda: Harness())
    crossed: frozenset[frozenset[str]] = frozenset()  # parent sets already combined

    def node(self, hid: str) -> NodeSummary:
        for n in self.nodes:
            if n.hypothesis_id == hid:
                return n
        raise KeyError(hid)

    def allowed_operations(self) -> list[str]:
        ops = self.harness.operations
        allowed = [o for o in OPERATIONS if ops.allows(o, self.operation_counts.get(o, 0), self.n_episodes)]
        if not self.nodes:
            allowed = [o for o in allowed if o == "restart"] or ["restart"]
        return allowed

    def prompt(self) -> str:
        """A compact text rendering of the state, ending with the answer format."""
        lines = [
            f"episode {self.episode + 1} of {self.n_episodes}, round {self.round}",
            "directions: " + ", ".join(self.directions),
            "operations used: " + ", ".join(f"{o}={self.operation_counts.get(o, 0)}" for o in OPERATIONS),
            "allowed operations: " + ", ".join(self.allowed_operations()),
            "hypotheses (id | direction | op | parents | score | verdict | progress | defects | children):",
        ]
        for n in self.nodes:
            score = "-" if n.weighted is None else f"{n.weighted:.2f}"
            lines.append(
                f"{n.hypothesis_id} | {n.direction} | {n.operation} | {','.join(n.parents) or 'none'} | "
                f"{score} | {n.verdict or '-'} | {n.progress or '-'} | {','.join(n.defects) or 'none'} | "
                f"{n.children}"
            )
        lines.append(
            "answer with three lines: operation: <op>\\nparents: <ids or none>\\ndirection: <direction>"
        )
        return "\n".join(lines)


@dataclass(frozen=True)
class LeadDecision:
    """The Lead's choice for one episode; ``raw`` keeps a model's text output when there is one."""

    operation: str
    parents: tuple[str, ...]
    direction: str
    rationale: str = ""
    raw: str | None = None


@runtime_checkable
class Lead(Protocol):
    """Chooses direction, parents and operation from the graph state (paper: the Lead role)."""

    name: str

    def decide(self, state: LeadState, rng: random.Random) -> LeadDecision: ...


# -- constrained output format ------------------------------------------------------------------
def format_lead_decision(d: LeadDecision) -> str:
    """The constrained text format a model-backed Lead emits (and the built-in Lead is recorded in)."""
    return f"operation: {d.operation}\nparents: {','.join(d.parents) or 'none'}\ndirection: {d.direction}"


_LINE = re.compile(r"^\s*(operation|parents|direction)\s*:\s*(.*?)\s*$", re.IGNORECASE)


def parse_lead_decision(text: str, state: LeadState) -> LeadDecision:
    """Parse the constrained format and validate it; raises :class:`InvalidLeadDecision`."""
    fields: dict[str, str] = {}
    for line in text.strip().splitlines():
        m = _LINE.match(line)
        if m and m.group(1).lower() not in fields:
            fields[m.group(1).lower()] = m.group(2)
    missing = [k for k in ("operation", "parents", "direction") if k not in fields]
    if missing:
        raise InvalidLeadDecision(f"lead output lacks line(s) {missing}: {text[:200]!r}")
    parents = tuple(p.strip() for p in re.split(r"[,\s]+", fields["parents"]) if p.strip())
    if parents in (("none",), ("-",)):
        parents = ()
    d = LeadDecision(fields["operation"].lower(), parents, fields["direction"], raw=text)
    return validate_lead_decision(d, state)


def validate_lead_decision(d: LeadDecision, state: LeadState) -> LeadDecision:
    """Check operation, parents and direction against the graph and the harness's operation budget."""
    if d.operation not in OPERATIONS:
        raise InvalidLeadDecision(f"operation {d.operation!r} is not one of {OPERATIONS}")
    if not state.nodes and d.operation != "restart":
        raise InvalidLeadDecision(
            f"the research graph is empty: only a restart is possible, not {d.operation!r}"
        )
    if d.operation not in state.allowed_operations():
        raise InvalidLeadDecision(
            f"operation {d.operation!r} is over its budget; allowed now: {state.allowed_operations()}"
        )
    try:
        check_parents(d.operation, list(d.parents))
    except ValueError as e:
        raise InvalidLeadDecision(str(e)) from None
    known = {n.hypothesis_id for n in state.nodes}
    unknown = [p for p in d.parents if p not in known]
    if unknown:
        raise InvalidLeadDecision(f"unknown parent(s) {unknown}")
    if d.direction not in state.directions:
        raise InvalidLeadDecision(f"direction {d.direction!r} is not one of {list(state.directions)}")
    if d.parents:
        dirs = {state.node(p).direction for p in d.parents}
        if dirs != {d.direction}:
            raise InvalidLeadDecision(f"parents {list(d.parents)} are in {sorted(dirs)}, not {d.direction!r}")
    if d.operation == "crossover" and frozenset(d.parents) in state.crossed:
        raise InvalidLeadDecision(f"parents {sorted(d.parents)} were already combined")
    return d


# -- built-in Lead ------------------------------------------------------------------------------
@dataclass
class RuleLead:
    """Built-in deterministic Lead: repair defects, combine supported branches, evolve the best, restart.

    Priorities, each gated by the harness's operation budget: (1) breadth — restart in each
    direction once; (2) repair the best unrepaired version with a recorded defect; (3) crossover
    of two executed, supported or inconclusive versions of one direction on different branches
    (neither descends from the other) that add different groups and were not yet combined;
    (4) evolve the best version with room for children in a direction that is not stale;
    (5) restart in the least explored direction. ``explore_rate`` adds seeded exploration.
    """

    name: str = "rule-lead"

    def decide(self, state: LeadState, rng: random.Random) -> LeadDecision:
        allowed = set(state.allowed_operations())
        per_dir = Counter(n.direction for n in state.nodes)
        unexplored = [d for d in state.directions if per_dir[d] == 0]
        least = min(state.directions, key=lambda d: (per_dir[d], state.directions.index(d)))
        if "restart" in allowed and unexplored:
            return LeadDecision("restart", (), unexplored[0], "breadth: unexplored direction")
        if "restart" in allowed and rng.random() < state.harness.roles.explore_rate:
            return LeadDecision("restart", (), least, "exploration")

        def score(n: NodeSummary) -> float:
            return -1.0 if n.weighted is None else n.weighted

        if "repair" in allowed:
            broken = [n for n in state.nodes if n.defects and not n.repaired]
            if broken:
                n = max(broken, key=lambda n: (score(n), -n.episode))
                return LeadDecision(
                    "repair", (n.hypothesis_id,), n.direction, f"repair {','.join(n.defects)}"
                )
        if "crossover" in allowed:
            pair = self._crossover_pair(state)
            if pair is not None:
                a, b = pair
                return LeadDecision("crossover", (a.hypothesis_id, b.hypothesis_id), a.direction, "combine")
        if "evolve" in allowed:
            stale = {d for d in state.directions if self._stale(state, d)}
            room = [
                n
                for n in state.nodes
                if n.children < state.harness.roles.max_children
                and not n.defects
                and n.direction not in stale
                and n.progress != "duplicate"
            ]
            if room:
                n = max(room, key=lambda n: (score(n), n.episode))
                return LeadDecision("evolve", (n.hypothesis_id,), n.direction, "develop the best version")
        if "restart" in allowed:
            return LeadDecision("restart", (), least, "nothing left to develop")
        # every other operation is exhausted: evolve anything with room, else repair, else restart
        fallback = sorted(state.nodes, key=score, reverse=True)
        if fallback and "evolve" in allowed:
            return LeadDecision("evolve", (fallback[0].hypothesis_id,), fallback[0].direction, "fallback")
        return LeadDecision("restart", (), least, "fallback")

    @staticmethod
    def _stale(state: LeadState, direction: str) -> bool:
        labels = [n.progress for n in state.nodes if n.direction == direction and n.progress]
        k = state.harness.roles.stale_after
        return len(labels) >= k and all(x in ("duplicate", "insufficient_evidence") for x in labels[-k:])

    @staticmethod
    def _crossover_pair(state: LeadState) -> tuple[NodeSummary, NodeSummary] | None:
        best: tuple[float, NodeSummary, NodeSummary] | None = None
        # executed branches that carry some signal (supported, or inconclusive) can be combined
        good = [n for n in state.nodes if n.verdict in ("supports", "inconclusive") and not n.defects]
        for i, a in enumerate(good):
            for b in good[i + 1 :]:
                if a.direction != b.direction:
                    continue
                if a.hypothesis_id in b.ancestors or b.hypothesis_id in a.ancestors:
                    continue
                if set(a.added) <= set(b.added) or set(b.added) <= set(a.added):
                    continue
                if frozenset((a.hypothesis_id, b.hypothesis_id)) in state.crossed:
                    continue
                s = (a.weighted or 0.0) + (b.weighted or 0.0) + 5.0 * (a.verdict == b.verdict == "supports")
                if best is None or s > best[0]:
                    best = (s, a, b)
        return None if best is None else (best[1], best[2])
