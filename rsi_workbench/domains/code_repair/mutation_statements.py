"""Statement-level mutation operator families: ``negate_cond`` (a branch or loop condition, or a
returned comparison, negated) and GenProg's statement edits ``delete_stmt`` and ``insert_stmt``
(a simple statement of the same program inserted before, or after the last, statement of a block)."""

from __future__ import annotations

import ast

from rsi_workbench.domains.code_repair.mutation_sites import MutationSites, is_docstring

_BLOCKS = ast.FunctionDef | ast.AsyncFunctionDef | ast.If | ast.For | ast.While | ast.With


def condition_mutations(s: MutationSites, node: ast.AST) -> None:
    """``not (...)`` around the test of an ``if``/``while``/conditional expression or a returned
    comparison or boolean expression; an existing ``not`` removed instead."""
    if not (
        isinstance(node, ast.If | ast.While | ast.IfExp) or (isinstance(node, ast.Return) and node.value)
    ):
        return
    test = node.value if isinstance(node, ast.Return) else node.test  # type: ignore[union-attr]
    if test is None or (isinstance(node, ast.Return) and not isinstance(test, ast.Compare | ast.BoolOp)):
        return
    a, b = s.src.span(test)
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        s.add("negate_cond", node, a, b, s.src.text(test.operand), "`not` removed")
    else:
        s.add("negate_cond", node, a, b, f"not ({s.src.text(test)})", "condition negated")


def statement_mutations(s: MutationSites, node: ast.AST) -> None:
    """Delete each statement on a line of its own in a block's body or ``else``, and insert donor
    statements before it (and after it, when it is the block's last and does not leave the block)."""
    if not isinstance(node, _BLOCKS):
        return
    src = s.src
    for body_name in ("body", "orelse"):
        body = getattr(node, body_name, None) or []
        real = [st for st in body if not is_docstring(st)]
        for st in real:
            if isinstance(st, ast.FunctionDef | ast.ClassDef | ast.Import | ast.ImportFrom):
                continue
            first = src.offs[st.lineno - 1]
            last = src.offs[min(st.end_lineno or st.lineno, len(src.lines))]
            if src.program[first : src.pos(st.lineno, st.col_offset)].strip() or src.lines[
                st.lineno - 1
            ].lstrip().startswith("elif"):
                continue  # shares its line with other code (e.g. `if x: y`, or an `elif`)
            ind = src.indent(st.lineno)
            repl = f"{ind}pass\n" if len(real) == 1 else ""
            s.add("delete_stmt", st, first, last, repl, f"statement on line {st.lineno} deleted")
            _insertions(s, st, first, last, ind, at_end=st is real[-1])


def _insertions(s: MutationSites, st: ast.stmt, first: int, last: int, ind: str, at_end: bool) -> None:
    """``insert_stmt``: every distinct one-line donor statement inserted before ``st`` (and after it)."""
    donors = [d for d in s.simple_stmts if d is not st and s.src.text(d) != s.src.text(st)]
    seen: set[str] = set()
    for donor in donors:
        dt = s.src.text(donor)
        if "\n" in dt or dt in seen:
            continue
        seen.add(dt)
        w = 1 / max(1, len(donors))
        s.add("insert_stmt", st, first, first, f"{ind}{dt}\n", f"`{dt}` inserted before line {st.lineno}", w)
        if at_end and not isinstance(st, ast.Return | ast.Break | ast.Continue):
            s.add("insert_stmt", st, last, last, f"{ind}{dt}\n", f"`{dt}` inserted after line {st.lineno}", w)


__all__ = ["condition_mutations", "statement_mutations"]
