"""The renaming transform of issue 45 item 5 (``domains/code_repair/rename.py``): it changes names
only, and programs behave the same. The verdict tests run the diagnostic pools' programs (each
pooled task's buggy program and pooled candidates) on every public and hidden test in the sandbox,
once as they are and once renamed (program, prompt-free tests and entry point alike), and require
the same status test by test: a committed subset of tasks in CI, all 55 pooled tasks (220 pools:
600 programs, 5,684 program-test pairs) in the slow test, which runs only with
``RSI_WORKBENCH_RENAME_ALL=1`` (about 10 minutes on 2 loaded cores; ``make test`` runs slow tests)."""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest

from rsi_workbench.domains.code_repair import RepairTask, Sandbox, TestCase
from rsi_workbench.domains.code_repair.rename import identifiers, local_names, plan_renaming, rename_task
from rsi_workbench.domains.code_repair.sandbox import default_mode
from rsi_workbench.execute import make_executor

POOLS = Path(__file__).resolve().parents[3] / "benchmarks" / "data" / "code_ranker" / "humanevalfix"
# Chosen for coverage within CI's minute: assert tests (Python/2, Python/160), a name local in some
# candidates and global in others (Python/15's ``x``); a shadowed builtin is in PROGRAM below.
SUBSET = ("Python/2", "Python/15", "Python/160")

PROGRAM = '''import math

# a comment naming total and helper_fn stays as written
def helper_fn(values, scale=2):
    """Sum ``values`` times scale.

    >>> helper_fn([1, 2])  # total
    6
    helper_fn(x) == ... for example; values is prose
    """
    total = 0
    sum = 0  # shadows the builtin: a local here
    def inner(v, *, k=1):
        nonlocal total
        total += v * k
        return total
    for v in values:
        inner(v, k=scale)
    try:
        math.sqrt(-1)
    except ValueError as err:
        sum = str(err)
    squares = [v * v for v in values if v]
    return total + len(squares) * 0 + len(sum) * 0 + len(x_global) * 0

x_global = [1]
print(helper_fn(values=[3]))
'''


def test_names_change_and_nothing_else() -> None:
    plan = plan_renaming("helper_fn", [PROGRAM], seed=0, key="t")
    assert set(plan.names) == {"values", "scale", "total", "sum", "inner", "v", "k", "err", "squares"}
    assert plan == plan_renaming("helper_fn", [PROGRAM], seed=0, key="t")  # deterministic
    assert plan != plan_renaming("helper_fn", [PROGRAM], seed=1, key="t")  # seeded
    fresh = {plan.new_entry_point, *plan.names.values()}
    assert not fresh & identifiers(PROGRAM) and len(fresh) == len(plan.names) + 1
    out = plan.prompt(PROGRAM)
    # the same tokens but for the renamed identifiers: comments, layout and prose are kept
    assert out.count("\n") == PROGRAM.count("\n")
    assert "# a comment naming total and helper_fn stays as written" in out
    assert "values is prose" in out and "# total" not in out  # doctest line: renamed, even in its comment
    doc = out.split('"""')[1]
    assert "helper_fn" not in doc and f"{plan.new_entry_point}(x) ==" in doc
    tree = ast.parse(out)
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    assert {"math", "len", "str", "print", "ValueError", "x_global"} <= names  # globals untouched
    assert not names & {"helper_fn", "values", "total", "sum", "v", "err", "squares"}
    assert f"{plan.names['values']}=[3]" in out and f"{plan.names['k']}={plan.names['scale']}" in out
    assert f"nonlocal {plan.names['total']}" in out and f"as {plan.names['err']}:" in out
    assert plan.program(PROGRAM).split('"""')[1] == PROGRAM.split('"""')[1]  # programs: docstring kept


def test_a_name_is_renamed_only_where_it_is_local() -> None:
    local = "def f(a):\n    sum = a\n    return sum\n"
    builtin = "def f(a):\n    return sum(a)\n"
    plan = plan_renaming("f", [local, builtin], seed=0, key="t")
    assert "sum" in plan.names and local_names(builtin, "f")[0] == {"a"}
    assert "sum(" in plan.program(builtin) and "sum" not in plan.program(local)
    assert "sum" in local_names("def f(a):\n    sum += 1\n    return [sum for _ in a]\n", "f")[0]
    # a name the function reads globally somewhere (a mutation's stray reference) stays everywhere
    stray = "def f(a):\n    y = [x for x in a]\n    return x\n"
    assert local_names(stray, "f") == ({"a", "y"}, {"x"})


def test_assert_tests_follow_the_entry_point() -> None:
    plan = plan_renaming("f", ["def f(a):\n    return a\n"], seed=0, key="t")
    code = "def check(f):\n    assert f(a=1) == 1\n\ncheck(f)\n"
    out = plan.test(TestCase(id="h", kind="assert", code=code)).code
    new, a = plan.new_entry_point, plan.names["a"]
    assert out == f"def check({new}):\n    assert {new}({a}=1) == 1\n\ncheck({new})\n"
    io = TestCase(id="i", kind="io", args=[1], expected=1)
    assert plan.test(io) is io  # the sandbox calls the (renamed) entry point by name


def _pools_tasks(ids: tuple[str, ...] | None) -> list[tuple[RepairTask, list[str]]]:
    from rsi_workbench.domains.code_repair import load_humanevalfix
    from rsi_workbench.domains.code_repair.pools import load_pools, pooled_candidates

    data, rows = load_pools(POOLS)
    pooled = pooled_candidates(data)
    tasks = {t.task_id: t for t in load_humanevalfix()}
    picked = ids if ids is not None else tuple(pooled)
    return [(tasks[t], [rows[t]["candidates"][i]["program"] for i in pooled[t]]) for t in picked]


def _verdicts_agree(ids: tuple[str, ...] | None) -> int:
    sb = Sandbox(mode=default_mode())
    items: list[tuple[str, TestCase, str]] = []
    where: list[tuple[str, int, str]] = []
    for task, cands in _pools_tasks(ids):
        new, new_cands, plan = rename_task(task, cands)
        assert new.entry_point != task.entry_point and plan.names
        tests = [*task.public_tests, *task.hidden_tests]
        new_tests = [*new.public_tests, *new.hidden_tests]
        for i, (prog, new_prog) in enumerate(
            zip([task.program, *cands], [new.program, *new_cands], strict=True)
        ):
            assert task.entry_point not in {
                n.id for n in ast.walk(ast.parse(new_prog)) if isinstance(n, ast.Name)
            }
            for t, nt in zip(tests, new_tests, strict=True):
                items += [(prog, t, task.entry_point), (new_prog, nt, new.entry_point)]
                where.append((task.task_id, i, t.id))
    with make_executor("process", 2) as ex:
        outs = sb.run_batch(items, ex)
    differ = [
        (w, a.status, b.status, b.message[:200])
        for w, a, b in zip(where, outs[0::2], outs[1::2], strict=True)
        if a.status != b.status
    ]
    assert not differ, differ[:10]
    return len(where)


def test_pools_verdicts_unchanged_on_a_subset() -> None:
    assert _verdicts_agree(SUBSET) > 150


@pytest.mark.slow
@pytest.mark.skipif(
    os.environ.get("RSI_WORKBENCH_RENAME_ALL") != "1",
    reason="11,368 sandboxed runs (623 s at load 10 on 2 cores), more than CI's minute: run with "
    "RSI_WORKBENCH_RENAME_ALL=1 pytest tests/domains/code_repair/test_rename.py -m slow",
)
def test_pools_verdicts_unchanged_on_all_220_pools() -> None:
    assert _verdicts_agree(None) > 3000
