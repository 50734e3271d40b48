"""Consistent renaming of a code-repair task: the contamination control of issue 45 item 5.

A model that has memorised HumanEval's reference solutions scores them by their exact token
sequence. :func:`plan_renaming` picks fresh names (seeded, deterministic) for a task's **entry
point** and for the **parameters and local variables of the entry-point function** (the union over
every program given: the buggy program, the candidates, the reference), and the returned
:class:`Renaming` rewrites, with the same names everywhere:

- a **program** (:meth:`Renaming.program`): every occurrence of the entry point in the module (its
  ``def``, calls, references) and of a renamed local inside the entry-point function, nested
  scopes (comprehensions, lambdas, inner functions) included, plus keyword arguments of calls to the
  entry point or to an inner function; the text is otherwise left byte for byte as it was (comments,
  layout, quotes: only identifier tokens change, located through ``ast`` positions and ``tokenize``);
- the **prompt** (:meth:`Renaming.prompt`): its code as a program, and inside the entry point's
  docstring the example lines: every renamed name outside quotes on a doctest line (``>>>`` /
  ``...``); elsewhere every call-shaped mention of the entry point (``name(``, as in
  HumanEval's ``f(3) == 5`` examples) and every whole-word mention of a renamed name holding an
  underscore or a digit (``find_zero``, ``paren_string``: coined, never English). Other prose is
  left alone: a parameter named ``numbers``, ``string`` or ``n`` may be an English word there;
- a **test** (:meth:`Renaming.test`): the entry point's name in assert code (``check(f)``) and
  keyword arguments of calls to it; io tests carry no code (the sandbox calls the entry point by
  name, so a renamed task passes the new name).

Scoping follows Python's own rules (``symtable``): a name is renamed in a program only when no
scope inside the entry-point function resolves it globally (a builtin such as ``sum`` stays
``sum`` in a program that reads the builtin, and becomes the fresh name in one that binds a local
``sum``); names bound by ``import`` or ``global`` inside the function, by ``match`` patterns, or in
a class body are never renamed. Helper functions other than the entry point keep their names
(they are shared with the tests' trusted helpers). Fresh names are drawn from a fixed list of
neutral words, never one that occurs as an identifier anywhere in the task's texts, a builtin or a
keyword. Behaviour is unchanged by construction; ``tests/domains/code_repair/test_rename.py``
checks it by running the pools' programs before and after in the sandbox.
"""

from __future__ import annotations

import ast
import builtins
import io
import keyword
import random
import re
import symtable
import tokenize
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

# Neutral identifiers, none a Python builtin, keyword or common module name.
WORDS = (
    "amber", "basil", "cedar", "dune", "ember", "fjord", "garnet", "heron", "iris", "juniper",
    "kelp", "lagoon", "maple", "nutmeg", "opal", "pecan", "quill", "raven", "sorrel", "thistle",
    "umber", "violet", "walnut", "yarrow", "zinnia", "alder", "birch", "clover", "dahlia", "egret",
    "fennel", "ginger", "hazel", "indigo", "jasper", "kestrel", "lichen", "marlin", "nettle",
    "orchid", "plover", "quartz", "russet", "saffron", "tansy", "urchin", "vetch", "willow",
    "wren", "zephyr", "acorn", "bramble", "cobalt", "thyme", "ermine", "flint", "gorse", "holly",
)  # fmt: skip
_RESERVED = set(dir(builtins)) | set(keyword.kwlist) | set(getattr(keyword, "softkwlist", ()))
_QUOTED = re.compile(r"('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\")")


class RenameError(ValueError):
    """A program that cannot be renamed (it does not parse, or lacks the entry point)."""


def identifiers(text: str) -> set[str]:
    """Every identifier-shaped word of a text (code, docstrings, comments: all of it)."""
    return set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text))


def _entry_table(src: str, entry_point: str) -> symtable.SymbolTable | None:
    top = symtable.symtable(src, "<program>", "exec")
    for child in top.get_children():
        if child.get_type() == "function" and child.get_name() == entry_point:
            return child
    return None


def _subtables(t: symtable.SymbolTable) -> Iterable[symtable.SymbolTable]:
    yield t
    for c in t.get_children():
        yield from _subtables(c)


def _entry_def(tree: ast.Module, entry_point: str) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    for n in tree.body:
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == entry_point:
            return n
    return None


