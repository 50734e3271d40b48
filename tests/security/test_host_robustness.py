"""The host never crashes on candidate data: whatever a candidate returns (or forges on its result
channel), decoding and comparing it on the host gives that test an outcome (``RE`` with a reason when
it cannot be judged), and every other test and candidate keeps its own result."""

from __future__ import annotations

import concurrent.futures as cf
import json
import math
import re
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures.process import BrokenProcessPool
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rsi_workbench.domains.code_repair import sandbox as cr
from rsi_workbench.domains.code_repair.sandbox import Sandbox, Status, judge
from rsi_workbench.sandbox import CallResult, compare, frames
from rsi_workbench.sandbox import supervisor as sup
from rsi_workbench.sandbox.supervisor import ONE_SHOT_KINDS, FrameError, decode_frame

BIG = 10**400
# the deepest value the child encodes (_child.py runs as a script: read, not imported)
DEPTH = int(re.search(r"^PLAIN_DEPTH = (\d+)$", sup.CHILD.read_text(), re.M).group(1))  # type: ignore[union-attr]


def short_id(v: Any) -> str:
    """A pytest id for a value whose str may be too long to make (ints beyond 4300 digits)."""
    if type(v) is int and v.bit_length() > 64:
        return f"{'-' if v < 0 else ''}int{v.bit_length()}b"
    return repr(v)[:30]


def nested(depth: int, leaf: Any = 0) -> Any:
    v = leaf
    for _ in range(depth):
        v = [v]
    return v


# ------------------------------------------------------------------------------- compare
@pytest.mark.parametrize(
    ("got", "expected", "same"),
    [
        (BIG, BIG, True),
        (BIG + 1, BIG, True),  # within rel_tol of 1e-6
        (-BIG, -BIG, True),
        (-BIG, BIG, False),
        (BIG, 3.0, False),
        (3.0, BIG, False),
        (BIG, 1.7e308, False),
        (BIG, math.inf, False),
        (-BIG, -math.inf, False),
        (2**100000, 2**100000 + 2**99990, False),  # relative difference 2**-10
        (2**100000, 2**100000 + 2**99000, True),  # relative difference 2**-1000
        (2**100000, 2**100000 + 1, True),
        (2**100000, 0.5, False),
        (1.0, 1.0 + 1e-9, True),
        (1.0, 1.001, False),
        (math.nan, math.nan, False),
        (math.inf, math.inf, True),
        (math.inf, -math.inf, False),
        ([BIG, 1.0], [BIG, 1.0], True),
        ({"a": [BIG]}, {"a": [1.0]}, False),
    ],
    ids=short_id,
)
def test_approx_on_numbers_beyond_float_range(got: Any, expected: Any, same: bool) -> None:
    assert compare(got, expected, "approx") is same
    assert compare(expected, got, "approx") is same  # symmetric


@pytest.mark.parametrize(
    ("got", "expected"),
    [
        (True, 1),
        (1, True),
        (False, 0.0),
        (0.0, False),
        ([True], [1]),
        ({"a": False}, {"a": 0}),
        ([[1.0]], [[True]]),
    ],
)
def test_approx_never_equates_booleans_and_numbers(got: Any, expected: Any) -> None:
    assert compare(got, expected, "approx") is False
    assert compare(got, expected, "exact") is True  # exact is Python ==, as documented


def test_approx_booleans_equal_themselves() -> None:
    assert compare([True, False, 1.0000001], [True, False, 1.0], "approx") is True
    assert compare(True, False, "approx") is False


def test_compare_takes_nesting_deeper_than_the_recursion_limit() -> None:
    a, b = nested(50_000, 1.0), nested(50_000, 1.0 + 1e-12)
    for how in ("exact", "approx"):
        assert compare(a, a, how) is True
    assert compare(a, b, "approx") is True and compare(a, b, "exact") is False
    assert compare(nested(50_000, 1), nested(49_999, 1), "exact") is False


def test_a_bad_tolerance_is_the_tests_error() -> None:
    with pytest.raises(ValueError, match="rel_tol"):
        compare(1.0, 1.0, "approx", rel_tol=-1.0)
    with pytest.raises(ValueError, match="abs_tol"):
        compare(1.0, 1.0, "approx", abs_tol=math.nan)


def _json_like() -> st.SearchStrategy[Any]:
    leaves = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.integers(min_value=-(2**3000), max_value=2**3000),
        st.sampled_from([BIG, -BIG, 2**1023, 2**1024, -(2**1024)]),
        st.floats(allow_nan=True, allow_infinity=True),
        st.text(max_size=8),
    )
    return st.recursive(
        leaves,
        lambda kids: st.one_of(
            st.lists(kids, max_size=4), st.dictionaries(st.text(max_size=3), kids, max_size=4)
        ),
        max_leaves=20,
    )


