"""Where a mutation operator may edit a program: the source edit (:class:`Mutation`), the map from ast
positions to text offsets, and :class:`MutationSites`, the parsed program the operator families walk.

Edits splice source text rather than unparse the tree, so untouched lines (comments, formatting)
survive and each candidate's diff shows only the edit.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


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


class SourceMap:
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


def replace_token(src: SourceMap, a: int, b: int, old: str, new: str) -> tuple[int, int, str] | None:
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


def function_locals(fn: ast.AST) -> list[str]:
    """The names a function binds (parameters and assignment targets), sorted."""
    names: set[str] = set()
    args: Any = getattr(fn, "args", None)
    if args is not None:
        for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]:
            names.add(a.arg)
    for n in ast.walk(fn):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            names.add(n.id)
    return sorted(names)


def is_docstring(stmt: ast.stmt) -> bool:
    return (
        isinstance(stmt, ast.Expr)
        and isinstance(stmt.value, ast.Constant)
        and isinstance(stmt.value.value, str)
    )


class MutationSites:
    """A parsed program the operator families walk: parent links, the nodes never mutated (docstrings
    and annotations), the simple statements that donate insertions, and the mutations found so far."""

    def __init__(self, program: str, operators: set[str]):
        self.program = program
        self.tree = ast.parse(program)
        self.src = SourceMap(program)
        self.ops = operators
        self.out: list[Mutation] = []
        self.parents: dict[int, ast.AST] = {}
        for p in ast.walk(self.tree):
            for c in ast.iter_child_nodes(p):
                self.parents[id(c)] = p
        funcs = [n for n in ast.walk(self.tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
        self.simple_stmts = [
            s
            for f in funcs
            for s in ast.walk(f)
            if isinstance(s, ast.Assign | ast.AugAssign | ast.Expr | ast.Return | ast.Break | ast.Continue)
            and not is_docstring(s)
        ]
        self._locals_of: dict[int, list[str]] = {}
        self.skip = self._unmutable(funcs)

    def _unmutable(self, funcs: Sequence[ast.AST]) -> set[int]:
        """Docstrings and annotations are not behaviour: never mutate inside them."""
        skip = {id(s.value) for f in [self.tree, *funcs] for s in f.body[:1] if is_docstring(s)}  # type: ignore[attr-defined]
        for n in ast.walk(self.tree):
            annos: list[Any] = []
            if isinstance(n, ast.arg | ast.AnnAssign):
                annos.append(n.annotation)
            if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef):
                annos.append(n.returns)
            for a in annos:
                if a is not None:
                    skip.update(id(x) for x in ast.walk(a))
        return skip

    def add(self, op: str, node: ast.AST, a: int, b: int, text: str, desc: str, weight: float = 1.0) -> None:
        """Record the edit ``[a, b) -> text`` at ``node`` if operator ``op`` is enabled."""
        if op in self.ops:
            self.out.append(Mutation(op, getattr(node, "lineno", 0), a, b, text, desc, weight))

    def enclosing_fn(self, node: ast.AST) -> ast.AST | None:
        cur = self.parents.get(id(node))
        while cur is not None and not isinstance(cur, ast.FunctionDef | ast.AsyncFunctionDef):
            cur = self.parents.get(id(cur))
        return cur

    def locals_of(self, fn: ast.AST) -> list[str]:
        return self._locals_of.setdefault(id(fn), function_locals(fn))


__all__ = ["Mutation", "MutationSites", "SourceMap", "function_locals", "is_docstring", "replace_token"]
