"""Discovery programs: a candidate solution written as a Python program, run only in the sandbox.

A program-writing discovery agent's node holds a program (e.g. ``construct_packing()`` returning
centres and radii) instead of a solution state. :func:`run_program` runs it in a fresh sandboxed
process (numpy and scipy importable, a wall clock and CPU/memory limits), gets **plain data**
back and scores that data on the host with the task's exact evaluator; the program decides no
verdict. The outcome keeps its real class (:class:`~rsi_workbench.domains.math.task.AttemptResult`):

- ``None`` — the returned solution is valid (score = the exact evaluator's);
- ``"invalid"`` — the program ran and returned a solution the evaluator rejects (overlap, escape,
  wrong shape), data that is not numbers (a string, a bool, None, an int beyond float range), or a
  solution whose score is not a finite number (e.g. heights so large that the bound is NaN): a weak
  result, not a failure, with the reason;
- ``"timeout"`` — the wall clock or the CPU limit ran out;
- ``"exception"`` — the program did not load (syntax error), raised, crashed or returned data that
  is not plain (the error names the exception type and message);
- ``"optimizer_failure"`` — the solution is not valid and the program's last
  ``scipy.optimize.minimize`` call reported a failure that is not an iteration limit (recorded by a
  wrapper the harness installs inside the sandbox; it is only a label, never a score).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from rsi_workbench import sandbox
from rsi_workbench.domains.math.autocorrelation import FirstAutocorrelation
from rsi_workbench.domains.math.circle_packing import CirclePacking
from rsi_workbench.domains.math.task import AttemptResult, DiscoveryTask, Evaluation
from rsi_workbench.sandbox import CallResult, Isolation, Limits

#: the packages a discovery program may import inside the sandbox (besides the standard library)
PACKAGES = ("numpy", "scipy")

# Runs inside the sandbox, in the candidate's process: it loads the program from its source, calls
# the entry point and turns numpy results into lists. It records each scipy ``minimize`` outcome.
HARNESS = """
def _plain(x, depth=0):
    if depth > 20:
        raise ValueError("result nested too deeply")
    if hasattr(x, "tolist"):
        x = x.tolist()
    if isinstance(x, (list, tuple)):
        return [_plain(v, depth + 1) for v in x]
    if isinstance(x, bool) or x is None or isinstance(x, str):
        return x
    if isinstance(x, int):  # beyond float range stays an int (the host says so); beyond 8192 bits, a note
        return x if x.bit_length() <= 8192 else "<an int of %d bits>" % x.bit_length()
    return float(x)


def run_program(src, entry):
    log = []
    try:
        import scipy.optimize as opt
    except ImportError:
        opt = None
    if opt is not None:
        original = opt.minimize

        def minimize(*a, **k):
            r = original(*a, **k)
            log.append([bool(getattr(r, "success", True)), str(getattr(r, "message", ""))[:200]])
            return r

        opt.minimize = minimize
    env = {"__name__": "program"}
    exec(compile(src, "program.py", "exec"), env)
    fn = env.get(entry)
    if not callable(fn):
        raise NameError("the program defines no function " + repr(entry))
    return {"value": _plain(fn()), "optimizer": log[-1:]}
"""

#: optimiser messages that only mean "stopped at its iteration limit" (not an optimiser failure)
ITERATION_LIMIT = ("iteration limit", "maximum number of iterations", "max. number of iter")


@dataclass(frozen=True)
class ProgramSpec:
    """What a task's program must define and return, with the program a tree starts from."""

    entry: str
    statement: str
    seed_program: str


CIRCLE_SEED = '''import numpy as np


def construct_packing():
    """Place 26 circles on a grid; return a list of [x, y, r] rows (all inside the unit square)."""
    n = 26
    cols, rows = 6, 5
    r = 0.5 / cols
    circles = []
    for i in range(n):
        x = (i % cols + 0.5) / cols
        y = (i // cols + 0.5) / cols
        circles.append([x, y, r])
    return np.array(circles)
'''

