"""``MutationCoder``: automated program repair in the GenProg / SBFL tradition, the built-in ``Coder``.

Fault localization ranks lines by Ochiai suspiciousness over the public tests' line coverage,
``ochiai(s) = failed(s) / sqrt(total_failed * (failed(s) + passed(s)))``; AST mutation operators are
then applied at suspicious lines and ``k`` distinct, compiling candidates are drawn (weighted by
suspiciousness x operator prior, deterministic for a seed; each candidate's ``meta['weight']`` is its
weight, the coder's own preference). Edits splice source text, so untouched
lines (comments, formatting) survive and each candidate's unified diff shows only the edit.
The same operators inject bugs into correct reference programs (:func:`inject_bugs`).
The operators themselves live in ``mutation.py`` (with ``mutation_expressions.py`` and
``mutation_statements.py`` per family); their names are re-exported here.
"""

from __future__ import annotations

import ast
import difflib
import hashlib
import math
import random
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rsi_workbench.agents import Candidate
from rsi_workbench.domains.code_repair.mutation import OPERATOR_PRIOR, OPERATORS, enumerate_mutations
from rsi_workbench.domains.code_repair.mutation_sites import Mutation
from rsi_workbench.domains.code_repair.sandbox import Sandbox, Status, TestOutcome, pass_count


# ------------------------------------------------------------------------------ fault localization
def ochiai(outcomes: Sequence[TestOutcome]) -> dict[int, float]:
    """Ochiai suspiciousness per line from the tests' coverage and pass/fail (SBFL)."""
    failed = [set(o.covered_lines or ()) for o in outcomes if o.status != Status.AC]
    passed = [set(o.covered_lines or ()) for o in outcomes if o.status == Status.AC]
    lines = set().union(*failed, *passed) if (failed or passed) else set()
    if not failed:
        return {ln: 0.1 for ln in lines}
    scores = {}
    for ln in lines:
        ef = sum(ln in f for f in failed)
        ep = sum(ln in p for p in passed)
        scores[ln] = ef / math.sqrt(len(failed) * (ef + ep)) if ef else 0.0
    return scores


@dataclass(frozen=True)
class RepairFeedback:
    """What a feedback round tells the coder: the program that was executed and its public outcomes."""

    program: str
    outcomes: tuple[TestOutcome, ...]
    attempts: tuple[tuple[str, int, int], ...] = ()  # earlier executed (program, passed, n_public)

    @property
    def passed(self) -> int:
        return pass_count(self.outcomes)


def unified_diff(before: str, after: str, name: str = "program.py") -> str:
    """The unified diff from ``before`` to ``after`` (the candidate's action)."""
    return "".join(
        difflib.unified_diff(
            before.splitlines(keepends=True), after.splitlines(keepends=True), f"a/{name}", f"b/{name}"
        )
    )


def _norm(program: str) -> str | None:
    try:
        return ast.dump(ast.parse(program))
    except (SyntaxError, ValueError, RecursionError):
        return None


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _weighted_order(
    items: Sequence[Mutation], weights: Sequence[float], rng: random.Random
) -> list[Mutation]:
    """A weighted random permutation (Efraimidis-Spirakis keys ``u ** (1 / w)``), deterministic per rng."""
    keyed = []
    for i, (m, w) in enumerate(zip(items, weights)):
        u = rng.random()
        keyed.append((math.log(u if u > 0 else 1e-300) / max(w, 1e-12), i, m))
    keyed.sort(key=lambda t: (-t[0], t[1]))
    return [m for _, _, m in keyed]


def _draw(
    program: str,
    muts: Sequence[Mutation],
    weights: Sequence[float],
    k: int,
    rng: random.Random,
) -> Iterator[tuple[str, list[Mutation]]]:
    """Yield distinct compiling mutants: single edits in weighted order, then pairs of edits."""
    order = _weighted_order(muts, weights, rng)
    for m in order:
        yield m.apply(program), [m]
    # second-order mutants (GenProg-style multi-edit) when single edits run out
    top = order[: max(8, 4 * k)]
    for i, m1 in enumerate(top):
        for m2 in top[i + 1 :]:
            if m1.end <= m2.start or m2.end <= m1.start:
                a, b = sorted((m1, m2), key=lambda m: (m.start, m.end), reverse=True)
                yield b.apply(a.apply(program)), [m1, m2]


def _select(
    program: str, pool: Iterator[tuple[str, list[Mutation]]], k: int, exclude: set[str]
) -> list[tuple[str, list[Mutation]]]:
    chosen: list[tuple[str, list[Mutation]]] = []
    seen = set(exclude)
    base = _norm(program)
    if base is not None:
        seen.add(base)
    for prog, edits in pool:
        if len(chosen) >= k:
            break
        try:
            compile(prog, "candidate.py", "exec")
        except (SyntaxError, ValueError):
            continue
        key = _norm(prog)
        if key is None or key in seen:
            continue
        seen.add(key)
        chosen.append((prog, edits))
    return chosen


