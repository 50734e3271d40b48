"""The general sandbox (``rsi_workbench.sandbox``): plain data out, sessions with two clocks, declared
packages, frames judged strictly, and a warning whenever isolation is incomplete."""

from __future__ import annotations

import json
import logging
import math

import pytest

from rsi_workbench import sandbox
from rsi_workbench.sandbox import Limits, Session, call
from rsi_workbench.sandbox.supervisor import ONE_SHOT_KINDS, FrameError, decode_frame, split_frames


@pytest.fixture(scope="module")
def iso() -> sandbox.Isolation:
    iso = sandbox.probe_isolation()
    sandbox.check_mode(iso, sandbox.default_mode())
    return iso


def test_call_returns_plain_data(iso: sandbox.Isolation) -> None:
    prog = "def f(x):\n    return (x, float('nan'), float('-inf'), {'a': [True, None, 'é']}, 2**70)\n"
    r = call(prog, "f", [1.5], isolation=iso)
    assert r.kind == "value", r
    v = r.value
    assert v[0] == 1.5 and math.isnan(v[1]) and v[2] == -math.inf and v[3] == {"a": [True, None, "é"]}
    assert v[4] == 2**70 and type(v) is list


@pytest.mark.parametrize(
    "ret",
    ["{1, 2}", "b'x'", "{1: 2}", "type('I', (int,), {})(3)", "type('L', (list,), {})()", "1j", "print"],
)
def test_anything_but_plain_data_is_an_error(iso: sandbox.Isolation, ret: str) -> None:
    r = call(f"def f():\n    return {ret}\n", "f", [], isolation=iso)
    assert r.kind == "error" and "unserialisable result" in r.message, r


def test_exceptions_come_back_as_name_and_message(iso: sandbox.Isolation) -> None:
    r = call("def f(d):\n    return d['missing']\n", "f", [{}], isolation=iso)
    assert r.kind == "raised" and r.error == ("KeyError", "'missing'")
    r = call("raise ImportError('no')\ndef f():\n    pass\n", "f", [], isolation=iso)
    assert r.kind == "raised" and r.message.startswith("loading program: ImportError")


def test_session_keeps_state_and_enforces_both_clocks(iso: sandbox.Isolation) -> None:
    prog = "n = 0\ndef f(x):\n    global n\n    n += 1\n    if x == 'loop':\n        while True:\n            pass\n    if x == 'raise':\n        raise ValueError(n)\n    return n\n"
    with Session(prog, "f", isolation=iso, limits=Limits(wall_s=2.0)) as s:
        assert [s.call([0]).value for _ in range(3)] == [1, 2, 3]
        r = s.call(["raise"])
        assert r.kind == "raised" and r.error == ("ValueError", "4")
        assert s.call([0]).value == 5  # a raised call does not end the session
        r = s.call(["loop"])
        assert r.kind == "timeout" and "call wall clock" in r.message
        assert s.call([0]).kind == "error"  # the process is gone
    with Session(prog, "f", isolation=iso, limits=Limits(wall_s=5.0, session_wall_s=1.0)) as s:
        r = s.call(["loop"])
        assert r.kind == "timeout" and "session wall clock" in r.message


def test_session_reports_a_program_that_does_not_load(iso: sandbox.Isolation) -> None:
    s = Session("def g():\n    pass\n", "f", isolation=iso)
    assert s.loaded.kind == "error" and "'f' is not defined" in s.loaded.message
    assert s.call([]).kind == "error"
    s.close()


def test_declared_packages_are_importable_and_nothing_else() -> None:
    try:
        iso = sandbox.probe_isolation(("numpy",))
    except (ValueError, sandbox.SandboxUnavailable) as e:  # not installed for the sandbox's interpreter
        pytest.skip(str(e))
    prog = "import numpy as np\ndef f(n):\n    return float(np.arange(n).sum())\n"
    r = call(prog, "f", [5], isolation=iso, limits=Limits(wall_s=30.0))
    assert r.kind == "value" and r.value == 10.0, r
    r = call("def f():\n    import pydantic\n", "f", [], isolation=iso)
    assert r.kind == "raised" and r.error is not None and r.error[0] == "ModuleNotFoundError"


def _frame(obj: object) -> bytes:
    b = json.dumps(obj).encode()
    return len(b).to_bytes(8, "big") + b


@pytest.mark.parametrize(
    "data",
    [
        _frame({"value": 1})[:-1],  # torn body
        _frame({"value": 1})[:5],  # torn header
        _frame({"value": 1, "raised": ["E", ""]})[8:],  # two results in one frame
        _frame({"passed": True})[8:],  # not a kind a call can produce
        _frame({"value": {"a": 1}})[8:],  # an untagged dict
        _frame({"value": {"$f": "1e999"}})[8:],
        b'{"value": NaN}',
        b'{"value": ' + b"[" * 100000 + b"]" * 100000 + b"}",
    ],
)
def test_malformed_frames_are_rejected(data: bytes) -> None:
    with pytest.raises(FrameError):
        frames = split_frames(data) if data[:1] == b"\x00" else [data]
        for f in frames:
            decode_frame(f, ONE_SHOT_KINDS)


