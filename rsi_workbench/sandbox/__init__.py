"""One sandbox for all untrusted code (candidate programs, model-written policies, action programs).

``call(program, entry, args)`` runs ``entry(*args)`` of ``program`` in a fresh sandboxed process and
returns plain data (:class:`CallResult`); :class:`Session` keeps one process alive for many calls.
The candidate's process never sees an expected value and decides no verdict: callers compare the
returned data on the host (see :func:`compare`). Isolation is probed, recorded with every result,
and ``required`` mode refuses anything short of complete (see :mod:`rsi_workbench.sandbox.plan`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any

from rsi_workbench.sandbox.judge import run_judged
from rsi_workbench.sandbox.plan import (
    MODE_ENV,
    Isolation,
    IsolationGrant,
    Limits,
    SandboxMode,
    SandboxUnavailable,
    default_mode,
    describe_isolation,
    effective_mode,
    obtain_isolation,
)
from rsi_workbench.sandbox.session import Session
from rsi_workbench.sandbox.supervisor import (
    ONE_SHOT_KINDS,
    CallResult,
    check_mode,
    probe_isolation,
    run_once,
)
from rsi_workbench.sandbox.values import MapValue, portable


def call(
    program: str,
    entry: str,
    args: list[Any],
    *,
    limits: Limits | None = None,
    isolation: Isolation | None = None,
    packages: tuple[str, ...] = (),
    materialise: int = 0,
    trace: bool = False,
    exact_types: bool = False,
    coverage: bool = False,
) -> CallResult:
    """Run ``entry(*args)`` of ``program`` once in a fresh sandboxed process; plain data comes back.
    ``materialise=n`` turns a returned iterable into a list of at most ``n`` items inside the sandbox;
    ``trace`` returns the covered lines; ``coverage`` collects them even when they are not returned
    (so traced and untraced runs look the same from inside); ``exact_types`` keeps tuples, sets,
    bytes, complex and non-str dict keys (:mod:`rsi_workbench.sandbox.values`), else tuples are lists."""
    iso = isolation or obtain_isolation(tuple(packages), purpose="sandbox.call").isolation
    payload, tagged = portable(list(args))
    job = {"program": program, "entry": entry, "args": payload, "materialise": materialise}
    if tagged:
        job["tagged"] = True
    job["coverage"] = coverage or trace
    return run_once(iso, limits or Limits(), job, ONE_SHOT_KINDS, trace=trace, exact=exact_types)


def run_check(
    program: str,
    entry: str,
    code: str,
    *,
    limits: Limits | None = None,
    isolation: Isolation | None = None,
    trace: bool = False,
) -> CallResult:
    """Run test code that calls the program: the test code runs in a separate judge process (same plan,
    same limits), never in the candidate's; each call of ``entry`` it makes goes through the host to
    a :class:`Session` on ``program`` and back as plain data. ``passed`` / ``failed`` (the test code's
    own failure) / ``raised`` (the candidate raised) / ``timeout`` / ``error``; see
    :func:`rsi_workbench.sandbox.judge.run_judged` and docs/sandbox-guarantees.md."""
    iso = isolation or obtain_isolation((), purpose="sandbox.run_check").isolation
    return run_judged(program, entry, code, limits=limits or Limits(), isolation=iso, trace=trace)


def compare(
    got: Any, expected: Any, how: str = "exact", *, rel_tol: float | None = None, abs_tol: float | None = None
) -> bool:
    """The supervisor's comparison on plain data; it never raises on plain data (None, bool, int,
    float, str, lists, dicts with str keys), however large or deep. ``exact`` (and ``iter``) is
    Python ``==``, so ``True == 1 == 1.0`` there; ``approx`` compares numbers with
    ``|a - b| <= max(rel_tol * max(|a|, |b|), abs_tol)`` (defaults 1e-6, 1e-9; rational arithmetic
    for ints beyond float range), recursing through lists, tuples and dicts; NaN equals nothing, an
    infinity only itself, and a boolean is never a number (``True`` is not ``1``, ``False`` not ``0.0``).
    A bad ``how`` or tolerance (the test's own data) raises ``ValueError``."""
    if how in ("exact", "iter"):
        try:
            return bool(got == expected)
        except RecursionError:  # nested deeper than the interpreter's recursion limit
            return _walk(got, expected, _exact_leaf)
    if how != "approx":
        raise ValueError(f"compare {how!r}: allowed values are 'exact', 'approx', 'iter'")
    rel = _tolerance("rel_tol", 1e-6 if rel_tol is None else rel_tol)
    abs_ = _tolerance("abs_tol", 1e-9 if abs_tol is None else abs_tol)
    return _walk(got, expected, lambda a, b: _close(a, b, rel, abs_))


def _tolerance(name: str, v: Any) -> float:
    if type(v) not in (int, float) or not math.isfinite(v) or v < 0:
        raise ValueError(f"compare approx: {name} must be a finite number >= 0, got {v!r}")
    return float(v)


def _walk(a: Any, b: Any, leaf: Callable[[Any, Any], bool]) -> bool:
    """Lists (tuples) and dicts pairwise, with an explicit stack (no recursion limit); ``leaf`` for
    the rest (a list never matches a tuple here)."""
    stack = [(a, b)]
    while stack:
        x, y = stack.pop()
        tx, ty = type(x), type(y)
        if tx is ty and (tx is list or tx is tuple):
            if len(x) != len(y):
                return False
            stack.extend(zip(x, y))
        elif tx is dict and ty is dict:
            if len(x) != len(y) or any(k not in y for k in x):
                return False
            stack.extend((x[k], y[k]) for k in x)
        elif tx is MapValue and ty is MapValue:  # a decoded dict with non-str keys: no hashing
            if len(x) != len(y) or not x.same_keys(y):
                return False
            stack.extend(x.value_pairs(y))
        elif not leaf(x, y):
            return False
    return True


def _exact_leaf(a: Any, b: Any) -> bool:
    return bool(a == b)


_FLOAT_SAFE_BITS = 1000  # |int| < 2**1000: float(int) is finite and exact arithmetic is not needed


def _close(a: Any, b: Any, rel: float, abs_: float) -> bool:
    ta, tb = type(a), type(b)
    if ta is bool or tb is bool:
        return ta is tb and a == b
    if ta not in (int, float) or tb not in (int, float):
        return bool(a == b)
    if (ta is float and not math.isfinite(a)) or (tb is float and not math.isfinite(b)):
        return bool(a == b)  # NaN equals nothing; an infinity only itself (ints compare exactly)
    if (ta is float or a.bit_length() < _FLOAT_SAFE_BITS) and (
        tb is float or b.bit_length() < _FLOAT_SAFE_BITS
    ):
        return bool(abs(a - b) <= max(rel * max(abs(a), abs(b)), abs_))
    fa, fb = Fraction(a), Fraction(b)  # exact: no float() of an int beyond float range
    return abs(fa - fb) <= max(Fraction(rel) * max(abs(fa), abs(fb)), Fraction(abs_))


__all__ = [
    "describe_isolation",
    "MODE_ENV",
    "CallResult",
    "Isolation",
    "IsolationGrant",
    "Limits",
    "SandboxMode",
    "SandboxUnavailable",
    "Session",
    "call",
    "check_mode",
    "compare",
    "default_mode",
    "effective_mode",
    "obtain_isolation",
    "probe_isolation",
    "run_check",
]
