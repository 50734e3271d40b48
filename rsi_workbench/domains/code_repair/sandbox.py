"""Sandbox executor (E0 evidence) for repair tests: a thin user of :mod:`rsi_workbench.sandbox`.

Every test of a candidate runs in a fresh sandboxed process (bubblewrap when the host has it). An
``io`` test only *calls* the candidate there: the returned plain data comes back and this supervisor
compares it with the expected value, which never enters the candidate's process. An ``assert`` test
(one the loader could not convert to ``io``) runs in a separate judge process that calls the
candidate through the host (:mod:`rsi_workbench.sandbox.judge`, docs/sandbox-guarantees.md).
Outcomes are the five statuses the world model's readout predicts (paper, "对照四"): ``AC``
passed, ``WA`` wrong answer, ``TLE`` wall clock or CPU limit, ``RE`` the candidate raised, crashed
or returned something that is not plain data, ``CE`` the program does not compile (every test CE,
nothing runs). The isolation achieved is probed once per
process and recorded with every execution; ``required`` mode refuses anything short of complete.
"""

from __future__ import annotations

import reprlib
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any

from rsi_workbench import sandbox as _sb
from rsi_workbench.sandbox import (
    CallResult,
    Isolation,
    SandboxMode,
    SandboxUnavailable,
    compare,
    obtain_isolation,
)
from rsi_workbench.sandbox import Limits as SandboxLimits
from rsi_workbench.sandbox.values import align, decode

ITER_ITEMS = 100_000  # ``compare: iter`` materialises at most this many items inside the sandbox


class Status(StrEnum):
    """The five execution outcomes, in the order of the world model's readout logits."""

    AC = "AC"
    WA = "WA"
    TLE = "TLE"
    RE = "RE"
    CE = "CE"


STATUSES: tuple[Status, ...] = tuple(Status)


@dataclass(frozen=True)
class TestOutcome:
    """One test's result: status, in-sandbox runtime, capped output, and the isolation it ran under."""

    __test__ = False  # not a pytest class

    test_id: str
    status: Status
    runtime_s: float
    stdout: str = ""
    stderr: str = ""
    message: str = ""
    isolation: dict[str, Any] = field(default_factory=dict)
    covered_lines: tuple[int, ...] | None = None

    @property
    def passed(self) -> bool:
        return self.status == Status.AC

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["status"] = self.status.value
        return d


# ------------------------------------------------------------------------------------- judging
def _test_dict(test: Any) -> dict[str, Any]:
    if hasattr(test, "model_dump"):
        return dict(test.model_dump(mode="json"))
    if isinstance(test, Mapping):
        return dict(test)
    raise TypeError(f"a test must be a TestCase or a dict, got {type(test).__name__}")


def judge(test: Mapping[str, Any], res: CallResult) -> tuple[Status, str]:
    """The verdict, decided here from plain data only: the expected value stays on this side."""
    if res.kind == "timeout":
        return Status.TLE, res.message
    if res.kind == "raised" or res.kind == "error":
        return Status.RE, res.message
    if res.kind == "passed" and test.get("kind") == "assert":
        return Status.AC, ""
    if res.kind == "failed" and test.get("kind") == "assert":
        return Status.WA, res.message
    if res.kind == "value" and test.get("kind") == "io":
        try:
            got, expected = align(res.value, test.get("expected"))  # tuples vs JSON lists: see values
            same = compare(
                got,
                expected,
                str(test.get("compare") or "exact"),
                rel_tol=test.get("rel_tol"),
                abs_tol=test.get("abs_tol"),
            )
        except Exception as e:  # a value (or test) the comparison cannot take: this test's RE only
            return Status.RE, f"comparing the result failed: {_describe(e)}"[:500]
        return (Status.AC, "") if same else (Status.WA, f"got {_preview(res.value)}"[:500])
    return Status.RE, f"result of kind {res.kind!r} does not fit a {test.get('kind')!r} test"


