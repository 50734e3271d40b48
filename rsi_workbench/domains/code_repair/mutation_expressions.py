"""Expression-level mutation operator families (mutation-testing vocabulary):

- operator replacement: relational (``cmp_swap``, ROR), arithmetic (``arith_swap``, AOR) and logical
  (``bool_swap``, LCR) operators swapped for their alternatives;
- operands: ``swap_args`` (operands or call arguments exchanged), ``drop_operand``, ``swap_vars``
  (a variable read replaced by another local of the same function);
- constants and bounds: ``const_replace``, ``off_by_one`` on constants, slice bounds, indices and
  ``range`` bounds;
- calls: ``call_replace`` within a group of related callables, ``wrap_call`` adding or removing a
  wrapper.

Each function adds, in a fixed order, the edits one ast node allows (see :func:`expression_mutations`).
"""

from __future__ import annotations

import ast

from rsi_workbench.domains.code_repair.mutation_sites import MutationSites, replace_token

BIN_SYM = {
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
BIN_ALT = {sym: [x for x in _AOR if x != sym] for sym in _AOR} | {
    "**": ["*"],
    "&": ["|"],
    "|": ["&"],
    "^": ["|"],
    "<<": [">>"],
    ">>": ["<<"],
}
CMP_SYM = {
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
CMP_ALT = {sym: [x for x in _ROR if x != sym] for sym in _ROR} | {
    "in": ["not in"],
    "not in": ["in"],
    "is": ["is not", "=="],
    "is not": ["is", "!="],
}
_NONCOMMUTATIVE = (ast.Sub, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow, ast.LShift, ast.RShift)
CALL_GROUPS: tuple[tuple[str, ...], ...] = (
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
CALL_ALT = {name: [n for n in grp if n != name] for grp in CALL_GROUPS for name in grp}
WRAPPERS = ("abs", "len", "int")


# -------------------------------------------------------------------------- operator replacement
def comparison(s: MutationSites, node: ast.Compare) -> None:
    """ROR on each comparison operator; operands of a single comparison swapped."""
    src, left = s.src, node.left
    for op, right in zip(node.ops, node.comparators):
        sym = CMP_SYM[type(op)]
        a, b = src.span(left)[1], src.span(right)[0]
        for alt in CMP_ALT[sym]:
            e = replace_token(src, a, b, sym, alt)
            if e:
                s.add("cmp_swap", node, *e, f"`{sym}` -> `{alt}`", 1 / len(CMP_ALT[sym]))
        left = right
    if len(node.ops) == 1:
        (la, lb), (ra, rb) = src.span(node.left), src.span(node.comparators[0])
        text = s.program[ra:rb] + s.program[lb:ra] + s.program[la:lb]
        s.add("swap_args", node, la, rb, text, "comparison operands swapped", 0.5)


def binary_op(s: MutationSites, node: ast.BinOp) -> None:
    """AOR; either operand dropped; ``abs`` around a difference; non-commutative operands swapped."""
    src = s.src
    sym = BIN_SYM[type(node.op)]
    a, b = src.span(node.left)[1], src.span(node.right)[0]
    for alt in BIN_ALT[sym]:
        e = replace_token(src, a, b, sym, alt)
        if e:
            s.add("arith_swap", node, *e, f"`{sym}` -> `{alt}`", 1 / len(BIN_ALT[sym]))
    a, b = src.span(node)
    for keep in (node.left, node.right):
        desc = (
            f"`{sym} {src.text(node.right)[:20]}` dropped"
            if keep is node.left
            else f"`{src.text(node.left)[:20]} {sym}` dropped"
        )
        s.add("drop_operand", node, a, b, src.text(keep), desc, 0.5)
    if isinstance(node.op, ast.Sub):
        a, b = src.span(node)
        s.add("wrap_call", node, a, b, f"abs({src.text(node)})", "`abs(...)` added", 0.5)
    if isinstance(node.op, _NONCOMMUTATIVE):
        (la, lb), (ra, rb) = src.span(node.left), src.span(node.right)
        lt, rt = s.program[la:lb], s.program[ra:rb]
        text = rt + s.program[lb:ra] + lt
        s.add("swap_args", node, la, rb, text, f"operands of `{sym}` swapped")


def augmented_assign(s: MutationSites, node: ast.AugAssign) -> None:
    """AOR on an augmented assignment (``+=`` -> ``-=`` ...)."""
    sym = BIN_SYM[type(node.op)]
    a, b = s.src.span(node.target)[1], s.src.span(node.value)[0]
    for alt in BIN_ALT[sym]:
        e = replace_token(s.src, a, b, sym + "=", alt + "=")
        if e:
            s.add("arith_swap", node, *e, f"`{sym}=` -> `{alt}=`", 1 / len(BIN_ALT[sym]))


def bool_op(s: MutationSites, node: ast.BoolOp) -> None:
    """LCR: ``and`` <-> ``or``."""
    sym, alt = ("and", "or") if isinstance(node.op, ast.And) else ("or", "and")
    a, b = s.src.span(node.values[0])[1], s.src.span(node.values[1])[0]
    e = replace_token(s.src, a, b, sym, alt)
    if e:
        s.add("bool_swap", node, *e, f"`{sym}` -> `{alt}`")


# ---------------------------------------------------------------------------- constants and bounds
def bool_constant(s: MutationSites, node: ast.Constant) -> None:
    """``True`` <-> ``False``."""
    value: bool = node.value  # type: ignore[assignment]  # the dispatcher checked the type
    a, b = s.src.span(node)
    s.add("bool_swap", node, a, b, str(not value), f"`{value}` -> `{not value}`")


def string_constant(s: MutationSites, node: ast.Constant) -> None:
    """A string literal replaced by ``""`` or ``" "`` (never inside an f-string)."""
    if isinstance(s.parents.get(id(node)), ast.JoinedStr | ast.FormattedValue):
        return
    a, b = s.src.span(node)
    alts = ['""', '" "'] if node.value else ['" "']
    for alt in alts:
        if alt != s.src.text(node):
            desc = f"string {s.src.text(node)[:20]} -> {alt}"
            s.add("const_replace", node, a, b, alt, desc, 1 / len(alts))


def int_constant(s: MutationSites, node: ast.Constant) -> None:
    """An integer replaced by a small constant (0, 1, 2) or moved by one."""
    value: int = node.value  # type: ignore[assignment]  # the dispatcher checked the type
    a, b = s.src.span(node)
    for v in sorted({0, 1, 2} - {value, value + 1, value - 1}):
        s.add("const_replace", node, a, b, str(v), f"constant {value} -> {v}", 0.2)
    for delta in (1, -1):
        v = value + delta
        if v < 0 and isinstance(s.parents.get(id(node)), ast.UnaryOp):
            continue
        s.add("off_by_one", node, a, b, str(v), f"constant {value} -> {v}", 0.5)


def subscript(s: MutationSites, node: ast.Subscript) -> None:
    """Off-by-one on slice bounds (constant bounds removed) and on computed indices."""
    src, sl = s.src, node.slice
    if isinstance(sl, ast.Slice):
        for bound_name in ("lower", "upper"):
            bnd = getattr(sl, bound_name)
            if bnd is not None and not isinstance(bnd, ast.Constant):
                a, b = src.span(bnd)
                for d in ("+ 1", "- 1"):
                    s.add("off_by_one", node, a, b, f"({src.text(bnd)}) {d}", f"slice {bound_name} {d}", 0.5)
            if bnd is not None and isinstance(bnd, ast.Constant | ast.UnaryOp):
                a, b = src.span(bnd)
                s.add("off_by_one", node, a, b, "", f"slice {bound_name} removed", 0.5)
    elif not isinstance(sl, ast.Tuple | ast.Constant):
        a, b = src.span(sl)
        for d in ("+ 1", "- 1"):
            s.add("off_by_one", node, a, b, f"{src.text(sl)} {d}", f"index {d}", 0.5)


# ------------------------------------------------------------------------------------------- calls
def call(s: MutationSites, node: ast.Call) -> None:
    """Callee replaced within its group; wrapper removed; ``range`` bounds moved; adjacent args swapped."""
    src = s.src
    fname: str | None = None
    fnode: ast.expr = node.func
    if isinstance(node.func, ast.Name):
        fname, fnode = node.func.id, node.func
    elif isinstance(node.func, ast.Attribute):
        fname, fnode = node.func.attr, node.func
    if fname in CALL_ALT:
        if isinstance(fnode, ast.Attribute):
            a = src.span(fnode.value)[1]
            b = src.span(fnode)[1]
            i = s.program[a:b].rfind(fname)
            a, b = a + i, a + i + len(fname)
        else:
            a, b = src.span(fnode)
        for alt in CALL_ALT[fname]:
            s.add("call_replace", node, a, b, alt, f"`{fname}` -> `{alt}`", 1 / len(CALL_ALT[fname]))
    if fname in WRAPPERS and len(node.args) == 1 and not node.keywords:
        a, b = src.span(node)
        s.add("wrap_call", node, a, b, src.text(node.args[0]), f"`{fname}(...)` removed")
    if fname == "range":
        for arg in node.args:
            if not isinstance(arg, ast.Constant):
                a, b = src.span(arg)
                for d in ("+ 1", "- 1"):
                    s.add("off_by_one", node, a, b, f"{src.text(arg)} {d}", f"range bound {d}", 0.5)
    pos = [x for x in node.args if not isinstance(x, ast.Starred)]
    if len(pos) == len(node.args) and len(pos) >= 2:
        for i in range(len(pos) - 1):
            (xa, xb), (ya, yb) = src.span(pos[i]), src.span(pos[i + 1])
            text = s.program[ya:yb] + s.program[xb:ya] + s.program[xa:xb]
            s.add("swap_args", node, xa, yb, text, f"arguments {i} and {i + 1} swapped")


# --------------------------------------------------------------------------------------- variables
def variable(s: MutationSites, node: ast.Name) -> None:
    """A read of a function local replaced by each other local of that function (not callees)."""
    fn = s.enclosing_fn(node)
    if fn is None:
        return
    par = s.parents.get(id(node))
    if isinstance(par, ast.Call) and par.func is node:
        return
    local = s.locals_of(fn)
    alts = [v for v in local if v != node.id]
    if node.id in local:
        a, b = s.src.span(node)
        for alt_name in alts:
            w = 1 / max(1, len(alts))
            s.add("swap_vars", node, a, b, alt_name, f"`{node.id}` -> `{alt_name}`", w)


def expression_mutations(s: MutationSites, node: ast.AST) -> None:
    """The expression-level edits of ``node``: at most one family applies per node type."""
    if isinstance(node, ast.Compare):
        comparison(s, node)
    elif isinstance(node, ast.BinOp) and type(node.op) in BIN_SYM:
        binary_op(s, node)
    elif isinstance(node, ast.AugAssign) and type(node.op) in BIN_SYM:
        augmented_assign(s, node)
    elif isinstance(node, ast.BoolOp):
        bool_op(s, node)
    elif isinstance(node, ast.Constant) and isinstance(node.value, bool):
        bool_constant(s, node)
    elif isinstance(node, ast.Constant) and isinstance(node.value, str):
        string_constant(s, node)
    elif isinstance(node, ast.Constant) and type(node.value) is int:
        int_constant(s, node)
    elif isinstance(node, ast.Subscript):
        subscript(s, node)
    elif isinstance(node, ast.Call):
        call(s, node)
    elif isinstance(node, ast.Name) and (
        isinstance(node.ctx, ast.Load) or isinstance(s.parents.get(id(node)), ast.AugAssign)
    ):
        variable(s, node)


__all__ = ["expression_mutations"]
