"""Test code in its own process: the judge (host side).

:func:`run_judged` runs one test (assert statements, a HumanEval ``check``) with two sandboxed
processes under the same plan and limits and no channel between them: the *judge* holds the test
code and the task's trusted helpers (``_judge_child.py``); the *candidate* is a :class:`Session` on
the program. The host brokers: each call of the entry point the test code makes arrives here as
tagged JSON, goes to the candidate's session, and its plain-data result (exact types, see
:mod:`rsi_workbench.sandbox.values`) goes back to the judge. The verdict is decided here: a
candidate that timed out or sent no valid result ends the test (``timeout`` / ``error``) whatever
the test code does next; otherwise the judge's outcome counts (``passed``; ``failed``: the test
code's own exception; ``raised``: a candidate exception reached the top of the test).

Judges are persistent (a zygote that forks one child per test; one pool per host process, keyed
by plan and limits, at most ``MAX_IDLE`` of them), so a test costs one candidate process plus a
fork; that candidate process was started while the test before it ran (:mod:`.spares`). A judge
whose test process ended without an outcome and a clean exit (killed mid-call, a reply left unread)
is not reused: the test process shares the zygote's stdin, and a reply sent after it died would be
read as a job.

While the calls go back and forth, the host thread, the judge's test process and the candidate's
processes share one CPU (:class:`_OneCPU`, best effort, for speed only): each call wakes three
processes one after another, and a wake-up on another, idle CPU of a VM costs tens of microseconds.
"""

from __future__ import annotations

import atexit
import functools
import json
import os
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from rsi_workbench.sandbox import values
from rsi_workbench.sandbox.frames import _frame_out, loads
from rsi_workbench.sandbox.plan import Isolation, Limits
from rsi_workbench.sandbox.session import Session
from rsi_workbench.sandbox.supervisor import SIGXCPU_EXIT, CallResult, _Child, _children, _text

JUDGE_CHILD = Path(__file__).with_name("_judge_child.py")
# idle judges kept per host process (the least recently used beyond are closed): each is a sandbox
# of three processes of the sandbox's user, and without namespaces (plan none) a candidate's
# process limit counts every process of that user on the host
MAX_IDLE = 4
TESTS_PER_JUDGE = 500  # a zygote is replaced after this many tests (its own CPU clock never runs out)
OUTCOMES = frozenset({"passed", "failed", "raised", "gone", "unsupported"})
_DECODER = json.JSONDecoder()  # json.loads's own settings
ONE_CPU_S = 0.2  # a test's processes share one CPU for at most this long ...
ONE_CPU_WAIT_S = (
    0.01  # ... and no longer once one wait (the candidate's or the test code's work) takes this long
)
Nudge = tuple[float, Callable[[], None]]
_SCALARS = frozenset({type(None), bool, int, str, float})  # an argument ``values.decode`` returns as is


@functools.cache
def _judge_source() -> str:
    return JUDGE_CHILD.read_text()


class JudgeError(RuntimeError):
    """The judge process failed (died, timed out, sent a malformed frame)."""


class _Judge:
    """One persistent judge zygote and its frame reader."""

    def __init__(self, iso: Isolation, limits: Limits):
        self.limits = limits
        # no private working directory under plan none: a judge outlives the tests it runs
        self.child = _Child(iso, limits, {"judge": True}, source=_judge_source(), workdir=False)
        self.tests = 0
        self.broken = self.closed = False
        first = self.frame(self.child.t0 + max(limits.wall_s, 10.0))
        if first != ("ready", True):
            self.close()
            raise JudgeError(f"judge did not start: {first!r} {_text(self.child.stderr)[-300:]}")

    def usable(self) -> bool:
        self.child.drain()
        return not (self.broken or self.child.exited or self.child.results)

    def send(self, obj: Any) -> None:
        self.send_frame(_frame_out(obj))

    def send_frame(self, data: bytes) -> None:
        if not self.child.send(data):
            self.broken = True
            raise JudgeError("judge process is gone")

    def frame(self, deadline: float, nudge: Nudge | None = None) -> tuple[str, Any] | None:
        """The next frame's (kind, payload); None when the deadline passed first."""
        c = self.child
        if not c.pump(deadline, frame_from=0, nudge=nudge, eager=True):
            return None
        buf = c.results
        if len(buf) < 8:
            self.broken = True
            raise JudgeError(f"judge process ended (status {c.status}): {_text(c.stderr)[-300:]}")
        n = int.from_bytes(buf[:8], "big")
        body = buf[8 : 8 + n]
        del buf[: 8 + n]
        try:
            d = loads(_DECODER, body.decode("ascii"))
            ((kind, payload),) = d.items()
        except (ValueError, UnicodeDecodeError, AttributeError, RecursionError):
            self.broken = True
            raise JudgeError("malformed judge frame") from None
        return str(kind), payload

    def close(self) -> None:
        if not self.closed:
            self.broken = self.closed = True
            self.child.finish()


