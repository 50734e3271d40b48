"""Status mapping on small programs: every one of the five statuses, suites, fan-out, coverage."""

from __future__ import annotations

import pytest

from rsi_workbench.domains.code_repair import Sandbox, Status, TestCase
from rsi_workbench.domains.code_repair.sandbox import STATUSES, default_mode, pass_count
from rsi_workbench.execute import make_executor

PROGRAM = "def add(a, b):\n    return a + b\n"


@pytest.fixture(scope="module")
def sb() -> Sandbox:
    return Sandbox(mode=default_mode())


def t(code: str, id: str = "t") -> TestCase:
    return TestCase(id=id, kind="assert", code=code)


def test_five_statuses_in_readout_order() -> None:
    assert [s.value for s in STATUSES] == ["AC", "WA", "TLE", "RE", "CE"]


@pytest.mark.parametrize(
    ("program", "code", "status"),
    [
        (PROGRAM, "assert add(1, 2) == 3", Status.AC),
        (PROGRAM, "assert add(1, 2) == 4", Status.WA),
        # a TypeError raised by the test on a wrong-typed answer is still a wrong answer
        ("def add(a, b):\n    return None\n", "assert add(1, 2) + 0 == 3", Status.WA),
        ("def add(a, b):\n    return a + b + c\n", "assert add(1, 2) == 3", Status.RE),
        # the candidate's own AssertionError is a runtime error, not a wrong answer
        ("def add(a, b):\n    assert a > 5\n    return a + b\n", "assert add(1, 2) == 3", Status.RE),
        ("import sys\ndef add(a, b):\n    sys.exit(0)\n", "assert add(1, 2) == 3", Status.RE),
        ("import os\ndef add(a, b):\n    os._exit(0)\n", "assert add(1, 2) == 3", Status.RE),
        ("raise ValueError('at import')\ndef add(a, b):\n    return 3\n", "assert add(1, 2) == 3", Status.RE),
        ("def other(a, b):\n    return a + b\n", "assert add(1, 2) == 3", Status.RE),
        ("def add(a, b):\n    while True:\n        pass\n", "assert add(1, 2) == 3", Status.TLE),
        ("def add(a, b)\n    return a + b\n", "assert add(1, 2) == 3", Status.CE),
        ("   \n", "assert add(1, 2) == 3", Status.CE),
    ],
)
def test_status_mapping(sb: Sandbox, program: str, code: str, status: Status) -> None:
    out = sb.run_test(program, t(code), "add")
    assert out.status == status, out


def test_io_tests_exact_and_approx(sb: Sandbox) -> None:
    exact = TestCase(id="io1", kind="io", args=[[1, 2], [3]], expected=[1, 2, 3])
    concat = "def add(a, b):\n    return tuple(a + b)\n"
    assert sb.run_test(concat, exact, "add").status == Status.AC  # tuples compare as JSON lists
    approx = TestCase(id="io2", kind="io", args=[0.1, 0.2], expected=0.3, compare="approx")
    assert sb.run_test(PROGRAM, approx, "add").status == Status.AC
    strict = TestCase(id="io3", kind="io", args=[0.1, 0.2], expected=0.3)
    out = sb.run_test(PROGRAM, strict, "add")
    assert out.status == Status.WA and "0.30000000000000004" in out.message
    odd = TestCase(id="io4", kind="io", args=[1, 2], expected=3)
    out = sb.run_test("def add(a, b):\n    return object()\n", odd, "add")  # not plain data: never judged
    assert out.status == Status.RE and "unserialisable result" in out.message
    assert sb.run_test("def add(a, b):\n    raise KeyError(a)\n", odd, "add").status == Status.RE


def test_compile_error_marks_every_test_without_running(sb: Sandbox) -> None:
    outs = sb.run_suite("def add(:\n", [t("assert 1", "a"), t("assert 1", "b")], "add")
    assert [o.status for o in outs] == [Status.CE, Status.CE]
    assert all(o.runtime_s == 0.0 and "SyntaxError" in o.message for o in outs)


def test_empty_suite_is_an_error_never_a_pass(sb: Sandbox) -> None:
    with pytest.raises(ValueError, match="empty test suite"):
        sb.run_suite(PROGRAM, [], "add")


def test_output_is_captured_and_capped(sb: Sandbox) -> None:
    prog = "import sys\ndef add(a, b):\n    print('hello')\n    print('x' * 100000, file=sys.stderr)\n    return a + b\n"
    out = sb.run_test(prog, t("assert add(1, 2) == 3"), "add")
    assert out.status == Status.AC
    assert out.stdout == "hello\n"
    assert len(out.stderr) == sb.limits.output_cap_bytes


def test_coverage_tracing_records_candidate_lines(sb: Sandbox) -> None:
    prog = "def add(a, b):\n    if a > 0:\n        return a + b\n    return b\n"
    out = sb.run_test(prog, t("assert add(1, 2) == 3"), "add", trace=True)
    assert out.covered_lines is not None and {2, 3} <= set(out.covered_lines) and 4 not in out.covered_lines
    assert sb.run_test(prog, t("assert add(1, 2) == 3"), "add").covered_lines is None