def local_names(src: str, entry_point: str) -> tuple[set[str], set[str]]:
    """(renamable, blocked): names bound inside the entry-point function's scopes and never resolved
    globally there (parameters and locals), and the names some inner scope resolves globally, binds
    by ``import``/``global``, binds in a ``match`` pattern or in a class body."""
    try:
        tree = ast.parse(src)
        table = _entry_table(src, entry_point)
    except SyntaxError as e:
        raise RenameError(f"the program does not parse: {e}") from e
    fn = _entry_def(tree, entry_point)
    if table is None or fn is None:
        return set(), set()
    bound: set[str] = set()
    blocked: set[str] = set()
    for t in _subtables(table):
        for s in t.get_symbols():
            n = s.get_name()
            if not n.isidentifier():
                continue  # a comprehension's implicit ``.0`` argument
            if t.get_type() == "class" or s.is_global() or s.is_declared_global() or s.is_imported():
                blocked.add(n)
            elif s.is_parameter() or s.is_assigned() or s.is_local() or s.is_free():
                bound.add(n)
    for node in ast.walk(fn):
        if isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            blocked.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            blocked.add(node.rest)
    return bound - blocked, blocked


@dataclass(frozen=True)
class Renaming:
    """Fresh names for a task: ``entry_point`` → ``new_entry_point`` and ``names`` (the entry-point
    function's parameters and locals, old → new). Apply with :meth:`program`, :meth:`prompt`,
    :meth:`test` or :meth:`task`."""

    entry_point: str
    new_entry_point: str
    names: Mapping[str, str] = field(default_factory=dict)

    def record(self) -> dict[str, Any]:
        return {
            "entry_point": [self.entry_point, self.new_entry_point],
            "names": dict(sorted(self.names.items())),
        }

    # -------------------------------------------------------------------------- programs
    def program(self, src: str) -> str:
        """``src`` with the entry point and the function's renamed locals replaced (module doc)."""
        return _apply(src, self._edits(src, docstrings=False))

    def prompt(self, src: str) -> str:
        """The prompt: its code as :meth:`program`, and its docstring's examples (module doc)."""
        return _apply(src, self._edits(src, docstrings=True))

    def _edits(self, src: str, *, docstrings: bool) -> list[tuple[int, int, str, str]]:
        try:
            tree = ast.parse(src)
        except SyntaxError as e:
            raise RenameError(f"the program does not parse: {e}") from e
        lines = src.splitlines(keepends=True)
        toks = _tokens(src)
        edits: list[tuple[int, int, str, str]] = []
        ep, new_ep = self.entry_point, self.new_entry_point

        def at(lineno: int, byte_col: int, old: str, new: str) -> None:
            line = lines[lineno - 1]
            col = len(line.encode()[:byte_col].decode(errors="replace"))
            edits.append((lineno, col, old, new))

        fn = _entry_def(tree, ep)
        inner_defs: set[str] = set()
        renamed: set[str] = set()
        if fn is not None:
            renamable, _ = local_names(src, ep)
            renamed = {n for n in renamable if n in self.names}
            inner_defs = {
                n.name
                for n in ast.walk(fn)
                if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n is not fn
            }
        inside = set(map(id, ast.walk(fn))) if fn is not None else set()
        for node in ast.walk(tree):
            ours = id(node) in inside
            if isinstance(node, ast.Name):
                if ours and node.id in renamed:
                    at(node.lineno, node.col_offset, node.id, self.names[node.id])
                elif node.id == ep and not (ours and ep in renamed):
                    at(node.lineno, node.col_offset, ep, new_ep)
            elif isinstance(node, ast.arg) and ours and node.arg in renamed:
                at(node.lineno, node.col_offset, node.arg, self.names[node.arg])
            elif isinstance(node, ast.arg) and node.arg == ep:
                at(node.lineno, node.col_offset, ep, new_ep)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                new = (
                    new_ep
                    if node is fn
                    else (self.names.get(node.name) if ours and node.name in renamed else None)
                )
                if new is not None:
                    tok = _name_after(toks, (node.lineno, node.col_offset), "def", node.name, lines)
                    edits.append((*tok, node.name, new))
            elif isinstance(node, ast.ExceptHandler) and ours and node.name in renamed:
                tok = _name_after(toks, (node.lineno, node.col_offset), "as", node.name, lines)
                edits.append((*tok, node.name, self.names[node.name]))
            elif isinstance(node, ast.Nonlocal) and ours:
                for n in node.names:
                    if n in renamed:
                        tok = _name_after(toks, (node.lineno, node.col_offset), None, n, lines)
                        edits.append((*tok, n, self.names[n]))
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                callee = node.func.id
                if callee == ep or (ours and callee in inner_defs):
                    for kw in node.keywords:
                        if kw.arg is not None and kw.arg in self.names:
                            at(kw.lineno, kw.col_offset, kw.arg, self.names[kw.arg])
        if docstrings and fn is not None:
            edits.extend(self._docstring_edits(fn, lines))
        return edits

    def _docstring_edits(self, fn: ast.AST, lines: list[str]) -> list[tuple[int, int, str, str]]:
        body = getattr(fn, "body", [])
        if not (body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)):
            return []
        node = body[0].value
        if not isinstance(node.value, str) or node.end_lineno is None:
            return []
        every = {self.entry_point: self.new_entry_point, **self.names}
        call = re.compile(rf"\b{re.escape(self.entry_point)}(?=\s*\()")
        coined = {k: v for k, v in every.items() if re.search(r"[_0-9]", k)}  # never an English word
        prose = re.compile(
            r"\b(" + "|".join(re.escape(k) for k in sorted(coined, key=len, reverse=True)) + r")\b"
        )
        words = re.compile(
            r"\b(" + "|".join(re.escape(k) for k in sorted(every, key=len, reverse=True)) + r")\b"
        )
        out: list[tuple[int, int, str, str]] = []
        for lineno in range(node.lineno, node.end_lineno + 1):
            line = lines[lineno - 1]
            lo = (
                len(line.encode()[: node.col_offset].decode(errors="replace")) if lineno == node.lineno else 0
            )
            hi = (
                len(line.encode()[: node.end_col_offset].decode(errors="replace"))
                if lineno == node.end_lineno
                else len(line)
            )
            seg = line[lo:hi]
            stripped = seg.lstrip(" \t\"'")
            if stripped.startswith((">>>", "...")):
                off = lo + len(seg) - len(stripped) + 3
                code = line[off:hi]
                pos = 0
                for part in _QUOTED.split(code):
                    if not _QUOTED.fullmatch(part):
                        for m in words.finditer(part):
                            out.append((lineno, off + pos + m.start(), m.group(1), every[m.group(1)]))
                    pos += len(part)
            else:
                hits = (
                    {m.start(): (m.group(1), every[m.group(1)]) for m in prose.finditer(seg)}
                    if coined
                    else {}
                )
                hits.update({m.start(): (self.entry_point, self.new_entry_point) for m in call.finditer(seg)})
                out.extend((lineno, lo + c, old, new) for c, (old, new) in hits.items())
        return out

    # ----------------------------------------------------------------------------- tests, tasks
    def test_code(self, code: str) -> str:
        """Assert test code with the entry point renamed (its references and keyword arguments of
        calls to it); the test's own names are left alone."""
        edits: list[tuple[int, int, str, str]] = []
        try:
            tree = ast.parse(code)
        except SyntaxError as e:
            raise RenameError(f"the test does not parse: {e}") from e
        lines = code.splitlines(keepends=True)
        toks = _tokens(code)
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and node.id == self.entry_point:
                col = len(lines[node.lineno - 1].encode()[: node.col_offset].decode())
                edits.append((node.lineno, col, node.id, self.new_entry_point))
            elif isinstance(node, ast.arg) and node.arg == self.entry_point:
                col = len(lines[node.lineno - 1].encode()[: node.col_offset].decode())
                edits.append((node.lineno, col, node.arg, self.new_entry_point))
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == self.entry_point:
                tok = _name_after(toks, (node.lineno, node.col_offset), "def", node.name, lines)
                edits.append((*tok, node.name, self.new_entry_point))
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == self.entry_point
            ):
                for kw in node.keywords:
                    if kw.arg is not None and kw.arg in self.names:
                        col = len(lines[kw.lineno - 1].encode()[: kw.col_offset].decode())
                        edits.append((kw.lineno, col, kw.arg, self.names[kw.arg]))
        return _apply(code, edits)

    def test(self, test: Any) -> Any:
        """A :class:`~rsi_workbench.domains.code_repair.TestCase` for the renamed entry point."""
        if test.kind != "assert" or not test.code:
            return test
        return test.model_copy(update={"code": self.test_code(test.code)})

    def task(self, task: Any) -> Any:
        """A :class:`~rsi_workbench.domains.code_repair.RepairTask` renamed throughout."""
        return task.model_copy(
            update={
                "entry_point": self.new_entry_point,
                "prompt": self.prompt(task.prompt) if task.prompt else task.prompt,
                "program": self.program(task.program),
                "reference": self.program(task.reference) if task.reference else task.reference,
                "public_tests": [self.test(t) for t in task.public_tests],
                "hidden_tests": [self.test(t) for t in task.hidden_tests],
                "meta": {**task.meta, "renamed": self.record()},
            }
        )