def _has_nan(x: Any) -> bool:
    if type(x) is float:
        return math.isnan(x)
    if type(x) is list:
        return any(_has_nan(v) for v in x)
    if type(x) is dict:
        return any(_has_nan(v) for v in x.values())
    return False


@settings(max_examples=300, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(a=_json_like(), b=_json_like())
def test_compare_never_raises_on_json_like_values(a: Any, b: Any) -> None:
    for how in ("exact", "approx", "iter"):
        assert type(compare(a, b, how)) is bool
        assert compare(a, b, how) is compare(b, a, how)
    if not _has_nan(a):
        assert compare(a, a, "approx") is True and compare(a, a, "exact") is True


# ------------------------------------------------------------------------------- decode_frame
@pytest.mark.parametrize(
    "body",
    [
        b'{"value": ' + b"9" * 10_000 + b"}",  # an int too long to convert
        b'{"value": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",  # deeper than the decoder's stack
        b'{"value": ' + b"[" * 300 + b"0" + b"]" * 300 + b"}",  # deeper than the host accepts
        b'{"value": NaN}',
        b"\xff\xfe",
        b'{"value": {"$s": [[1]]}}',  # an unhashable set item
        b'{"value": {"$c": [' + b"1" + b"0" * 400 + b", 0]}}",  # a complex beyond float range
    ],
)
def test_any_undecodable_frame_is_a_frame_error(body: bytes) -> None:
    with pytest.raises(FrameError):
        decode_frame(body, ONE_SHOT_KINDS)


@pytest.mark.parametrize(
    "text",
    ['{"value": 1}', ' {"value": 1}', '{"value": 1}\n', '{"value": 1} x', '{"value": NaN}', "[1", "", "1 2"],
)
def test_the_fast_json_path_gives_json_loads_value_or_error(text: str) -> None:
    for decoder in (frames._FRAME_DECODER, json.JSONDecoder()):
        try:
            want: Any = ("value", decoder.decode(text))
        except ValueError as e:
            want = ("error", type(e), str(e))
        try:
            got: Any = ("value", frames.loads(decoder, text))
        except ValueError as e:
            got = ("error", type(e), str(e))
        assert got == want


def test_memory_error_while_decoding_is_a_frame_error(monkeypatch: pytest.MonkeyPatch) -> None:
    def loads_that_runs_out_of_memory(*args: Any, **kwargs: Any) -> Any:
        raise MemoryError

    monkeypatch.setattr(frames, "loads", loads_that_runs_out_of_memory)  # where decode_frame looks it up
    with pytest.raises(FrameError, match="MemoryError"):
        decode_frame(b'{"value": 1}', ONE_SHOT_KINDS)


# ------------------------------------------------------------------------------- judge
class EqualityThatRaisesDouble:
    def __eq__(self, other: object) -> bool:
        raise RuntimeError("no comparing me")

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        raise RuntimeError("no showing me")


IO = {"id": "t", "kind": "io", "args": [], "expected": 3}


def test_judge_makes_a_comparison_that_raises_an_re() -> None:
    status, msg = judge(IO, CallResult("value", value=EqualityThatRaisesDouble()))
    assert status == Status.RE and "comparing the result failed: RuntimeError: no comparing me" in msg
    status, msg = judge({**IO, "compare": "approx", "rel_tol": "x"}, CallResult("value", value=3.0))
    assert status == Status.RE and "rel_tol" in msg


def test_judge_wa_messages_are_bounded_and_never_raise() -> None:
    for value in (
        2**100000,
        "x" * (3 << 20),
        list(range(100_000)),
        nested(DEPTH),
        {str(i): i for i in range(10**5)},
    ):
        status, msg = judge(IO, CallResult("value", value=value))
        assert status == Status.WA and msg.startswith("got ") and len(msg) <= 500
    status, msg = judge({**IO, "compare": "approx"}, CallResult("value", value=2**100000))
    assert status == Status.WA and msg == "got <int of 100001 bits>"


# ------------------------------------------------------------------------------- end to end
HONEST = "def f(a, b):\n    return a + b\n"
FORGE = (
    "import __main__, os\n"
    "def f(a, b):\n"
    "    body = {body!r}\n"
    "    os.write(__main__.JOB['result_fd'], len(body).to_bytes(8, 'big') + body)\n"
    "    os._exit(0)\n"
)
# candidate program -> the status of each of its tests (exact, approx)
HOSTILE = {
    "def f(a, b):\n    return 10**400\n": Status.WA,
    "def f(a, b):\n    return -10**400\n": Status.WA,
    "def f(a, b):\n    return 2**100000\n": Status.RE,  # too long for the child to encode
    "def f(a, b):\n    return float('nan')\n": Status.WA,
    "def f(a, b):\n    return float('inf')\n": Status.WA,
    "def f(a, b):\n    return [float('-inf'), 10**400, True]\n": Status.WA,
    f"def f(a, b):\n    v = 3\n    for _ in range({DEPTH}):\n        v = [v]\n    return v\n": Status.WA,
    f"def f(a, b):\n    v = 3\n    for _ in range({DEPTH + 1}):\n        v = [v]\n    return v\n": Status.RE,
    "def f(a, b):\n    return 'x' * (3 << 20)\n": Status.WA,
    "def f(a, b):\n    return {str(i): i for i in range(20_000)}\n": Status.WA,
    "def f(a, b):\n    return True\n": Status.WA,
    FORGE.format(body=b'{"value": ' + b"[" * 5000 + b"]" * 5000 + b"}"): Status.RE,
    FORGE.format(body=b'{"value": ' + b"7" * 20_000 + b"}"): Status.RE,
}
TESTS = [
    {"id": "exact", "kind": "io", "args": [1, 2], "expected": 3},
    {"id": "approx", "kind": "io", "args": [1, 2], "expected": 3.0, "compare": "approx"},
]


@pytest.fixture(scope="module")
def sb() -> Sandbox:
    return Sandbox()


def _check(progs: list[str], outs: list[list[cr.TestOutcome]]) -> None:
    for prog, row in zip(progs, outs, strict=True):
        assert [o.test_id for o in row] == ["exact", "approx"]
        want = Status.AC if prog == HONEST else HOSTILE[prog]
        for o in row:
            assert o.status == want, (prog[:80], o)
            if o.status == Status.RE:
                assert o.message, o
            assert len(o.message) <= 500


def test_hostile_results_do_not_cost_honest_candidates_their_results(sb: Sandbox) -> None:
    progs = [HONEST, *HOSTILE, HONEST]
    outs = sb.run_many(progs, TESTS, "f")
    _check(progs, outs)
    re_messages = {o.message.split(":")[0] for row in outs for o in row if o.status == Status.RE}
    assert re_messages <= {"unserialisable result", "bad result channel"}, re_messages


def test_the_same_through_an_executor_and_run_batch(sb: Sandbox) -> None:
    progs = [HONEST, *list(HOSTILE)[:4], HONEST]
    with cf.ThreadPoolExecutor(2) as ex:
        _check(progs, sb.run_many(progs, TESTS, "f", executor=ex))
        items = [(p, t, "f") for p in progs for t in TESTS]
        flat = sb.run_batch(items, executor=ex)
    _check(progs, [flat[i : i + 2] for i in range(0, len(flat), 2)])


class ExecutorWhoseWorkerDiesDouble:
    """``map`` like a pool whose worker dies on the job with the poisoned program: earlier results
    come back, then the error, and the rest of that map is lost."""

    def __init__(self, poison: str):
        self.poison, self.maps = poison, 0

    def map(self, fn: Callable[[Any], Any], items: Iterable[Any]) -> Iterator[Any]:
        self.maps += 1
        for x in list(items):
            if x[1] == self.poison:
                raise BrokenProcessPool("a worker died")
            yield fn(x)


def test_a_job_whose_worker_fails_is_its_re_and_the_rest_survive(
    sb: Sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    poison = "def f(a, b):\n    return 'poison'\n"
    ex = ExecutorWhoseWorkerDiesDouble(poison)
    outs = sb.run_many([HONEST, poison, HONEST], TESTS, "f", executor=ex)
    assert [o.status for o in outs[0] + outs[2]] == [Status.AC] * 4
    assert [o.status for o in outs[1]] == [Status.RE, Status.RE]
    assert "BrokenProcessPool: a worker died" in outs[1][0].message
    assert ex.maps == 3  # the jobs after each failure were mapped again

    real_call = cr._sb.call

    def call_that_fails_on_the_host_double(program: str, *a: Any, **k: Any) -> CallResult:
        if program == poison:
            raise MemoryError("host ran out of memory decoding")
        return real_call(program, *a, **k)

    monkeypatch.setattr(cr._sb, "call", call_that_fails_on_the_host_double)
    outs = sb.run_many([HONEST, poison, HONEST], TESTS, "f")
    assert [o.status for o in outs[0] + outs[2]] == [Status.AC] * 4
    assert [o.status for o in outs[1]] == [Status.RE, Status.RE]
    assert "MemoryError: host ran out of memory decoding" in outs[1][0].message
