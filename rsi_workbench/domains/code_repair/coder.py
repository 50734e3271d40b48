"""``MutationCoder``: automated program repair in the GenProg / SBFL tradition, the built-in ``Coder``.

Fault localization ranks lines by Ochiai suspiciousness over the public tests' line coverage,
``ochiai(s) = failed(s) / sqrt(total_failed * (failed(s) + passed(s)))``; AST mutation operators are
then applied at suspicious lines and ``k`` distinct, compiling candidates are drawn (weighted by
suspiciousness x operator prior, deterministic for a seed). Edits splice source text, so untouched
lines (comments, formatting) survive and each candidate's unified diff shows only the edit.
The same operators inject bugs into correct reference programs (:func:`inject_bugs`).
"""

from __future__ import annotations

import ast
import difflib
import hashlib
import math
import random
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rsi_workbench.agents import Candidate
from rsi_workbench.domains.code_repair.sandbox import Sandbox, Status, TestOutcome, pass_count

# ------------------------------------------------------------------------------------ operators
OPERATORS: tuple[str, ...] = (
    "cmp_swap",
    "arith_swap",
    "bool_swap",
    "off_by_one",
    "swap_args",
    "swap_vars",
    "negate_cond",
    "delete_stmt",
    "insert_stmt",
    "call_replace",
    "wrap_call",
    "drop_operand",
    "const_replace",
)
# prior weight of each operator (how often such an edit fixes a human bug); swap_vars and insert_stmt
# have many alternatives per site, so their weight is spread over them.
OPERATOR_PRIOR: dict[str, float] = {
    "cmp_swap": 1.0,
    "arith_swap": 1.0,
    "bool_swap": 0.7,
    "off_by_one": 1.0,
    "swap_args": 0.5,
    "swap_vars": 0.6,
    "negate_cond": 0.6,
    "delete_stmt": 0.5,
    "insert_stmt": 0.4,
    "call_replace": 0.8,
    "wrap_call": 0.3,
    "drop_operand": 0.5,
    "const_replace": 0.4,
}

_BIN_SYM = {
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.Div: "/",
    ast.FloorDiv: "//",
    ast.Mod: "%",
    ast.Pow: "**",
    ast.BitAnd: "&",
    ast.BitOr: "|",
    ast.BitXor: "^",
    ast.LShift: "<<",
    ast.RShift: ">>",
}
_AOR = ("+", "-", "*", "/", "//", "%")
_BIN_ALT = {sym: [x for x in _AOR if x != sym] for sym in _AOR} | {
    "**": ["*"],
    "&": ["|"],
    "|": ["&"],
    "^": ["|"],
    "<<": [">>"],
    ">>": ["<<"],
}
_CMP_SYM = {
    ast.Lt: "<",
    ast.LtE: "<=",
    ast.Gt: ">",
    ast.GtE: ">=",
    ast.Eq: "==",
    ast.NotEq: "!=",
    ast.In: "in",
    ast.NotIn: "not in",
    ast.Is: "is",
    ast.IsNot: "is not",
}
_ROR = ("<", "<=", ">", ">=", "==", "!=")
_CMP_ALT = {sym: [x for x in _ROR if x != sym] for sym in _ROR} | {
    "in": ["not in"],
    "not in": ["in"],
    "is": ["is not", "=="],
    "is not": ["is", "!="],
}
_NONCOMMUTATIVE = (ast.Sub, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow, ast.LShift, ast.RShift)
_CALL_GROUPS: tuple[tuple[str, ...], ...] = (
    ("min", "max"),
    ("any", "all"),
    ("sorted", "reversed"),
    ("int", "round", "float"),
    ("str", "repr"),
    ("sum", "len"),
    ("floor", "ceil"),
    ("lower", "upper", "swapcase"),
    ("startswith", "endswith"),
    ("isupper", "islower"),
    ("isdigit", "isalpha", "isalnum", "isspace"),
    ("strip", "lstrip", "rstrip"),
    ("find", "rfind"),
    ("index", "rindex"),
    ("split", "rsplit"),
    ("append", "extend"),
    ("keys", "values", "items"),
    ("sort", "reverse"),
    ("pop", "remove"),
)
_CALL_ALT = {name: [n for n in grp if n != name] for grp in _CALL_GROUPS for name in grp}
_WRAPPERS = ("abs", "len", "int")