def _tokens(src: str) -> list[tokenize.TokenInfo]:
    try:
        return list(tokenize.generate_tokens(io.StringIO(src).readline))
    except (tokenize.TokenError, SyntaxError) as e:
        raise RenameError(f"the program does not tokenize: {e}") from e


def _name_after(
    toks: Sequence[tokenize.TokenInfo], start: tuple[int, int], after: str | None, name: str, lines: list[str]
) -> tuple[int, int]:
    """(line, character column) of the first NAME token ``name`` at or after ``start`` (a line and
    byte column), following the token ``after`` when given."""
    line, bcol = start
    col = len(lines[line - 1].encode()[:bcol].decode(errors="replace"))
    armed = after is None
    for t in toks:
        if t.start < (line, col):
            continue
        if not armed:
            armed = t.type == tokenize.NAME and t.string == after
            continue
        if t.type == tokenize.NAME and t.string == name:
            return t.start
    raise RenameError(f"no token {name!r} after line {line}")


def _apply(src: str, edits: Sequence[tuple[int, int, str, str]]) -> str:
    lines = src.splitlines(keepends=True)
    seen: dict[tuple[int, int], tuple[str, str]] = {}
    for lineno, col, old, new in edits:
        prev = seen.setdefault((lineno, col), (old, new))
        if prev != (old, new):
            raise RenameError(f"two renamings at line {lineno} column {col}: {prev} and {(old, new)}")
    for (lineno, col), (old, new) in sorted(seen.items(), reverse=True):
        line = lines[lineno - 1]
        if line[col : col + len(old)] != old:
            raise RenameError(
                f"line {lineno} column {col}: expected {old!r}, found {line[col : col + len(old)]!r}"
            )
        lines[lineno - 1] = line[:col] + new + line[col + len(old) :]
    return "".join(lines)


