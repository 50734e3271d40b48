"""Candidate processes started one test ahead (speed only).

Starting a sandboxed candidate (bubblewrap's namespaces, the memory cgroup, the interpreter) takes
most of a judged test's wall time, and none of it depends on the candidate: the process waits for
its job before it sets a limit or reads a line of the program. So while one judged test runs, the
next test's candidate process is already started, on an otherwise idle CPU, and the next test
sends its job to it instead of starting one (:class:`Spares`).

A spare is a fresh process that has run nothing but the sandbox's own start-up: it is used once,
for one candidate, and is killed (never reused) when that candidate's session ends, exactly as a
process started on demand. It is used only if it is still waiting untouched (alive, nothing written
on any of its pipes, started less than ``MAX_AGE_S`` ago) and was started under the same plan and
limits; otherwise it is killed and a process is started on demand. Every clock of the candidate's
session starts when its job is sent, as it did when the process was started for it; its CPU limit
counts the interpreter's start-up as before. Only the bubblewrap plan keeps spares: without
namespaces a candidate could reach another process of the same user, and a spare must be reachable
by nothing. One spare per (plan, limits) at a time, at most ``MAX_KEYS`` of them per host process;
a forked host process starts its own, and every spare is killed at exit.
"""

from __future__ import annotations

import atexit
import logging
import os
import queue
import threading
import time

from rsi_workbench.sandbox.plan import Isolation, Limits
from rsi_workbench.sandbox.supervisor import _Child

MAX_AGE_S = 60.0
MAX_KEYS = 2
WAIT_S = 10.0  # the longest a test waits for its spare to finish starting (then it starts its own)
log = logging.getLogger("rsi_workbench.sandbox")
Key = tuple[str, Limits]


class Spares:
    """At most one started, waiting candidate process per (plan, limits); see the module docstring.

    Spares are started by one thread of the host process that lives as long as the process (a
    sandbox started with ``--die-with-parent`` dies when the *thread* that started it ends): starting
    one (the cgroup's migration waits in the kernel for milliseconds) overlaps the running test."""

    def __init__(self) -> None:
        self._reset()
        os.register_at_fork(after_in_child=self._reset)  # a forked copy: those belong to the parent

    def _reset(self) -> None:
        self.lock = threading.Lock()
        self.idle: dict[Key, _Child] = {}
        self.starting: dict[Key, threading.Event] = {}
        self.jobs: queue.SimpleQueue[tuple[Isolation, Limits] | None] | None = None
        self.thread: threading.Thread | None = None

    def take(self, iso: Isolation, limits: Limits) -> _Child:
        """A started candidate process waiting for its job (:meth:`_Child.start`): the spare for this
        plan and limits when it is usable, else one started now. Its clock starts now."""
        key = (iso.key(), limits)
        with self.lock:
            pending = self.starting.get(key)
        if pending is not None:
            pending.wait(WAIT_S)
        with self.lock:
            child = self.idle.pop(key, None)
        if child is not None and not _untouched(child):
            child.finish()
            child = None
        if child is None:
            child = _Child(iso, limits, None)
        child.t0 = time.monotonic()
        return child

    def refill(self, iso: Isolation, limits: Limits) -> None:
        """Have the next spare for this plan and limits started (bubblewrap only; best effort: a
        failure there is the next :meth:`take`'s to report, when it starts its own)."""
        if iso.plan != "bwrap":
            return
        key = (iso.key(), limits)
        with self.lock:
            if key in self.idle or key in self.starting:
                return
            self.starting[key] = threading.Event()
            if self.thread is None:
                self.jobs = queue.SimpleQueue()
                self.thread = threading.Thread(
                    target=self._run, args=(self.jobs,), name="rsi-spares", daemon=True
                )
                self.thread.start()
            assert self.jobs is not None
            self.jobs.put((iso, limits))

    def _run(self, jobs: queue.SimpleQueue[tuple[Isolation, Limits] | None]) -> None:
        while (job := jobs.get()) is not None:
            iso, limits = job
            key = (iso.key(), limits)
            try:
                child: _Child | None = _Child(iso, limits, None)
            except Exception as e:
                log.debug("no spare candidate process: %s", e)
                child = None
            with self.lock:
                old = [self.idle.pop(k) for k in list(self.idle) if k == key or len(self.idle) >= MAX_KEYS]
                if child is not None:
                    self.idle[key] = child
                done = self.starting.pop(key, None)
            if done is not None:
                done.set()
            for c in old:
                c.finish()

    def close_all(self) -> None:
        """Kill every spare of this process (at exit)."""
        with self.lock:
            thread, jobs = self.thread, self.jobs
            self.thread = self.jobs = None
        if thread is not None and jobs is not None:
            jobs.put(None)
            thread.join(WAIT_S)
        with self.lock:
            spares, self.idle = list(self.idle.values()), {}
        for c in spares:
            c.finish()


def _untouched(child: _Child) -> bool:
    """Alive, young, and nothing read from any of its pipes (its start-up wrote nothing)."""
    child.drain()
    if child.exited or time.monotonic() - child.t0 > MAX_AGE_S:
        return False
    return not any(child.bufs[fd] for fd in (child.out_fd, child.err_fd, child.result_fd, child.cov_fd))


SPARES = Spares()
atexit.register(SPARES.close_all)