def test_run_many_fans_out_through_the_executor(sb: Sandbox) -> None:
    tests = [
        t("assert add(1, 2) == 3", "a"),
        t("assert add(2, 2) == 4", "b"),
        t("assert add(0, 0) == 0", "c"),
    ]
    programs = [PROGRAM, "def add(a, b):\n    return a - b\n", "def add(a, b) return\n"]
    serial = sb.run_many(programs, tests, "add")
    with make_executor("process", 2) as ex:
        pooled = sb.run_many(programs, tests, "add", executor=ex)
    assert [[o.status for o in row] for row in serial] == [[o.status for o in row] for row in pooled]
    assert [pass_count(row) for row in pooled] == [3, 1, 0]
    assert [o.test_id for o in pooled[0]] == ["a", "b", "c"]


def test_mode_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RSI_WORKBENCH_SANDBOX_MODE", "best_effort")
    assert default_mode() == "best_effort"
    monkeypatch.setenv("RSI_WORKBENCH_SANDBOX_MODE", "sometimes")
    with pytest.raises(ValueError, match="allowed values"):
        default_mode()
    monkeypatch.delenv("RSI_WORKBENCH_SANDBOX_MODE")
    assert default_mode() == "best_effort"


def test_best_effort_without_namespaces_still_runs_and_cleans_up(monkeypatch: pytest.MonkeyPatch) -> None:
    import os
    from pathlib import Path

    from rsi_workbench.domains.code_repair import sandbox as mod

    real = mod.probe_isolation()
    bare = mod.Isolation(interpreter=real.interpreter, uid=real.uid, unprivileged_user=real.unprivileged_user)
    monkeypatch.setattr(mod, "probe_isolation", lambda: bare)
    monkeypatch.setenv("RSI_WORKBENCH_SANDBOX_MODE", "best_effort")  # else CI's ``required`` wins
    weak = mod.Sandbox(mode="best_effort")
    before = set(Path("/tmp").glob(f"rsi-sandbox-{os.getpid()}-*"))
    out = weak.run_test(
        "def add(a, b):\n    open('scratch.txt', 'w').write('x')\n    return a + b\n",
        t("assert add(1, 2) == 3"),
        "add",
    )
    assert out.status == Status.AC, out
    assert out.isolation["complete"] is False and out.isolation["network_namespace"] is False
    assert set(Path("/tmp").glob(f"rsi-sandbox-{os.getpid()}-*")) <= before
    assert weak.run_test(PROGRAM, t("while True: pass"), "add").status == Status.TLE
    with pytest.raises(mod.SandboxUnavailable):
        mod.Sandbox(mode="required")
    assert os.environ.get("RSI_SECRET") is None


def test_candidate_inherits_no_file_descriptors(sb: Sandbox) -> None:
    prog = "import os\ndef add(a, b):\n    return sorted(int(x) for x in os.listdir('/proc/self/fd'))\n"
    out = sb.run_test(prog, TestCase(id="fd", kind="io", args=[0, 0], expected=None), "add")
    fds = eval(out.message.removeprefix("got "))  # noqa: S307 - a list literal from our own runner
    # stdout, stderr, the candidate's result and coverage pipes to its (root) parent, and listdir's handle
    assert {1, 2} <= set(fds) and len(fds) <= 5, fds


def test_iter_and_per_test_tolerances(sb: Sandbox) -> None:
    gen = "def add(a, b):\n    return (a + i for i in range(b))\n"
    it = TestCase(id="g", kind="io", args=[1, 3], expected=[1, 2, 3], compare="iter")
    assert sb.run_test(gen, it, "add").status == Status.AC
    assert (
        sb.run_test(
            gen, TestCase(id="g2", kind="io", args=[1, 3], expected=[1, 2, 4], compare="iter"), "add"
        ).status
        == Status.WA
    )
    # without ``iter`` a generator is not plain data
    assert (
        sb.run_test(gen, TestCase(id="g3", kind="io", args=[1, 3], expected=[1, 2, 3]), "add").status
        == Status.RE
    )
    loose = TestCase(id="l", kind="io", args=[1.0, 0.001], expected=1.0, compare="approx", abs_tol=0.01)
    tight = TestCase(id="t", kind="io", args=[1.0, 0.001], expected=1.0, compare="approx")
    assert sb.run_test(PROGRAM, loose, "add").status == Status.AC
    assert sb.run_test(PROGRAM, tight, "add").status == Status.WA


def test_judge_keeps_the_expected_value_on_the_host() -> None:
    from rsi_workbench.domains.code_repair.sandbox import judge
    from rsi_workbench.sandbox import CallResult

    io = {"id": "x", "kind": "io", "args": [1], "expected": [1, 2]}
    assert judge(io, CallResult("value", value=[1, 2]))[0] == Status.AC
    assert judge(io, CallResult("value", value=[1, 3]))[0] == Status.WA
    assert judge(io, CallResult("passed"))[0] == Status.RE  # an assert-kind answer to an io test
    assert judge(io, CallResult("error", message="2 result frames"))[0] == Status.RE
    assert judge(io, CallResult("timeout"))[0] == Status.TLE
    nan = {"id": "n", "kind": "io", "args": [], "expected": float("nan"), "compare": "approx"}
    assert judge(nan, CallResult("value", value=float("nan")))[0] == Status.WA
