"""Candidate processes started one judged test ahead (``rsi_workbench.sandbox.spares``): a spare is a
fresh sandbox that has run nothing but its own start-up, used once, under the plan and limits it was
started with, and only while untouched; nothing a candidate does reaches the next test's spare; its
clocks start when its job is sent; a forked host process does not use its parent's; and every spare
is killed at exit."""

from __future__ import annotations

import dataclasses
import os
import signal
import time

import pytest

from rsi_workbench import sandbox
from rsi_workbench.sandbox import Limits
from rsi_workbench.sandbox.judge import run_judged
from rsi_workbench.sandbox.session import Session
from rsi_workbench.sandbox.spares import SPARES, Spares
from rsi_workbench.sandbox.supervisor import _Child, _wait_readable

# limit sets of their own (spares are kept per plan and limits); a judged test's session has its
# test's wall clock as its session clock, so LIM is also the limits of its candidates' sessions
LIM = Limits(wall_s=20.0, session_wall_s=20.0, cpu_soft_s=9)
OTHER = Limits(wall_s=21.0, session_wall_s=21.0, cpu_soft_s=9)
PROGRAM = "def add(a, b):\n    return a + b\n"


@pytest.fixture
def iso() -> sandbox.Isolation:
    i = sandbox.probe_isolation()
    if i.plan != "bwrap":
        pytest.skip("spares are kept only under the bubblewrap plan")
    return i


def _spare(spares: Spares, iso: sandbox.Isolation, limits: Limits) -> _Child:
    """The spare for (iso, limits) once it has started."""
    spares.refill(iso, limits)
    with spares.lock:
        pending = spares.starting.get((iso.key(), limits))
    if pending is not None:
        assert pending.wait(30)
    with spares.lock:
        return spares.idle[(iso.key(), limits)]


def _gone(child: _Child) -> bool:
    return child.proc.poll() is not None or child.exited


def test_a_judged_test_takes_the_spare_the_one_before_it_started(iso: sandbox.Isolation) -> None:
    SPARES.close_all()
    r = run_judged(PROGRAM, "add", "assert add(1, 2) == 3", limits=LIM, isolation=iso)
    assert r.kind == "passed", r
    first = _spare(SPARES, iso, LIM)
    pid = first.proc.pid
    r = run_judged(PROGRAM, "add", "assert add(2, 2) == 4", limits=LIM, isolation=iso)
    assert r.kind == "passed", r
    assert _gone(first), "a spare is used once: the session that took it killed it at its end"
    assert _spare(SPARES, iso, LIM).proc.pid != pid, "and the next test has a new one"


HOSTILE = r"""
import os, signal, subprocess
def add(a, b):
    return a + b
# at load time: plant a file where the next candidate would look, keep a process running, and
# signal every process this user can reach (the next test's spare is already started now)
for d in ("/tmp", os.getcwd()):
    try:
        with open(os.path.join(d, "planted"), "w") as f:
            f.write("x")
    except OSError:
        pass
if os.fork() == 0:
    import time
    time.sleep(30)
    os._exit(0)
for sig in (signal.SIGSTOP, signal.SIGKILL):
    try:
        os.kill(-1, sig)
    except OSError:
        pass
"""

CHECKS = r"""
import os
def add(a, b):
    seen = [p for p in ("/tmp/planted", os.path.join(os.getcwd(), "planted")) if os.path.exists(p)]
    pids = [p for p in os.listdir("/proc") if p.isdigit()]
    return [a + b, seen, len(pids)]
"""