def plan_renaming(
    entry_point: str, programs: Sequence[str], *, texts: Sequence[str] = (), seed: int = 0, key: str = ""
) -> Renaming:
    """Fresh names for ``entry_point`` and for the entry-point function's parameters and locals in
    any of ``programs`` (those that parse; a candidate that does not parse keeps its text), never an
    identifier of ``programs`` or ``texts`` (prompt, test code), a builtin or a keyword; the same
    ``(seed, key)`` (e.g. the task id) always gives the same names."""
    olds: set[str] = set()
    taken = set(_RESERVED)
    for p in [*programs, *texts]:
        taken |= identifiers(p)
    for p in programs:
        try:
            olds |= local_names(p, entry_point)[0]
        except RenameError:
            continue
    olds.discard(entry_point)
    rng = random.Random(f"rename|{seed}|{key}")
    pool = [w for w in WORDS if w not in taken]
    rng.shuffle(pool)
    extra = (f"{w}{i}" for i in range(2, 10_000) for w in WORDS)
    fresh = iter([*pool, *(w for w in extra if w not in taken)])
    new_ep = f"{next(fresh)}_{next(fresh)}"
    names = {old: next(fresh) for old in sorted(olds)}
    return Renaming(entry_point, new_ep, names)


def rename_task(
    task: Any, candidates: Sequence[str] = (), *, seed: int = 0
) -> tuple[Any, list[str], Renaming]:
    """(the renamed task, the renamed candidates, the renaming) with one name plan over the task's
    program, reference and ``candidates`` and avoiding every identifier of its prompt and tests."""
    tests = [t.code or "" for t in [*task.public_tests, *task.hidden_tests]]
    programs = [task.program, *([task.reference] if task.reference else []), *candidates]
    plan = plan_renaming(task.entry_point, programs, texts=[task.prompt, *tests], seed=seed, key=task.task_id)
    return plan.task(task), [plan.program(c) for c in candidates], plan


__all__ = ["WORDS", "RenameError", "Renaming", "identifiers", "local_names", "plan_renaming", "rename_task"]
