"""Decoding a candidate's result builds no hash table from its data: ints ``k * (2**61 - 1)`` all
hash alike, and a ``set`` (or ``dict``) of them built on the host took minutes for a frame of a
megabyte, outside every clock. Sets and dicts with non-str keys decode to :class:`SetValue` /
:class:`MapValue`, compared through sorted canonical keys with Python's ``==`` meaning; the
sandboxed judge builds the real containers on the test's own clock. No test here asserts a timing:
the timeouts only stop a run of the old code (minutes a test) from hanging the suite."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rsi_workbench import sandbox
from rsi_workbench.domains.code_repair.sandbox import Sandbox, Status, default_mode
from rsi_workbench.domains.code_repair.tasks import TestCase
from rsi_workbench.sandbox import compare, values
from rsi_workbench.sandbox.supervisor import ONE_SHOT_KINDS, decode_frame
from rsi_workbench.sandbox.values import MapValue, SetValue, ValueFormatError

P = 2**61 - 1  # hash(k * P) == 0 for every int k
N = 100_000  # about 2 MB of frame: the old decode took minutes for this on the host


def colliding(n: int = N) -> list[int]:
    return [k * P for k in range(1, n + 1)]


# a candidate that writes its own result frame (it runs in the same process as the child's code)
FORGER = """import os, sys
def f():
    body = {body!r}.encode()
    data = len(body).to_bytes(8, "big") + body
    fd = sys.modules["__main__"].JOB["result_fd"]
    while data:
        data = data[os.write(fd, data):]
    os._exit(0)