class _Pool:
    """Idle judges of this host process, by (plan, limits); a forked host starts its own."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.pid = os.getpid()
        self.idle: dict[tuple[str, Limits], list[_Judge]] = {}

    def take(self, iso: Isolation, limits: Limits) -> _Judge:
        key = (iso.key(), limits)
        with self.lock:
            if self.pid != os.getpid():  # a forked copy: those judges belong to the parent
                self.pid, self.idle = os.getpid(), {}
            stack = self.idle.setdefault(key, [])
            while stack:
                j = stack.pop()
                if j.usable():
                    return j
                j.close()
        return _Judge(iso, limits)

    def give(self, iso: Isolation, judge: _Judge) -> None:
        if judge.broken or judge.tests >= TESTS_PER_JUDGE or self.pid != os.getpid():
            judge.close()
            return
        key, extra = (iso.key(), judge.limits), []
        with self.lock:
            self.idle[key] = [*self.idle.pop(key, []), judge]  # the most recently used key last
            while sum(map(len, self.idle.values())) > MAX_IDLE:  # the least recently used go
                oldest = next(k for k, js in self.idle.items() if js)
                extra.append(self.idle[oldest].pop(0))
        for j in extra:
            j.close()

    def close_all(self) -> None:
        with self.lock:
            judges = [j for js in self.idle.values() for j in js] if self.pid == os.getpid() else []
            self.idle = {}
        for j in judges:
            j.close()


POOL = _Pool()
atexit.register(POOL.close_all)


def run_judged(
    program: str, entry: str, code: str, *, limits: Limits, isolation: Isolation, trace: bool = False
) -> CallResult:
    """Run test ``code`` in a judge process against ``program`` in a candidate session; the whole
    test has one wall clock (``limits.wall_s``). See the module docstring for the verdict rule."""
    judge = POOL.take(isolation, limits)
    try:
        judge.send({"code": code, "entry": entry})
    except JudgeError:
        judge.close()
        judge = POOL.take(isolation, limits)
        judge.send({"code": code, "entry": entry})
    judge.tests += 1
    t0 = time.monotonic()  # a judge's own start (first test of a host process) is not the test's time
    try:
        session = Session(
            program,
            entry,
            isolation=isolation,
            limits=replace(limits, session_wall_s=limits.wall_s),
            exact_types=True,
            coverage=True,  # in every judged run, traced or not: the candidate cannot tell them apart
            ahead=True,
        )
    except BaseException:
        judge.close()  # its test is in flight: it cannot serve another
        raise
    try:
        res = _broker(judge, session, t0 + limits.wall_s)
        lines = session.covered() if trace else None
        if session.dead is None:
            session._child.drain()  # output written before the last frame
    finally:
        session.close()
        POOL.give(isolation, judge)
    c = session._child
    return replace(
        res, stdout=_text(c.stdout), stderr=_text(c.stderr), wall_s=time.monotonic() - t0, lines=lines
    )


def _broker(judge: _Judge, session: Session, deadline: float) -> CallResult:
    """Forward the judge's calls to the session until the judge reports its test done."""
    one_cpu = _OneCPU(judge, session)
    try:
        return _relay(judge, session, deadline, one_cpu)
    finally:
        one_cpu.end(spread=False)  # the host thread; the test's processes are ending


def _relay(judge: _Judge, session: Session, deadline: float, one_cpu: _OneCPU) -> CallResult:
    fault: CallResult | None = None if session.loaded.kind == "passed" else session.loaded
    outcome: tuple[str, Any] | None = None
    while True:
        try:
            got = judge.frame(deadline, one_cpu.nudge())
        except JudgeError as e:
            judge.close()
            return fault or CallResult("error", message=f"judge: {e}")
        if got is None:  # the test's own code, or the candidate, ran past the test's wall clock
            judge.close()
            return fault or CallResult("timeout", message=f"wall clock {judge.limits.wall_s:g} s exceeded")
        kind, payload = got
        if kind == "call":
            if fault is None:
                one_cpu.start()
            try:
                fault = _forward(judge, session, payload, fault, one_cpu.nudge())
            except JudgeError as e:  # the judge went away while the candidate answered
                judge.close()
                return fault or CallResult("error", message=f"judge: {e}")
        elif kind in OUTCOMES and outcome is None:
            outcome = (kind, payload)
        elif kind == "done" and type(payload) is int:
            if outcome is None or payload != 0:
                # the test process ended without finishing its calls (killed by its CPU limit, a
                # signal or memory mid-call; a reply not read whole): a reply sent to it may still be
                # on the zygote's stdin, where it would be read as the next test's job. Retire it.
                judge.close()
            return fault or _verdict(outcome, payload, judge.limits)
        else:
            judge.close()
            return fault or CallResult("error", message=f"judge: unexpected frame {kind!r}")