def _describe(e: BaseException) -> str:
    try:
        return f"{type(e).__name__}: {str(e)[:300]}"
    except Exception:
        return type(e).__name__


_REPR = reprlib.Repr()
_REPR.maxlevel, _REPR.maxstring, _REPR.maxlong, _REPR.maxother = 8, 480, 480, 480
_REPR.maxlist = _REPR.maxdict = 50


def _preview(value: Any) -> str:
    """A bounded repr of a returned value for a WA message: never the whole of a huge value, and
    never an error (an int too long for ``repr`` is described by its size)."""
    try:
        return _REPR.repr(value)
    except Exception:
        if type(value) is int:
            return f"<int of {value.bit_length()} bits>"
        return f"<{type(value).__name__} that cannot be shown>"


def probe_isolation() -> Isolation:
    """The strongest isolation this host allows, probed once per process (see :mod:`rsi_workbench.sandbox`);
    no mode check here: :class:`Sandbox` hands it to :func:`~rsi_workbench.sandbox.obtain_isolation`."""
    return _sb.probe_isolation(())


def default_mode() -> SandboxMode:
    """``RSI_WORKBENCH_SANDBOX_MODE`` (CI sets ``required``), else ``best_effort``."""
    return _sb.default_mode()


# ------------------------------------------------------------------------------------- the sandbox
class Sandbox:
    """Runs tests of candidate programs, one fresh sandboxed process per test; picklable for process pools."""

    def __init__(self, mode: SandboxMode | None = None, limits: SandboxLimits | None = None):
        """``mode`` (a config's; None: no opinion) is tightened by ``RSI_WORKBENCH_SANDBOX_MODE``
        (the stricter wins, see :func:`~rsi_workbench.sandbox.obtain_isolation`); ``self.mode`` is the
        effective mode and :meth:`isolation_record` what a run records."""
        self.limits = limits or SandboxLimits()
        self.grant = obtain_isolation(mode=mode, purpose="code repair tests", isolation=probe_isolation())
        self.mode: SandboxMode = self.grant.mode
        self.isolation = self.grant.isolation

    def isolation_record(self) -> dict[str, Any]:
        """The isolation achieved and the effective mode (``experiment_started``'s ``sandbox``)."""
        return self.grant.record()

    def __repr__(self) -> str:
        return f"Sandbox(mode={self.mode!r}, isolation={self.isolation.record()})"

    @staticmethod
    def compile_error(program: str) -> str | None:
        """The compile error message of a program, or None when it compiles (empty programs are CE)."""
        if not program.strip():
            return "empty program"
        try:
            compile(program, "candidate.py", "exec")
        except (SyntaxError, ValueError) as e:
            return f"{type(e).__name__}: {e}"
        return None

    def run_test(self, program: str, test: Any, entry_point: str, *, trace: bool = False) -> TestOutcome:
        """Run one test of ``program`` in a fresh sandboxed interpreter."""
        t = _test_dict(test)
        err = self.compile_error(program)
        if err is not None:
            return TestOutcome(
                str(t.get("id")), Status.CE, 0.0, message=err, isolation=self.isolation.record()
            )
        if t.get("kind") == "io":
            materialise = ITER_ITEMS if t.get("compare") == "iter" else 0
            res = _sb.call(
                program,
                entry_point,
                decode(list(t.get("args") or [])),  # tagged args ({"$t": ...}) arrive with their types
                limits=self.limits,
                isolation=self.isolation,
                materialise=materialise,
                trace=trace,
                exact_types=True,
                coverage=True,  # in every run (public or hidden, traced or not): nothing to tell them apart
            )
        else:
            res = _sb.run_check(
                program,
                entry_point,
                str(t.get("code")),
                limits=self.limits,
                isolation=self.isolation,
                trace=trace,
            )
        status, message = judge(t, res)
        return TestOutcome(
            str(t.get("id")),
            status,
            res.wall_s,
            stdout=res.stdout,
            stderr=res.stderr,
            message=message,
            isolation=self.isolation.record(),
            covered_lines=res.lines if trace else None,
        )

    def run_suite(
        self,
        program: str,
        tests: Sequence[Any],
        entry_point: str,
        executor: Any = None,
        *,
        trace: bool = False,
    ) -> list[TestOutcome]:
        """Run every test (fanned out through ``executor`` if given); an empty suite is an error."""
        return self.run_many([program], tests, entry_point, executor=executor, trace=trace)[0]

    def run_many(
        self,
        programs: Sequence[str],
        tests: Sequence[Any],
        entry_point: str,
        executor: Any = None,
        *,
        trace: bool = False,
    ) -> list[list[TestOutcome]]:
        """Run the same suite on many candidate programs; all (program, test) pairs fan out together."""
        tests = list(tests)
        if not tests:
            raise ValueError("empty test suite: without tests there is no feedback (never a pass)")
        results: list[list[TestOutcome | None]] = [[None] * len(tests) for _ in programs]
        jobs = []
        for i, prog in enumerate(programs):
            err = self.compile_error(prog)
            for j, t in enumerate(tests):
                if err is not None:
                    tid = str(_test_dict(t).get("id"))
                    results[i][j] = TestOutcome(
                        tid, Status.CE, 0.0, message=err, isolation=self.isolation.record()
                    )
                else:
                    jobs.append((i, j, (self, prog, _test_dict(t), entry_point, trace)))
        outs = _fan_out([a for _, _, a in jobs], executor)
        for (i, j, _), o in zip(jobs, outs, strict=True):
            results[i][j] = o
        return [[o for o in row if o is not None] for row in results]

    def run_batch(
        self, items: Sequence[tuple[str, Any, str]], executor: Any = None, *, trace: bool = False
    ) -> list[TestOutcome]:
        """Run heterogeneous ``(program, test, entry_point)`` items (any tasks), fanned out together."""
        args = [(self, prog, _test_dict(test), ep, trace) for prog, test, ep in items]
        return _fan_out(args, executor)