AUTOCORR_SEED = '''import numpy as np


def construct_heights():
    """Step heights of a non-negative function on [-1/4, 1/4]: all equal."""
    return np.ones(M)
'''


def program_spec(task: DiscoveryTask) -> ProgramSpec:
    """The program contract of a math task (circle packing or the first autocorrelation inequality)."""
    if isinstance(task, CirclePacking):
        n = task.n
        return ProgramSpec(
            entry="construct_packing",
            statement=(
                f"Pack {n} disjoint circles inside the unit square [0, 1] x [0, 1] so that the sum of their "
                f"radii is as large as possible (best known: {task.best_known}). Write a Python function "
                f"`construct_packing()` that returns {n} rows [x, y, r] (or a pair: centres ({n}, 2) and "
                f"radii ({n},)). Every circle must lie inside the square and no two circles may overlap "
                f"(tolerance {task.tol:g}); otherwise the packing is invalid. numpy and scipy are available."
            ),
            seed_program=CIRCLE_SEED.replace("26", str(n)),
        )
    if isinstance(task, FirstAutocorrelation):
        m = task.m
        return ProgramSpec(
            entry="construct_heights",
            statement=(
                f"Find {m} non-negative step heights h of a function f on [-1/4, 1/4] minimising the bound "
                f"C1 <= 2*{m}*max(np.convolve(h, h)) / sum(h)**2 (best known {task.best_known}; lower is "
                "better). Write a Python function `construct_heights()` that returns the "
                f"{m} heights. numpy and scipy are available."
            ),
            seed_program=AUTOCORR_SEED.replace("np.ones(M)", f"np.ones({m})"),
        )
    raise TypeError(f"no program contract for task {getattr(task, 'name', task)!r}")


def program_limits(wall_s: float) -> Limits:
    """A discovery program's limits: ``wall_s`` of wall clock, CPU ``2*wall_s`` (BLAS may use two
    threads), 2 GiB of address space (scipy's import alone needs several hundred MiB)."""
    cpu = max(2, int(2 * wall_s) + 1)
    return Limits(
        cpu_soft_s=cpu, cpu_hard_s=cpu + 1, address_space_bytes=2 << 30, wall_s=wall_s, session_wall_s=wall_s
    )


def program_isolation(
    mode: str | None = None, *, isolation: Isolation | None = None
) -> sandbox.IsolationGrant:
    """The sandbox plan for discovery programs (numpy and scipy bound in; probed once per process),
    through the choke point: the stricter of ``mode`` and ``RSI_WORKBENCH_SANDBOX_MODE`` refuses a
    weaker plan (:class:`~rsi_workbench.sandbox.SandboxUnavailable`) or warns (``best_effort``)."""
    return sandbox.obtain_isolation(PACKAGES, mode=mode, purpose="discovery programs", isolation=isolation)


def solution_of(task: DiscoveryTask, value: Any) -> Any:
    """The solution in the evaluator's form: a pair (centres, radii[, anything]) becomes rows
    [x, y, r]; anything else is handed to the evaluator as it came (it names what is wrong)."""
    if isinstance(task, CirclePacking) and isinstance(value, list) and len(value) in (2, 3):
        centres, radii = value[0], value[1]
        try:
            c, r = np.asarray(centres, dtype=float), np.asarray(radii, dtype=float)
        except (TypeError, ValueError):
            return value
        if c.shape == (task.n, 2) and r.shape == (task.n,):
            return np.concatenate([c, r[:, None]], axis=1)
    return value


def _optimizer_failed(log: Any) -> str:
    """The last ``minimize`` call's failure message, or "" (none, success, or an iteration limit)."""
    if not (isinstance(log, list) and log and isinstance(log[-1], list) and len(log[-1]) == 2):
        return ""
    ok, msg = log[-1]
    if ok is True or any(s in str(msg).lower() for s in ITERATION_LIMIT):
        return ""
    return f"scipy.optimize.minimize failed: {str(msg)[:200]}"


