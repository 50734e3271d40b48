"""The judge (issue 31): test code runs in its own sandboxed process and calls the candidate through
the host; values keep their exact types across (tuples, sets, bytes, ...); converted asserts keep
the original's meaning; verdicts are deterministic (hash seed, the judge's ``random``)."""

from __future__ import annotations

import pytest

from rsi_workbench import sandbox
from rsi_workbench.domains.code_repair.sandbox import Sandbox, Status, default_mode
from rsi_workbench.domains.code_repair.tasks import TestCase, convert_assert
from rsi_workbench.sandbox import Limits, run_check
from rsi_workbench.sandbox.judge import POOL


@pytest.fixture(scope="module")
def sb() -> Sandbox:
    return Sandbox(mode=default_mode())


def check(body: str, entry: str = "f") -> TestCase:
    code = "def check(candidate):\n" + "".join("    " + ln + "\n" for ln in body.splitlines())
    return TestCase(id="t", kind="assert", code=code + f"\ncheck({entry})\n")


@pytest.mark.parametrize(
    ("program", "body", "status"),
    [
        ("def f(x):\n    return x + 1\n", "assert candidate(1) == 2", Status.AC),
        ("def f(x):\n    return x\n", "assert candidate(1) == 2", Status.WA),
        ("def f(x):\n    raise ValueError(x)\n", "assert candidate(1) == 2", Status.RE),
        # a candidate exception the test code catches is the test's business (as in one process)
        (
            "def f(x):\n    if x < 0:\n        raise ValueError(x)\n    return x\n",
            "try:\n    candidate(-1)\nexcept Exception:\n    pass\nassert candidate(2) == 2",
            Status.AC,
        ),
        # the test code's own error is the test failing: WA
        ("def f(x):\n    return None\n", "assert candidate(1) + 1 == 2", Status.WA),
        # a candidate that times out is TLE, even when the test code catches everything
        (
            "def f(x):\n    while True:\n        pass\n",
            "try:\n    candidate(1)\nexcept BaseException:\n    pass\nassert True",
            Status.TLE,
        ),
        # what the frame cannot carry (a generator, a subclass) is the candidate's RE
        ("def f(x):\n    yield x\n", "assert list(candidate(1)) == [1]", Status.RE),
        # tuples, sets, bytes, complex and non-str keys cross with their types, both ways
        (
            "def f(x):\n    return type(x).__name__, x\n",
            "assert candidate((1, 2)) == ('tuple', (1, 2))\nassert candidate({1}) == ('set', {1})\n"
            "assert candidate(b'a') == ('bytes', b'a')\nassert candidate({1: 2j}) == ('dict', {1: 2j})",
            Status.AC,
        ),
        ("def f(x):\n    return [x]\n", "assert candidate(1) == (1,)", Status.WA),  # a list is not a tuple
    ],
)
def test_judged_verdicts(sb: Sandbox, program: str, body: str, status: Status) -> None:
    lim = sb.limits if status != Status.TLE else Limits(wall_s=1.0)
    out = Sandbox(mode=default_mode(), limits=lim).run_test(program, check(body), "f")
    assert out.status == status, out


def test_keyword_arguments_are_an_error_not_a_verdict(sb: Sandbox) -> None:
    out = sb.run_test("def f(x):\n    return x\n", check("assert candidate(x=1) == 1"), "f")
    assert out.status == Status.RE and "keyword arguments" in out.message


def test_the_judges_random_is_seeded_and_the_judge_persists(sb: Sandbox) -> None:
    prog = "def f(x):\n    return x\n"
    test = check("import random\nassert candidate(random.random()) == 0.8444218515250481")  # seed 0
    assert [sb.run_test(prog, test, "f").status for _ in range(3)] == [Status.AC] * 3
    assert any(POOL.idle.values())  # an idle judge waits for the next test


def test_the_candidate_never_sees_test_code(sb: Sandbox) -> None:
    """No frame, code object or constant of the test exists in the candidate's process."""
    prog = (
        "import gc, sys\n"
        "def f(x):\n"
        "    codes = [o for o in gc.get_objects() if type(o).__name__ == 'code' and o.co_filename == '<test>']\n"
        "    f = sys._getframe(1)\n"
        "    names = []\n"
        "    while f is not None:\n"
        "        names.append(f.f_code.co_filename)\n"
        "        f = f.f_back\n"
        "    return len(codes), '<test>' in names\n"
    )
    out = sb.run_test(prog, check("assert candidate(1) == (0, False)"), "f")
    assert out.status == Status.AC, out


def test_run_check_reports_the_candidates_coverage() -> None:
    iso = sandbox.probe_isolation()
    prog = "def f(x):\n    if x:\n        return 1\n    return 0\n"
    r = run_check(prog, "f", "assert f(1) == 1\n", isolation=iso, trace=True)
    assert r.kind == "passed" and r.lines == (1, 2, 3), r
    assert run_check(prog, "f", "assert f(1) == 1\n", isolation=iso).lines is None


