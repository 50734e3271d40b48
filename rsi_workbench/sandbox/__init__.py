"""One sandbox for all untrusted code (candidate programs, model-written policies, action programs).

``call(program, entry, args)`` runs ``entry(*args)`` of ``program`` in a fresh sandboxed process and
returns plain data (:class:`CallResult`); :class:`Session` keeps one process alive for many calls.
The candidate's process never sees an expected value and decides no verdict: callers compare the
returned data on the host (see :func:`compare`). Isolation is probed, recorded with every result,
and ``required`` mode refuses anything short of complete (see :mod:`rsi_workbench.sandbox.plan`).
"""

from __future__ import annotations

import math
from typing import Any

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
    ASSERT_KINDS,
    ONE_SHOT_KINDS,
    CallResult,
    check_mode,
    probe_isolation,
    run_once,
)


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
) -> CallResult:
    """Run ``entry(*args)`` of ``program`` once in a fresh sandboxed process; plain data comes back.
    ``materialise=n`` turns a returned iterable into a list of at most ``n`` items inside the sandbox."""
    iso = isolation or obtain_isolation(tuple(packages), purpose="sandbox.call").isolation
    job = {"program": program, "entry": entry, "args": list(args), "materialise": materialise, "trace": trace}
    return run_once(iso, limits or Limits(), job, ONE_SHOT_KINDS)


def run_check(
    program: str,
    entry: str,
    code: str,
    *,
    limits: Limits | None = None,
    isolation: Isolation | None = None,
    trace: bool = False,
) -> CallResult:
    """Run an assert-style check (test code that calls the program) in the candidate's process, with
    fresh globals and a fresh copy of the builtins: ``passed`` / ``failed`` / ``raised``. Weaker than
    :func:`call`: the check's expected values live in the candidate's process (see the README)."""
    iso = isolation or obtain_isolation((), purpose="sandbox.run_check").isolation
    job = {"program": program, "entry": entry, "assert_code": code, "trace": trace}
    return run_once(iso, limits or Limits(), job, ASSERT_KINDS)


def compare(
    got: Any, expected: Any, how: str = "exact", *, rel_tol: float | None = None, abs_tol: float | None = None
) -> bool:
    """The supervisor's comparison on plain data: ``exact`` (and ``iter``) is Python ``==``;
    ``approx`` compares numbers with ``max(rel_tol * max(|a|, |b|), abs_tol)`` (defaults 1e-6, 1e-9),
    recursing through lists and dicts; booleans are never numbers."""
    if how in ("exact", "iter"):
        return bool(got == expected)
    if how != "approx":
        raise ValueError(f"compare {how!r}: allowed values are 'exact', 'approx', 'iter'")
    return _approx(got, expected, 1e-6 if rel_tol is None else rel_tol, 1e-9 if abs_tol is None else abs_tol)


def _approx(a: Any, b: Any, rel: float, abs_: float) -> bool:
    ta, tb = type(a), type(b)
    if ta is bool or tb is bool:
        return bool(a == b)
    if ta in (int, float) and tb in (int, float):
        fa = a if ta is float else 0.0
        fb = b if tb is float else 0.0
        if math.isnan(fa) or math.isnan(fb):
            return False
        if math.isinf(fa) or math.isinf(fb):
            return bool(a == b)
        return abs(a - b) <= max(rel * max(abs(a), abs(b)), abs_)
    if ta is list and tb is list:
        return len(a) == len(b) and all(_approx(x, y, rel, abs_) for x, y in zip(a, b))
    if ta is dict and tb is dict:
        return a.keys() == b.keys() and all(_approx(a[k], b[k], rel, abs_) for k in a)
    return bool(a == b)


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