def _not_numbers(value: Any, depth: int = 0) -> str:
    """ "" when ``value`` is a real number or a (nested) list of them; else what is in it instead
    (a string, a bool, None, an int beyond float range), so that nothing but numbers is scored."""
    if isinstance(value, list):
        for v in value:
            if bad := _not_numbers(v, depth + 1):
                return bad
        return ""
    if isinstance(value, str) and value.startswith("<an int of ") and value.endswith(" bits>"):
        return f"an int beyond float range ({value[11:-1]})"  # the harness's note
    if isinstance(value, bool) or value is None or not isinstance(value, (int, float)):
        shown = (
            f" {str(value)[:40]!r}"
            if isinstance(value, str)
            else f" ({value})"
            if isinstance(value, bool)
            else ""
        )
        return f"a {type(value).__name__}{shown} where numbers belong"
    if isinstance(value, int) and value.bit_length() > 1023:
        return "an int beyond float range"
    return ""


def checked(ev: Evaluation) -> Evaluation:
    """``ev``, unless it is valid with a score or value that is not a finite real number: then an
    invalid verdict whose reason says what the score is (a valid node always has a finite score)."""
    if not ev.valid:
        return ev
    for name, x in (("score", ev.score), ("value", ev.value)):
        if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
            return Evaluation(None, None, False, f"the {name} is {x!r}, not a finite number")
    return ev


def _failure(res: CallResult) -> tuple[str, str]:
    """(fail_class, error) of a sandbox result that carries no value."""
    if res.kind == "timeout":
        return "timeout", f"timeout: {res.message or 'time limit exceeded'}"
    if res.kind == "raised" and res.error is not None:
        return "exception", f"{res.error[0]}: {res.error[1]}"[:500]
    detail = res.message or res.kind
    return "exception", f"no result: {detail}"[:500]


def run_program(
    task: DiscoveryTask,
    program: str,
    *,
    wall_s: float = 30.0,
    isolation: Isolation | None = None,
    mode: str | None = None,
) -> AttemptResult:
    """Run ``program``'s entry point in the sandbox and score what it returns on the host.

    The plan comes from :func:`program_isolation` (``isolation``: an already probed plan, still
    checked against the mode); ``required`` refuses a weaker one with
    :class:`~rsi_workbench.sandbox.SandboxUnavailable` before anything runs. ``state`` of the result
    is the program text (a node's payload); ``info`` holds the sandbox's wall/CPU seconds and
    stdout/stderr tails.
    """
    spec = program_spec(task)
    iso = program_isolation(mode, isolation=isolation).isolation
    t0 = time.perf_counter()
    res = sandbox.call(
        HARNESS, "run_program", [program, spec.entry], limits=program_limits(wall_s), isolation=iso
    )
    info: dict[str, Any] = {
        "sandbox_kind": res.kind,
        "sandbox_wall_s": round(res.wall_s, 3),
        "stderr": res.stderr[-300:],
    }
    seconds = time.perf_counter() - t0
    value = res.value.get("value") if res.kind == "value" and isinstance(res.value, dict) else None
    if res.kind != "value" or not isinstance(res.value, dict):
        fail, error = _failure(res)
        return AttemptResult(
            program, None, error=error, fail_class=fail, move="program", seconds=seconds, info=info
        )
    bad = _not_numbers(value)
    ev: Evaluation = (
        Evaluation(None, None, False, f"the program returned {bad}")
        if bad
        else checked(task.evaluate(solution_of(task, value)))
    )
    if ev.valid:
        return AttemptResult(program, ev, move="program", seconds=seconds, info=info)
    opt_error = _optimizer_failed(res.value.get("optimizer"))
    if opt_error:
        return AttemptResult(
            program,
            ev,
            error=opt_error,
            fail_class="optimizer_failure",
            move="program",
            seconds=seconds,
            info=info,
        )
    return AttemptResult(program, ev, fail_class="invalid", move="program", seconds=seconds, info=info)