"""


def forger(value: Any) -> str:
    return FORGER.format(body=json.dumps({"value": value}, separators=(",", ":")))


@pytest.fixture(scope="module")
def sb() -> Sandbox:
    return Sandbox(mode=default_mode())


# ------------------------------------------------------------------------------ host side
@pytest.mark.timeout(120)
def test_a_frame_of_colliding_ints_decodes_and_compares() -> None:
    ints = colliding()
    for tag in ("$s", "$z"):
        got = decode_frame(json.dumps({"value": {tag: ints}}).encode(), ONE_SHOT_KINDS)[1]
        assert type(got) is SetValue and len(got) == N and got.frozen is (tag == "$z")
        assert got == values.decode({"$s": ints[::-1]})  # the same set, another order
        assert got != values.decode({"$s": ints[1:]}) and got != values.decode({"$s": [*ints[1:], 0]})
        assert compare(got, values.decode({"$s": ints[::-1]})) is True
    pairs = [[k, i] for i, k in enumerate(ints)]
    got = decode_frame(json.dumps({"value": {"$m": pairs}}).encode(), ONE_SHOT_KINDS)[1]
    assert type(got) is MapValue and len(got) == N
    assert got == values.decode({"$m": pairs[::-1]})
    assert got != values.decode({"$m": [[k, i + 1] for i, k in enumerate(ints)]})
    for how in ("exact", "approx"):
        assert compare(got, values.decode({"$m": pairs[::-1]}), how) is True
    # merged as Python merges: the first item stays, a repeated key takes the last value
    dup = values.decode({"$s": [*ints, *ints]})
    assert len(dup) == N and dup == values.decode({"$s": ints})
    m = values.decode({"$m": [*pairs, [P, "last"]]})
    assert len(m) == N and m[P] == "last" and m.keys()[0] == P


def test_equal_items_merge_as_in_python() -> None:
    s = values.decode({"$s": [1, True, 1.0, {"$c": [1.0, 0.0]}, 2]})
    assert s.items == (1, 2) and type(s.items[0]) is int
    s = values.decode({"$s": [True, 1]})
    assert s.items == (True,) and type(s.items[0]) is bool
    m = values.decode({"$m": [[1, "a"], [2, "b"], [True, "c"]]})
    assert list(m.items()) == [(1, "c"), (2, "b")] and type(m.keys()[0]) is int
    assert values.decode({"$m": [["a", 1], ["b", 2]]}) == {"a": 1, "b": 2}  # str keys: a dict
    nan = {"$f": "nan"}
    assert len(values.decode({"$s": [nan, nan]})) == 2  # NaN equals nothing, not even NaN
    assert values.decode({"$s": [nan]}) != values.decode({"$s": [nan]})
    with pytest.raises(ValueFormatError, match="unhashable"):
        values.decode({"$s": [{"$t": [1, [2]]}]})
    with pytest.raises(ValueFormatError, match="unhashable"):
        values.decode({"$m": [[{"$s": [1]}, 0]]})


def test_loosen_encode_and_portable_know_the_decoded_containers() -> None:
    s, m = values.decode({"$z": [1, 2]}), values.decode({"$m": [[1, {"$s": [3]}]]})
    with pytest.raises(ValueFormatError, match="frozenset"):
        values.loosen(s)
    with pytest.raises(ValueFormatError, match="non-str keys"):
        values.loosen(m)
    assert values.encode(m) == {"$m": [[1, {"$s": [3]}]]}
    assert values.portable([1, (2,)]) == ([1, (2,)], False)
    assert values.portable([s]) == ([{"$z": [1, 2]}], True)
    assert (
        repr(s) == "frozenset({1, 2})"
        and repr(m) == "{1: {3}}"
        and repr(values.decode({"$s": []})) == "set()"
    )


# hashable values of every kind a frame carries (NaN aside: it equals nothing, see above)
_atoms = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.sampled_from([0.0, -0.0, 1.0, 2.5, float("inf"), float("-inf"), 1j, 1 + 0j, 2 + 1j, P, 2 * P]),
    st.sampled_from(["", "a", "b"]),
    st.sampled_from([b"", b"a"]),
)
_hashable = st.recursive(
    _atoms,
    lambda inner: st.one_of(st.tuples(inner, inner), st.frozensets(inner, max_size=3)),
    max_leaves=8,
)


@settings(max_examples=400, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(a=st.lists(_hashable, max_size=6), b=st.lists(_hashable, max_size=6), vals=st.lists(st.integers(0, 2)))
def test_decoded_sets_and_dicts_mean_what_python_means(a: list[Any], b: list[Any], vals: list[int]) -> None:
    da, db = (
        values.decode({"$s": [values.encode(x) for x in a]}),
        values.decode({"$z": [values.encode(x) for x in b]}),
    )
    assert (da == db) is (set(a) == set(b)) and len(da) == len(set(a))
    assert (da == set(b)) is (set(a) == set(b)) and (frozenset(b) == da) is (set(a) == set(b))
    pa = list(zip(a, vals + [0] * len(a)))
    pb = list(zip(b, vals + [0] * len(b)))
    ma = values.decode({"$m": [[values.encode(k), v] for k, v in pa]})
    mb = values.decode({"$m": [[values.encode(k), v] for k, v in pb]})
    py_a, py_b = {k: v for k, v in pa}, {k: v for k, v in pb}
    assert (ma == mb) is (py_a == py_b) and len(ma) == len(py_a)
    assert ma == py_a and list(ma.items()) == list(py_a.items())


# ------------------------------------------------------------------------------ through the sandbox
@pytest.mark.timeout(120)
def test_an_io_test_on_a_colliding_set_reaches_its_verdict(sb: Sandbox) -> None:
    ints = colliding()
    prog = forger({"$s": ints})
    same = TestCase(id="same", kind="io", args=[], expected={"$s": ints[::-1]})
    other = TestCase(id="other", kind="io", args=[], expected={"$s": ints[1:]})
    assert sb.run_test(prog, same, "f").status == Status.AC
    out = sb.run_test(prog, other, "f")
    assert out.status == Status.WA and out.message.startswith("got {")


@pytest.mark.timeout(120)
def test_an_io_test_on_colliding_dict_keys_reaches_its_verdict(sb: Sandbox) -> None:
    pairs = [[k, 0] for k in colliding()]
    prog = forger({"$m": pairs})
    assert sb.run_test(prog, TestCase(id="t", kind="io", args=[], expected={"$m": pairs}), "f").passed
    wrong = TestCase(id="t", kind="io", args=[], expected={"$m": [[k, 1] for k, _ in pairs]})
    assert sb.run_test(prog, wrong, "f").status == Status.WA


@pytest.mark.timeout(120)
def test_a_judged_test_on_a_colliding_set_reaches_its_verdict(sb: Sandbox) -> None:
    """The judge builds the real set in its sandbox, on the test's own wall clock."""
    check = TestCase(id="t", kind="assert", code="assert f() == {1}\n")
    out = sb.run_test(forger({"$s": colliding()}), check, "f")
    assert out.status in (Status.TLE, Status.WA), out
    small = TestCase(id="t", kind="assert", code=f"assert f() == {{{P}, {2 * P}}}\n")
    assert sb.run_test(forger({"$s": [2 * P, P]}), small, "f").passed


def test_sets_and_dicts_cross_to_the_candidate_and_back(sb: Sandbox) -> None:
    prog = "def f(x):\n    return type(x).__name__, x\n"
    iso = sandbox.probe_isolation()
    r = sandbox.call(prog, "f", [values.decode({"$m": [[1, {"$s": [2]}]]})], isolation=iso, exact_types=True)
    assert r.kind == "value" and r.value == ("dict", {1: {2}}), r
    with sandbox.Session(prog, "f", isolation=iso, exact_types=True) as s:
        r = s.call([values.decode({"$z": [1, 2]})])
        assert r.kind == "value" and r.value == ("frozenset", frozenset({1, 2})), r
    io = TestCase(id="t", kind="io", args=[{"$s": [1, 2]}], expected={"$t": ["set", {"$s": [2, 1]}]})
    assert sb.run_test(prog, io, "f").passed
    check = TestCase(id="t", kind="assert", code="assert f({(1, 2): {3}}) == ('dict', {(1, 2): {3}})\n")
    assert sb.run_test(prog, check, "f").passed