@pytest.mark.parametrize(
    ("code", "got", "status"),
    [
        ("assert f() == [1, 2]", "[1, 2]", Status.AC),
        ("assert f() == [1, 2]", "(1, 2)", Status.WA),  # the original == says a tuple is no list
        ("assert f() == (1, 2)", "(1, 2)", Status.AC),
        ("assert f() == (1, 2)", "[1, 2]", Status.WA),
        ("assert f() == {'a': [(1, 2)]}", "{'a': [(1, 2)]}", Status.AC),
        ("assert f() == {'a': [(1, 2)]}", "{'a': [[1, 2]]}", Status.WA),
        ("assert f() == {1, 2}", "{2, 1}", Status.AC),
        ("assert f() == {1: 'a'}", "{1: 'a'}", Status.AC),
        ("assert f() == b'xy'", "b'xy'", Status.AC),
        ("assert f() == 1 + 2j", "1 + 2j", Status.AC),
        ("assert f() == 1 + 2j", "1 + 3j", Status.WA),
    ],
)
def test_converted_asserts_keep_the_originals_types(sb: Sandbox, code: str, got: str, status: Status) -> None:
    test = TestCase(id="t", kind="assert", code=code)
    conv = convert_assert(test, "f")
    prog = f"def f():\n    return {got}\n"
    assert conv is not None and conv.kind == "io"
    assert sb.run_test(prog, conv, "f").status == status
    assert sb.run_test(prog, test, "f").status == status  # the judged original agrees


def test_hand_written_io_tests_keep_todays_rule(sb: Sandbox) -> None:
    """A JSON list in an expected value also matches a tuple (a JSON test cannot say "tuple");
    ``{"$t": ...}`` asks for a tuple and ``{"$l": ...}`` for a list."""
    prog = "def f():\n    return (1, [2, 3])\n"
    for expected, status in (
        ([1, [2, 3]], Status.AC),
        ({"$t": [1, [2, 3]]}, Status.AC),
        ({"$l": [1, [2, 3]]}, Status.WA),
        ({"$t": [1, {"$t": [2, 3]}]}, Status.WA),
    ):
        test = TestCase(id="t", kind="io", args=[], expected=expected)
        assert sb.run_test(prog, test, "f").status == status, expected
    tup = TestCase(id="t", kind="io", args=[{"$t": [1, 2]}], expected="tuple")
    assert sb.run_test("def f(x):\n    return type(x).__name__\n", tup, "f").status == Status.AC


def test_quick_calls_share_one_cpu_and_a_computing_call_gets_them_all_back(sb: Sandbox) -> None:
    """Speed only (``judge._OneCPU``): a test's quick calls may run on the host's CPU; a call that
    computes gets every CPU back; the host thread's own affinity is restored after every test, a
    timed-out one too; verdicts are unchanged."""
    import os

    mask = os.sched_getaffinity(0)
    n = len(mask)
    prog = (
        "import os, time\n"
        "def f(spin):\n"
        "    t = time.monotonic()\n"
        "    while time.monotonic() - t < spin:\n"
        "        pass\n"
        "    return len(os.sched_getaffinity(0))\n"
    )
    body = f"first = candidate(0)\nassert first in (1, {n})\nassert candidate(0.3) == {n}\nassert candidate(0) == {n}"
    assert sb.run_test(prog, check(body), "f").status == Status.AC
    assert os.sched_getaffinity(0) == mask
    spin = Sandbox(mode=default_mode(), limits=Limits(wall_s=1.0))
    assert spin.run_test(prog, check("candidate(0)\ncandidate(5)"), "f").status == Status.TLE
    assert os.sched_getaffinity(0) == mask


def test_idle_judges_are_bounded_per_host_process() -> None:
    """Judges are pooled by plan and limits; a host that used many limit sets keeps at most
    ``MAX_IDLE`` idle ones (the least recently used are closed): each is a sandbox of processes of
    the sandbox's user, and without namespaces a candidate's process limit counts them all."""
    from rsi_workbench.sandbox.judge import MAX_IDLE, run_judged

    iso = sandbox.probe_isolation()
    POOL.close_all()
    sets = [Limits(wall_s=30.0 + i) for i in range(MAX_IDLE + 2)]
    for lim in sets:
        assert (
            run_judged("def f():\n    return 1\n", "f", "assert f() == 1", limits=lim, isolation=iso).kind
            == "passed"
        )
    kept = [j for js in POOL.idle.values() for j in js]
    assert len(kept) == MAX_IDLE
    assert {j.limits for j in kept} == set(sets[-MAX_IDLE:]), "the most recently used are kept"
    assert all(not j.closed for j in kept)
    POOL.close_all()