_Job = tuple[Sandbox, str, dict[str, Any], str, bool]


def _run_one(args: _Job) -> TestOutcome:
    """One (program, test) job; any error on this side (decoding, comparing, starting the process)
    is this job's ``RE`` with a message, never an exception that would lose the other jobs."""
    sb, program, test, entry_point, trace = args
    try:
        return sb.run_test(program, test, entry_point, trace=trace)
    except Exception as e:
        return _host_error(args, e)


def _host_error(args: _Job, e: BaseException) -> TestOutcome:
    sb, _, test, _, _ = args
    msg = f"the host could not run or judge this test: {_describe(e)}"[:500]
    return TestOutcome(str(test.get("id")), Status.RE, 0.0, message=msg, isolation=sb.isolation.record())


def _fan_out(jobs: list[_Job], executor: Any) -> list[TestOutcome]:
    """Every job's outcome, in order, serially or through ``executor.map``. A job whose result does
    not come back (its worker raised or died) becomes its ``RE``; the jobs after it are mapped again,
    so no other job's outcome is lost."""
    if executor is None:
        return [_run_one(a) for a in jobs]
    outs: list[TestOutcome] = []
    while len(outs) < len(jobs):
        try:
            for o in executor.map(_run_one, jobs[len(outs) :]):
                outs.append(o)
        except Exception as e:
            outs.append(_host_error(jobs[len(outs)], e))
    return outs


def pass_count(outcomes: Sequence[TestOutcome]) -> int:
    """How many tests passed (the public-test score used to select and keep candidates)."""
    return sum(o.status == Status.AC for o in outcomes)


__all__ = [
    "STATUSES",
    "Isolation",
    "Sandbox",
    "SandboxLimits",
    "SandboxMode",
    "SandboxUnavailable",
    "Status",
    "TestOutcome",
    "default_mode",
    "judge",
    "pass_count",
    "probe_isolation",
]