@dataclass(frozen=True)
class Mutation:
    """One source edit: replace characters ``[start, end)`` of the program with ``text``."""

    operator: str
    line: int
    start: int
    end: int
    text: str
    description: str
    weight: float = 1.0

    def apply(self, program: str) -> str:
        return program[: self.start] + self.text + program[self.end :]


def _line_offsets(program: str) -> list[int]:
    offs = [0]
    for ln in program.splitlines(keepends=True):
        offs.append(offs[-1] + len(ln))
    return offs


class _Source:
    """Maps ast (line, utf-8 byte column) positions to character offsets in the program text."""

    def __init__(self, program: str):
        self.program = program
        self.lines = program.splitlines(keepends=True)
        self.offs = _line_offsets(program)

    def pos(self, lineno: int, col: int) -> int:
        line = self.lines[lineno - 1] if lineno - 1 < len(self.lines) else ""
        return self.offs[lineno - 1] + len(line.encode("utf-8")[:col].decode("utf-8", errors="ignore"))

    def span(self, node: ast.AST) -> tuple[int, int]:
        n: Any = node
        return self.pos(n.lineno, n.col_offset), self.pos(n.end_lineno, n.end_col_offset)

    def text(self, node: ast.AST) -> str:
        a, b = self.span(node)
        return self.program[a:b]

    def indent(self, lineno: int) -> str:
        line = self.lines[lineno - 1]
        return line[: len(line) - len(line.lstrip())]


def _replace_token(src: _Source, a: int, b: int, old: str, new: str) -> tuple[int, int, str] | None:
    """Find operator token ``old`` in the gap ``[a, b)`` and return the edit replacing it with ``new``."""
    gap = src.program[a:b]
    pat = r"\b" + re.escape(old).replace(r"\ ", r"\s+") + r"\b" if old[0].isalpha() else re.escape(old)
    for m in re.finditer(pat, gap):
        # symbolic ops: do not match a prefix of a longer operator (e.g. '<' inside '<=')
        if not old[0].isalpha():
            before = gap[m.start() - 1] if m.start() > 0 else " "
            after = gap[m.end()] if m.end() < len(gap) else " "
            if after in "=<>*/" or before in "=<>*/!":
                continue
        return a + m.start(), a + m.end(), new
    return None


def _function_locals(fn: ast.AST) -> list[str]:
    names: set[str] = set()
    args: Any = getattr(fn, "args", None)
    if args is not None:
        for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]:
            names.add(a.arg)
    for n in ast.walk(fn):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            names.add(n.id)
    return sorted(names)


def _is_docstring(stmt: ast.stmt) -> bool:
    return (
        isinstance(stmt, ast.Expr)
        and isinstance(stmt.value, ast.Constant)
        and isinstance(stmt.value.value, str)
    )