def _candidate(program: str, new: str, edits: list[Mutation], extra: Mapping[str, Any]) -> Candidate:
    meta = {
        "operator": edits[0].operator if len(edits) == 1 else "+".join(e.operator for e in edits),
        "operators": [e.operator for e in edits],
        "lines": [e.line for e in edits],
        "edits": [e.description for e in edits],
        "parent_sha": _sha(program),
        "program_sha": _sha(new),
        **extra,
    }
    return Candidate(program=new, diff=unified_diff(program, new), meta=meta)


@dataclass
class MutationCoder:
    """SBFL (Ochiai) + AST mutation repair proposer; implements ``agents.Coder``.

    ``propose(task, program, feedback, k, rng)`` localizes faults from ``feedback`` (a
    :class:`RepairFeedback` for ``program`` carrying line coverage); without it, it runs the task's
    public tests on ``program`` in its sandbox with line tracing (cached per program).
    """

    sandbox: Sandbox | None = None
    operators: tuple[str, ...] = OPERATORS
    prior: Mapping[str, float] = field(default_factory=lambda: dict(OPERATOR_PRIOR))
    uncovered_weight: float = 0.02
    executor: Any = None
    _coverage: dict[str, tuple[TestOutcome, ...]] = field(default_factory=dict, repr=False)

    name = "mutation-sbfl"

    def localize(self, task: Any, program: str, feedback: Any = None) -> dict[int, float]:
        """Ochiai suspiciousness per line of ``program`` over the task's public tests."""
        outcomes: Sequence[TestOutcome] | None = None
        if isinstance(feedback, RepairFeedback) and feedback.program == program:
            outcomes = feedback.outcomes
        if outcomes is None or any(o.covered_lines is None for o in outcomes if o.status != Status.CE):
            key = _sha(program + "\0" + str(task.task_id))
            if key not in self._coverage:
                sb = self.sandbox or Sandbox()
                self.sandbox = sb
                outs = sb.run_suite(program, task.public_tests, task.entry_point, self.executor, trace=True)
                self._coverage[key] = tuple(outs)
            outcomes = self._coverage[key]
        return ochiai(outcomes)

    def propose(self, task: Any, program: str, feedback: Any, k: int, rng: random.Random) -> list[Candidate]:
        """``k`` distinct compiling candidates (fewer only if the operators cannot make ``k``)."""
        if k < 1:
            raise ValueError("k must be >= 1")
        muts = enumerate_mutations(program, self.operators)
        susp = self.localize(task, program, feedback)
        weights = [
            (susp.get(m.line, 0.0) ** 2 + self.uncovered_weight * (m.line not in susp) + 1e-3)
            * self.prior.get(m.operator, 1.0)
            * m.weight
            for m in muts
        ]
        picked = _select(program, _draw(program, muts, weights, k, rng), k, set())
        weight_of = {id(m): w for m, w in zip(muts, weights, strict=True)}
        return [
            _candidate(
                program,
                new,
                edits,
                {
                    "suspiciousness": [round(susp.get(e.line, 0.0), 4) for e in edits],
                    # the coder's own preference (the draw's weight; two edits: the product)
                    "weight": float(f"{math.prod(weight_of[id(e)] for e in edits):.6g}"),
                },
            )
            for new, edits in picked
        ]


def inject_bugs(
    reference_program: str,
    entry_point: str,
    n: int,
    rng: random.Random,
    operators: Iterable[str] = OPERATORS,
) -> list[Candidate]:
    """``n`` distinct compiling mutants of a correct program (uniform over operators, then sites;
    two-edit mutants when single edits run out; fewer than ``n`` only for tiny programs), for
    world-model training data. Some may be equivalent mutants: execute them for labels."""
    muts = [m for m in enumerate_mutations(reference_program, operators)]
    tree = ast.parse(reference_program)
    fn_lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            fn_lines.update(range(node.lineno + 1, (node.end_lineno or node.lineno) + 1))
    muts = [m for m in muts if m.line in fn_lines] or muts
    per_op: dict[str, int] = {}
    for m in muts:
        per_op[m.operator] = per_op.get(m.operator, 0) + 1
    weights = [1.0 / per_op[m.operator] for m in muts]
    # single edits first; second-order mutants only when a short program runs out of them
    picked = _select(reference_program, _draw(reference_program, muts, weights, n, rng), n, set())
    return [
        _candidate(reference_program, new, edits, {"kind": "injected_bug", "entry_point": entry_point})
        for new, edits in picked
    ]


def apply_incumbent_rule(incumbent_passed: int, candidate_passed: int) -> bool:
    """The kept program is replaced by the executed candidate when that candidate passes at least as
    many public tests as the incumbent (ties move on, so search does not stall on plateaus)."""
    return candidate_passed >= incumbent_passed


__all__ = [
    "OPERATORS",
    "OPERATOR_PRIOR",
    "MutationCoder",
    "Mutation",
    "RepairFeedback",
    "apply_incumbent_rule",
    "enumerate_mutations",
    "inject_bugs",
    "ochiai",
    "unified_diff",
]