def test_incomplete_isolation_warns_every_time(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(sandbox.MODE_ENV, "best_effort")  # CI's ``required`` would win over the call's mode
    bare = sandbox.Isolation()
    with caplog.at_level(logging.WARNING, logger="rsi_workbench.sandbox"):
        sandbox.check_mode(bare, "best_effort")
        sandbox.check_mode(bare, "best_effort")
    assert sum("incomplete isolation" in r.message for r in caplog.records) == 2
    with pytest.raises(sandbox.SandboxUnavailable, match="hidden_host_paths"):
        sandbox.check_mode(bare, "required")


def test_exact_types_cross_when_asked(iso: sandbox.Isolation) -> None:
    prog = "def f(x):\n    return x, type(x).__name__, {1, 2}, frozenset('a'), b'\\x00', 1j, {(1, 2): None}\n"
    r = call(prog, "f", [(1, [2])], isolation=iso, exact_types=True)
    assert r.kind == "value", r
    assert r.value == ((1, [2]), "tuple", {1, 2}, frozenset("a"), b"\x00", 1j, {(1, 2): None})
    assert type(r.value[0]) is tuple and type(r.value[0][1]) is list
    with Session(prog, "f", isolation=iso, exact_types=True) as s:
        assert s.call([(1,)]).value[:2] == ((1,), "tuple")


def test_hash_seed_is_fixed(iso: sandbox.Isolation) -> None:
    """``hash("abc")`` and set order are the same in every sandboxed process (PYTHONHASHSEED=0)."""
    prog = "import sys\ndef f():\n    return hash('abc'), ''.join(set('abcdefgh')), sys.flags.hash_randomization\n"
    first, second = (call(prog, "f", [], isolation=iso) for _ in range(2))
    assert first.kind == "value" and first.value == second.value, (first, second)
    with Session(prog, "f", isolation=iso) as s:
        assert s.call([]).value == first.value


def test_numeric_libraries_get_one_thread(iso: sandbox.Isolation) -> None:
    """Every sandboxed process starts OpenBLAS/OpenMP/MKL with one thread (threads count against
    RLIMIT_NPROC and the CPU limit), in one-shot calls and sessions alike; nothing else leaks in."""
    prog = "import os\ndef f():\n    return sorted(os.environ.items())\n"
    want = [
        ["MKL_NUM_THREADS", "1"],
        ["OMP_NUM_THREADS", "1"],
        ["OPENBLAS_NUM_THREADS", "1"],
        ["PATH", sandbox.Limits().path],
    ]
    r = call(prog, "f", [], isolation=iso)
    assert r.kind == "value" and r.value == want, r
    with Session(prog, "f", isolation=iso) as s:
        assert s.call([]).value == want


def test_tracing_looks_the_same_in_traced_and_untraced_runs(iso: sandbox.Isolation) -> None:
    """``coverage`` collects lines without returning them: from inside, the run is a traced one."""
    prog = "import sys\ndef f():\n    return repr(sys.gettrace())[:30], sys._getframe().f_trace is not None\n"
    traced = call(prog, "f", [], isolation=iso, trace=True)
    untraced = call(prog, "f", [], isolation=iso, coverage=True)
    assert traced.kind == untraced.kind == "value" and traced.value == untraced.value, (traced, untraced)
    assert traced.lines and untraced.lines is None and traced.value[1] is True


def test_code_repair_runs_look_the_same_traced_or_not() -> None:
    """Public runs (traced, for fault localisation) and hidden runs (not) of code repair, io and
    judged alike: ``sys.gettrace()`` and ``f_trace`` are the same, so a candidate cannot tell them apart."""
    from rsi_workbench.domains.code_repair.sandbox import Sandbox, Status
    from rsi_workbench.domains.code_repair.tasks import TestCase

    sb = Sandbox(mode=sandbox.default_mode())
    prog = (
        "import sys\ndef f():\n    return sys.gettrace() is not None, sys._getframe().f_trace is not None\n"
    )
    io = TestCase(id="io", kind="io", args=[], expected=[True, True])
    judged = TestCase(id="as", kind="assert", code="assert f() == (True, True)\nassert f() != [True, True]\n")
    for test in (io, judged):
        for trace in (True, False):
            out = sb.run_test(prog, test, "f", trace=trace)
            assert out.status == Status.AC, (test.id, trace, out)
            assert (out.covered_lines is not None) == trace


def test_covered_lines_already_reported_cannot_be_taken_back(iso: sandbox.Isolation) -> None:
    """The candidate clears every set of ints it can find (the tracer's own) and disables tracing:
    lines it ran before that still come back, because each was reported when it first ran."""
    prog = (
        "import gc, sys\n"
        "def f():\n"
        "    y = 1\n"
        "    for o in gc.get_objects():\n"
        "        if type(o) is set and o and all(type(v) is int for v in o):\n"
        "            o.clear()\n"
        "    sys.settrace(None)\n"
        "    return y\n"
    )
    r = call(prog, "f", [], isolation=iso, trace=True)
    assert r.kind == "value" and {1, 2, 3, 4} <= set(r.lines or ()), r


def test_session_result_cap_is_per_call(iso: sandbox.Isolation) -> None:
    """An honest program returning most of the cap on every call keeps working call after call."""
    prog = "def f(n):\n    return 'x' * n\n"
    lim = Limits(result_cap_bytes=1 << 20)
    with Session(prog, "f", isolation=iso, limits=lim) as s:
        for _ in range(6):
            r = s.call([(1 << 20) - 100])
            assert r.kind == "value" and len(r.value) == (1 << 20) - 100, r.message
        r = s.call([(1 << 20) + 100])
        assert r.kind == "error" and "oversized" in r.message