def _forward(
    judge: _Judge, session: Session, payload: Any, fault: CallResult | None, nudge: Nudge | None = None
) -> CallResult | None:
    if fault is None:
        try:
            if type(payload) is list and all(type(a) in _SCALARS for a in payload):
                args = payload  # what ``decode`` returns for it, without the copy
            else:
                args = values.decode(payload, frame=True)
            if type(args) is not list:
                raise values.ValueFormatError("arguments are not a list")
        except (values.ValueFormatError, RecursionError) as e:
            fault = CallResult("error", message=f"judge: malformed call ({e})")
        else:
            r = session.call_frame(args, nudge=nudge)
            if isinstance(r, CallResult):
                fault = r
            elif r[0] == "value":
                try:  # one marshal pass when the value has no set or non-str-keyed dict
                    data = _frame_out({"value": r[1]})
                except ValueError:  # ``portable``'s own path: the tagged form, or its error
                    value, tagged = values.portable(r[1])
                    data = _frame_out({"tagged" if tagged else "value": value})
                judge.send_frame(data)
                return None
            else:  # raised: [type name, message], checked by decode_frame
                judge.send({"raised": [r[1][0], r[1][1]]})
                return None
    judge.send({"gone": fault.message})
    return fault


def _verdict(outcome: tuple[str, Any] | None, status: int, limits: Limits) -> CallResult:
    if outcome is None:
        if status in (SIGXCPU_EXIT, -24):
            return CallResult(
                "timeout", message=f"CPU time limit exceeded ({limits.cpu_soft_s} s) in the test code"
            )
        return CallResult("error", message=f"judge: test process ended with status {status} and no outcome")
    kind, payload = outcome
    if kind == "passed":
        return CallResult("passed")
    if kind in ("failed", "raised") and type(payload) is list and len(payload) == 2:
        name, msg = str(payload[0]), str(payload[1])
        return CallResult(kind, error=(name, msg), message=f"{name}: {msg}"[:500])  # type: ignore[arg-type]
    if kind == "unsupported":
        return CallResult("error", message=f"test code: {payload}"[:500])
    return CallResult("error", message=f"judge: outcome {kind!r} without a candidate failure")


class _OneCPU:
    """Speed only, best effort: from a test's first call, the host thread, the judge's test process
    and the candidate's process run on the CPU the host is on, so that each of a call's wake-ups
    (judge -> host -> candidate -> host -> judge) is a switch on that CPU rather than a wake-up of
    another, idle one. It ends (every affinity back to the host's own) after ``ONE_CPU_S`` or as soon
    as one wait takes ``ONE_CPU_WAIT_S`` (the candidate or the test code computes: it gets every
    CPU again), and the host thread's own affinity is restored when the test ends. No limit, clock or
    verdict depends on it; a process it cannot reach (gone, not permitted) is left as it is."""

    def __init__(self, judge: _Judge, session: Session):
        self.judge, self.session = judge, session
        self.mask: set[int] | None = None  # the host thread's own affinity while the CPU is shared
        self.pids: list[int] = []
        self.until = 0.0
        self.tried = False

    def start(self) -> None:
        if self.tried:
            return
        self.tried = True
        try:
            mask = os.sched_getaffinity(0)
            cpu = _this_cpu()
            if cpu not in mask or len(mask) < 2:
                return
            os.sched_setaffinity(0, {cpu})
        except OSError:
            return
        self.mask, self.until = mask, time.monotonic() + ONE_CPU_S
        # the judge's test process (the zygote's one child) and the candidate's main process; what
        # either starts from now on inherits the CPU
        zygote = _main_process(self.judge.child)
        self.pids = (_children(zygote) if zygote else []) + [
            p for p in [_main_process(self.session._child)] if p
        ]
        self._set({cpu})

    def nudge(self) -> Nudge | None:
        if self.mask is None:
            return None
        return min(self.until, time.monotonic() + ONE_CPU_WAIT_S), self.end

    def end(self, spread: bool = True) -> None:
        if self.mask is None:
            return
        mask, self.mask = self.mask, None
        if spread:
            self._set(mask)
        try:
            os.sched_setaffinity(0, mask)
        except OSError:  # a CPU of the mask went offline meanwhile: every online one
            os.sched_setaffinity(0, range(os.cpu_count() or 1))

    def _set(self, cpus: set[int]) -> None:
        for pid in self.pids:
            try:
                os.sched_setaffinity(pid, cpus)
            except OSError:
                pass


def _main_process(child: _Child) -> int | None:
    """The host PID of the Python process a sandbox runs: under bwrap the one child of the sandbox's
    PID 1, otherwise the process itself (None when it cannot be told)."""
    if not child.bwrap:
        return child.proc.pid
    if child.ns_pid is None:
        return None
    kids = _children(child.ns_pid)
    return kids[0] if len(kids) == 1 else None


@functools.cache
def _getcpu() -> Callable[[], int] | None:
    try:
        import ctypes

        f = ctypes.CDLL(None, use_errno=True).sched_getcpu
        f.restype, f.argtypes = ctypes.c_int, []
        return f if f() >= 0 else None
    except (OSError, AttributeError):
        return None


def _this_cpu() -> int:
    """The CPU this thread runs on now (glibc's ``sched_getcpu``, else /proc/thread-self/stat)."""
    f = _getcpu()
    if f is not None:
        return int(f())
    with open("/proc/thread-self/stat", "rb") as fh:
        stat = fh.read()
    try:
        return int(stat[stat.rindex(b")") + 2 :].split()[36])  # field 39, "processor"
    except (ValueError, IndexError):
        raise OSError("no CPU number in /proc/thread-self/stat") from None