def enumerate_mutations(program: str, operators: Iterable[str] = OPERATORS) -> list[Mutation]:
    """Every single-edit mutation the operators allow on ``program`` (in source order, deterministic)."""
    tree = ast.parse(program)
    src = _Source(program)
    ops = set(operators)
    unknown = ops - set(OPERATORS)
    if unknown:
        raise ValueError(f"unknown mutation operators {sorted(unknown)}; allowed: {list(OPERATORS)}")
    out: list[Mutation] = []
    parents: dict[int, ast.AST] = {}
    for p in ast.walk(tree):
        for c in ast.iter_child_nodes(p):
            parents[id(c)] = p
    funcs = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]

    def enclosing_fn(node: ast.AST) -> ast.AST | None:
        cur = parents.get(id(node))
        while cur is not None and not isinstance(cur, ast.FunctionDef | ast.AsyncFunctionDef):
            cur = parents.get(id(cur))
        return cur

    def add(op: str, node: ast.AST, a: int, b: int, text: str, desc: str, weight: float = 1.0) -> None:
        if op in ops:
            out.append(Mutation(op, getattr(node, "lineno", 0), a, b, text, desc, weight))

    docstrings = {id(s.value) for f in [tree, *funcs] for s in f.body[:1] if _is_docstring(s)}  # type: ignore[attr-defined]
    simple_stmts = [
        s
        for f in funcs
        for s in ast.walk(f)
        if isinstance(s, ast.Assign | ast.AugAssign | ast.Expr | ast.Return | ast.Break | ast.Continue)
        and not _is_docstring(s)
    ]

    locals_of: dict[int, list[str]] = {}
    skip = set(docstrings)  # annotations are not behaviour: never mutate inside them
    for n in ast.walk(tree):
        annos: list[Any] = []
        if isinstance(n, ast.arg | ast.AnnAssign):
            annos.append(n.annotation)
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef):
            annos.append(n.returns)
        for a in annos:
            if a is not None:
                skip.update(id(x) for x in ast.walk(a))

    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Compare):
            left = node.left
            for op, right in zip(node.ops, node.comparators):
                sym = _CMP_SYM[type(op)]
                a, b = src.span(left)[1], src.span(right)[0]
                for alt in _CMP_ALT[sym]:
                    e = _replace_token(src, a, b, sym, alt)
                    if e:
                        add("cmp_swap", node, *e, f"`{sym}` -> `{alt}`", 1 / len(_CMP_ALT[sym]))
                left = right
            if len(node.ops) == 1:
                (la, lb), (ra, rb) = src.span(node.left), src.span(node.comparators[0])
                text = program[ra:rb] + program[lb:ra] + program[la:lb]
                add("swap_args", node, la, rb, text, "comparison operands swapped", 0.5)
        elif isinstance(node, ast.BinOp) and type(node.op) in _BIN_SYM:
            sym = _BIN_SYM[type(node.op)]
            a, b = src.span(node.left)[1], src.span(node.right)[0]
            for alt in _BIN_ALT[sym]:
                e = _replace_token(src, a, b, sym, alt)
                if e:
                    add("arith_swap", node, *e, f"`{sym}` -> `{alt}`", 1 / len(_BIN_ALT[sym]))
            a, b = src.span(node)
            for keep in (node.left, node.right):
                add(
                    "drop_operand",
                    node,
                    a,
                    b,
                    src.text(keep),
                    f"`{sym} {src.text(node.right)[:20]}` dropped"
                    if keep is node.left
                    else f"`{src.text(node.left)[:20]} {sym}` dropped",
                    0.5,
                )
            if isinstance(node.op, ast.Sub):
                a, b = src.span(node)
                add("wrap_call", node, a, b, f"abs({src.text(node)})", "`abs(...)` added", 0.5)
            if isinstance(node.op, _NONCOMMUTATIVE):
                (la, lb), (ra, rb) = src.span(node.left), src.span(node.right)
                lt, rt = program[la:lb], program[ra:rb]
                text = rt + program[lb:ra] + lt
                add("swap_args", node, la, rb, text, f"operands of `{sym}` swapped")
        elif isinstance(node, ast.AugAssign) and type(node.op) in _BIN_SYM:
            sym = _BIN_SYM[type(node.op)]
            a, b = src.span(node.target)[1], src.span(node.value)[0]
            for alt in _BIN_ALT[sym]:
                e = _replace_token(src, a, b, sym + "=", alt + "=")
                if e:
                    add("arith_swap", node, *e, f"`{sym}=` -> `{alt}=`", 1 / len(_BIN_ALT[sym]))
        elif isinstance(node, ast.BoolOp):
            sym, alt = ("and", "or") if isinstance(node.op, ast.And) else ("or", "and")
            a, b = src.span(node.values[0])[1], src.span(node.values[1])[0]
            e = _replace_token(src, a, b, sym, alt)
            if e:
                add("bool_swap", node, *e, f"`{sym}` -> `{alt}`")
        elif isinstance(node, ast.Constant) and isinstance(node.value, bool):
            a, b = src.span(node)
            add("bool_swap", node, a, b, str(not node.value), f"`{node.value}` -> `{not node.value}`")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            if isinstance(parents.get(id(node)), ast.JoinedStr | ast.FormattedValue):
                continue
            a, b = src.span(node)
            alts = ['""', '" "'] if node.value else ['" "']
            for alt in alts:
                if alt != src.text(node):
                    add(
                        "const_replace",
                        node,
                        a,
                        b,
                        alt,
                        f"string {src.text(node)[:20]} -> {alt}",
                        1 / len(alts),
                    )
        elif isinstance(node, ast.Constant) and type(node.value) is int:
            a, b = src.span(node)
            for v in sorted({0, 1, 2} - {node.value, node.value + 1, node.value - 1}):
                add("const_replace", node, a, b, str(v), f"constant {node.value} -> {v}", 0.2)
            a, b = src.span(node)
            for delta in (1, -1):
                v = node.value + delta
                if v < 0 and isinstance(parents.get(id(node)), ast.UnaryOp):
                    continue
                add("off_by_one", node, a, b, str(v), f"constant {node.value} -> {v}", 0.5)
        elif isinstance(node, ast.Subscript):
            sl = node.slice
            if isinstance(sl, ast.Slice):
                for bound_name in ("lower", "upper"):
                    bnd = getattr(sl, bound_name)
                    if bnd is not None and not isinstance(bnd, ast.Constant):
                        a, b = src.span(bnd)
                        for d in ("+ 1", "- 1"):
                            add(
                                "off_by_one",
                                node,
                                a,
                                b,
                                f"({src.text(bnd)}) {d}",
                                f"slice {bound_name} {d}",
                                0.5,
                            )
                    if bnd is not None and isinstance(bnd, ast.Constant | ast.UnaryOp):
                        a, b = src.span(bnd)
                        add("off_by_one", node, a, b, "", f"slice {bound_name} removed", 0.5)
            elif not isinstance(sl, ast.Tuple | ast.Constant):
                a, b = src.span(sl)
                for d in ("+ 1", "- 1"):
                    add("off_by_one", node, a, b, f"{src.text(sl)} {d}", f"index {d}", 0.5)
        elif isinstance(node, ast.Call):
            fname: str | None = None
            fnode: ast.expr = node.func
            if isinstance(node.func, ast.Name):
                fname, fnode = node.func.id, node.func
            elif isinstance(node.func, ast.Attribute):
                fname, fnode = node.func.attr, node.func
            if fname in _CALL_ALT:
                if isinstance(fnode, ast.Attribute):
                    a = src.span(fnode.value)[1]
                    b = src.span(fnode)[1]
                    gap = program[a:b]
                    i = gap.rfind(fname)
                    a, b = a + i, a + i + len(fname)
                else:
                    a, b = src.span(fnode)
                for alt in _CALL_ALT[fname]:
                    add("call_replace", node, a, b, alt, f"`{fname}` -> `{alt}`", 1 / len(_CALL_ALT[fname]))
            if fname in _WRAPPERS and len(node.args) == 1 and not node.keywords:
                a, b = src.span(node)
                add("wrap_call", node, a, b, src.text(node.args[0]), f"`{fname}(...)` removed")
            if fname == "range":
                for arg in node.args:
                    if not isinstance(arg, ast.Constant):
                        a, b = src.span(arg)
                        for d in ("+ 1", "- 1"):
                            add("off_by_one", node, a, b, f"{src.text(arg)} {d}", f"range bound {d}", 0.5)
            pos = [x for x in node.args if not isinstance(x, ast.Starred)]
            if len(pos) == len(node.args) and len(pos) >= 2:
                for i in range(len(pos) - 1):
                    (xa, xb), (ya, yb) = src.span(pos[i]), src.span(pos[i + 1])
                    text = program[ya:yb] + program[xb:ya] + program[xa:xb]
                    add("swap_args", node, xa, yb, text, f"arguments {i} and {i + 1} swapped")
        elif isinstance(node, ast.Name) and (
            isinstance(node.ctx, ast.Load) or isinstance(parents.get(id(node)), ast.AugAssign)
        ):
            fn = enclosing_fn(node)
            if fn is not None:
                par = parents.get(id(node))
                if isinstance(par, ast.Call) and par.func is node:
                    continue
                local = locals_of.setdefault(id(fn), _function_locals(fn))
                alts = [v for v in local if v != node.id]
                if node.id in local:
                    a, b = src.span(node)
                    for alt_name in alts:
                        w = 1 / max(1, len(alts))
                        add("swap_vars", node, a, b, alt_name, f"`{node.id}` -> `{alt_name}`", w)
        if isinstance(node, ast.If | ast.While | ast.IfExp) or (isinstance(node, ast.Return) and node.value):
            test = node.value if isinstance(node, ast.Return) else node.test  # type: ignore[union-attr]
            if test is None or (
                isinstance(node, ast.Return) and not isinstance(test, ast.Compare | ast.BoolOp)
            ):
                continue
            a, b = src.span(test)
            if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
                add("negate_cond", node, a, b, src.text(test.operand), "`not` removed")
            else:
                add("negate_cond", node, a, b, f"not ({src.text(test)})", "condition negated")
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.If | ast.For | ast.While | ast.With):
            for body_name in ("body", "orelse"):
                body = getattr(node, body_name, None) or []
                real = [s for s in body if not _is_docstring(s)]
                for s in real:
                    if isinstance(s, ast.FunctionDef | ast.ClassDef | ast.Import | ast.ImportFrom):
                        continue
                    first = src.offs[s.lineno - 1]
                    last = src.offs[min(s.end_lineno or s.lineno, len(src.lines))]
                    if src.program[first : src.pos(s.lineno, s.col_offset)].strip() or src.lines[
                        s.lineno - 1
                    ].lstrip().startswith("elif"):
                        continue  # shares its line with other code (e.g. `if x: y`, or an `elif`)
                    ind = src.indent(s.lineno)
                    repl = f"{ind}pass\n" if len(real) == 1 else ""
                    add("delete_stmt", s, first, last, repl, f"statement on line {s.lineno} deleted")
                    donors = [d for d in simple_stmts if d is not s and src.text(d) != src.text(s)]
                    seen: set[str] = set()
                    for donor in donors:
                        dt = src.text(donor)
                        if "\n" in dt or dt in seen:
                            continue
                        seen.add(dt)
                        w = 1 / max(1, len(donors))
                        add(
                            "insert_stmt",
                            s,
                            first,
                            first,
                            f"{ind}{dt}\n",
                            f"`{dt}` inserted before line {s.lineno}",
                            w,
                        )
                        if s is real[-1] and not isinstance(s, ast.Return | ast.Break | ast.Continue):
                            add(
                                "insert_stmt",
                                s,
                                last,
                                last,
                                f"{ind}{dt}\n",
                                f"`{dt}` inserted after line {s.lineno}",
                                w,
                            )
    return out


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
        return [
            _candidate(
                program, new, edits, {"suspiciousness": [round(susp.get(e.line, 0.0), 4) for e in edits]}
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