def test_nothing_a_candidate_does_reaches_the_next_tests_spare(iso: sandbox.Isolation) -> None:
    SPARES.close_all()
    run_judged(PROGRAM, "add", "assert add(1, 2) == 3", limits=LIM, isolation=iso)
    spare = _spare(SPARES, iso, LIM)
    # the hostile candidate's own test may end any way (it signalled itself); the next one must not care
    run_judged(HOSTILE, "add", "assert add(1, 2) == 3", limits=LIM, isolation=iso)
    assert _gone(spare), "the hostile test took that spare"
    nxt = _spare(SPARES, iso, LIM)  # started while the hostile candidate ran
    assert not _gone(nxt)
    r = run_judged(CHECKS, "add", "assert add(1, 2) == [3, [], 2]", limits=LIM, isolation=iso)
    assert r.kind == "passed", r  # no planted file, and only the sandbox's init and itself in its /proc


def test_a_spare_that_died_wrote_or_aged_is_not_used(
    iso: sandbox.Isolation, monkeypatch: pytest.MonkeyPatch
) -> None:
    spares = Spares()
    try:
        dead = _spare(spares, iso, LIM)
        os.kill(dead.proc.pid, signal.SIGKILL)
        assert _wait_readable(dead.pidfd, 10)  # it has exited (reaped by take, as any child)
        got = spares.take(iso, LIM)
        assert got is not dead and not got.exited
        got.finish()

        wrote = _spare(spares, iso, LIM)
        wrote.bufs[wrote.err_fd] += b"anything"
        got = spares.take(iso, LIM)
        assert got is not wrote and _gone(wrote)
        got.finish()

        old = _spare(spares, iso, LIM)
        monkeypatch.setattr("rsi_workbench.sandbox.spares.MAX_AGE_S", 0.0)
        got = spares.take(iso, LIM)
        assert got is not old and _gone(old)
        got.finish()
    finally:
        spares.close_all()


def test_a_spare_serves_only_its_own_plan_and_limits(iso: sandbox.Isolation) -> None:
    spares = Spares()
    try:
        mine = _spare(spares, iso, LIM)
        got = spares.take(iso, OTHER)
        assert got is not mine and not _gone(mine)
        assert got.limits == OTHER
        got.finish()
        assert spares.take(iso, LIM) is mine
        mine.finish()
    finally:
        spares.close_all()


def test_no_spares_without_bubblewrap(iso: sandbox.Isolation) -> None:
    spares = Spares()
    spares.refill(dataclasses.replace(iso, plan="none"), LIM)
    assert spares.idle == {} and spares.starting == {} and spares.thread is None


def test_clocks_start_when_the_job_is_sent(iso: sandbox.Isolation) -> None:
    spares = Spares()
    lim = Limits(wall_s=2.0, session_wall_s=2.0, cpu_soft_s=9)  # room for a loaded CI machine
    try:
        _spare(spares, iso, lim)
        time.sleep(2.5)  # longer than both wall clocks
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr("rsi_workbench.sandbox.session.SPARES", spares)
            with Session(PROGRAM, "add", isolation=iso, limits=lim, ahead=True) as s:
                assert s.loaded.kind == "passed", s.loaded
                r = s.call([2, 3])
        assert r.kind == "value" and r.value == 5, r
    finally:
        spares.close_all()


def test_a_forked_host_process_does_not_use_its_parents_spare(iso: sandbox.Isolation) -> None:
    spares = Spares()
    try:
        _spare(spares, iso, LIM)
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:  # the forked copy: no spares, no thread, a lock of its own
            ok = spares.idle == {} and spares.thread is None and spares.lock.acquire(timeout=1)
            os.write(w, b"1" if ok else b"0")
            os._exit(0)
        os.close(w)
        assert os.read(r, 1) == b"1"
        os.close(r)
        os.waitpid(pid, 0)
        assert (iso.key(), LIM) in spares.idle, "the parent's spare is still the parent's"
    finally:
        spares.close_all()


def test_close_all_kills_every_spare_and_the_thread(iso: sandbox.Isolation) -> None:
    spares = Spares()
    a, b = _spare(spares, iso, LIM), _spare(spares, iso, OTHER)
    thread = spares.thread
    spares.close_all()
    assert _gone(a) and _gone(b)
    assert thread is not None and not thread.is_alive()
    assert spares.idle == {}
