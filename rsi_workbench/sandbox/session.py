"""A session: one candidate process kept alive for many calls (a policy's ``select_batch`` per replay
round, an action program per GUI step), with a wall clock per call and one for the whole session.

A call counts only if exactly one well-formed frame arrives within its clock and nothing else was
written before it; after a timeout, a crash or a stray frame the session is dead and every later
call is an ``error`` (the process is gone: nothing it left behind can answer for it). The result
cap (``Limits.result_cap_bytes``) applies to each call's frame, not to the session's total.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from rsi_workbench.sandbox.frames import FrameError, _frame_out, decode_frame
from rsi_workbench.sandbox.plan import Isolation, Limits
from rsi_workbench.sandbox.spares import SPARES
from rsi_workbench.sandbox.supervisor import CallResult, _Child, _result, _text, _wait_readable
from rsi_workbench.sandbox.values import portable

SESSION_KINDS = frozenset({"value", "raised", "unplain"})


class Session:
    """Load ``program`` once in a sandboxed process; ``call(args)`` runs ``entry(*args)`` there."""

    def __init__(
        self,
        program: str,
        entry: str,
        *,
        isolation: Isolation,
        limits: Limits | None = None,
        exact_types: bool = False,
        coverage: bool = False,
        ahead: bool = False,
    ):
        """``exact_types`` keeps tuples, sets, bytes, complex and non-str dict keys in results (see
        :mod:`rsi_workbench.sandbox.values`); otherwise tuples arrive as lists and the rest is an error.
        ``coverage`` collects the candidate's covered lines (:meth:`covered`). ``ahead`` (speed
        only): use a process started ahead for these limits, and start one for the next session
        (:mod:`rsi_workbench.sandbox.spares`)."""
        self.limits = limits or Limits()
        self.exact_types = exact_types
        self.isolation = isolation
        self.calls = 0
        self.dead: str | None = None
        job = {"program": program, "entry": entry, "session": True, "coverage": coverage}
        if ahead:
            self._child = SPARES.take(isolation, self.limits)
            self._child.start(job)
            SPARES.refill(isolation, self.limits)  # while this one loads the program
        else:
            self._child = _Child(isolation, self.limits, job)
        self._deadline = self._child.t0 + self.limits.session_wall_s
        self._read = 0
        self._out = self._out_from = (0, 0)
        self._wall = 0.0
        self.loaded = self._next(frozenset({"ready", "load_error", "no_entry"}))
        if self.loaded.kind != "passed":
            self._die(self.loaded.message or "did not load")

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def call(
        self, args: list[Any], *, materialise: int = 0, nudge: tuple[float, Callable[[], None]] | None = None
    ) -> CallResult:
        """One call; its result is plain data, or ``timeout`` / ``error`` (and the session ends).
        ``nudge`` (time, fn): ``fn()`` is called once if the call is still running at that time."""
        got = self._call(args, materialise, nudge, eager=False)
        if isinstance(got, CallResult):
            return got
        return _result(got[0], got[1], self.exact_types, **self._common())

    def call_frame(
        self, args: list[Any], *, materialise: int = 0, nudge: tuple[float, Callable[[], None]] | None = None
    ) -> CallResult | tuple[str, Any]:
        """:meth:`call` for the judge's broker: a ``value`` or ``raised`` result as its frame's
        ``(kind, payload)`` (the payload checked and decoded exactly as for :meth:`call`), without
        building a :class:`CallResult`; anything else as :meth:`call` returns it. What the candidate
        prints is read by a later call or drain (the broker reports the session's whole output), so
        a frame already waiting is read without polling every pipe."""
        return self._call(args, materialise, nudge, eager=True)

    def _call(
        self,
        args: list[Any],
        materialise: int,
        nudge: tuple[float, Callable[[], None]] | None,
        eager: bool,
    ) -> CallResult | tuple[str, Any]:
        if self.dead is not None:
            return CallResult("error", message=f"session ended: {self.dead}")
        self._child.drain()
        if len(self._child.results) != self._read or self._child.exited:
            self._die("data written outside a call")
            return CallResult("error", message="session ended: data written outside a call")
        self.calls += 1
        try:  # one marshal pass when the arguments hold no set or non-str-keyed dict
            data = _frame_out({"args": list(args), "materialise": materialise})
        except ValueError:  # ``portable``'s own path: the tagged form, or its error
            payload, tagged = portable(list(args))
            req = {"args": payload, "materialise": materialise}
            if tagged:
                req["tagged"] = True
            data = _frame_out(req)
        if not self._child.send(data):
            self._child.drain()
        got = self._frame(SESSION_KINDS, nudge, eager)
        if isinstance(got, CallResult) or got[0] != "unplain":
            return got
        return _result(got[0], got[1], self.exact_types, **self._common())

    def covered(self) -> tuple[int, ...]:
        """The candidate's lines run so far in this session (with ``coverage``; else empty)."""
        if self.dead is None:
            self._child.drain()
        return self._child.covered()

    def _next(
        self, allowed: frozenset[str], nudge: tuple[float, Callable[[], None]] | None = None
    ) -> CallResult:
        got = self._frame(allowed, nudge)
        if isinstance(got, CallResult):
            return got
        return _result(got[0], got[1], self.exact_types, **self._common())

    def _common(self) -> dict[str, Any]:
        """The last call's own output (only its part is copied) and wall time."""
        c, (o, e), wall = self._child, self._out_from, self._wall
        out, err = c.bufs[c.out_fd], c.bufs[c.err_fd]
        return {
            "stdout": _text(out[o : self._out[0]]) if self._out[0] > o else "",
            "stderr": _text(err[e : self._out[1]]) if self._out[1] > e else "",
            "wall_s": wall,
        }

    def _frame(
        self,
        allowed: frozenset[str],
        nudge: tuple[float, Callable[[], None]] | None = None,
        eager: bool = False,
    ) -> CallResult | tuple[str, Any]:
        """The next frame's checked ``(kind, payload)`` for a ``value``, ``raised`` or ``unplain``
        frame; a :class:`CallResult` for anything else (and the session ends where it says so)."""
        c = self._child
        t0 = time.monotonic()
        deadline = min(t0 + self.limits.wall_s, self._deadline)
        ok = c.pump(deadline, frame_from=self._read, nudge=nudge, eager=eager)
        self._wall = time.monotonic() - t0
        self._out_from = self._out
        self._out = (len(c.bufs[c.out_fd]), len(c.bufs[c.err_fd]))
        if not ok:
            common = self._common()
            clock = "session" if deadline == self._deadline else "call"
            self._die(f"{clock} wall clock exceeded")
            return CallResult("timeout", message=f"{clock} wall clock exceeded", **common)
        buf = c.results
        if len(buf) - self._read < 8:
            common = self._common()
            if not c.exited and _wait_readable(c.pidfd, 1.0):  # going: let it end by itself
                c._reap()
            c.kill()  # reap it, to tell a CPU limit from a crash
            if c.cpu_exceeded:
                self._die(f"CPU time limit exceeded ({self.limits.cpu_soft_s} s)")
                return CallResult("timeout", message=self.dead or "", **common)
            self._die(f"process ended (status {c.status}) without a result frame")
            return CallResult("error", message=self.dead or "", **common)
        n = int.from_bytes(buf[self._read : self._read + 8], "big")
        body = bytes(buf[self._read + 8 : self._read + 8 + n])
        del buf[: self._read + 8 + n]  # the cap counts per call: the buffer holds one frame at a time
        self._read = 0
        if len(body) < n or n > self.limits.result_cap_bytes:
            common = self._common()
            self._die("torn or oversized result frame")
            return CallResult("error", message=self.dead or "", **common)
        try:
            kind, payload, _ = decode_frame(body, allowed | {"ready"})
        except FrameError as e:
            common = self._common()
            self._die(f"bad result channel: {e}")
            return CallResult("error", message=self.dead or "", **common)
        if kind in SESSION_KINDS:
            return kind, payload
        if kind == "ready":
            if "ready" not in allowed:
                common = self._common()
                self._die("unexpected frame kind 'ready'")
                return CallResult("error", message=self.dead or "", **common)
            return CallResult("passed", **self._common())
        return _result(kind, payload, self.exact_types, **self._common())

    def _die(self, why: str) -> None:
        if self.dead is None:
            self.dead = why
            self._child.finish()

    def close(self) -> None:
        """End the session (the process and everything it started is killed)."""
        self._die("closed")
