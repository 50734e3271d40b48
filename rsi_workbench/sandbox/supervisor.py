"""The supervisor side: start the candidate's process under a plan, feed it a job, keep its clocks,
and read back plain data. It runs no candidate code and trusts nothing the child says beyond
"this is the data": a one-shot result counts only if exactly one well-formed frame arrives and the
child then exits 0 within its wall clock; a session call counts only if exactly one frame arrives
within the call's clock and nothing else was written.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import select
import selectors
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from rsi_workbench.sandbox import cgroup, values
from rsi_workbench.sandbox.frames import FrameError, _frame_out, decode_frame, split_frames
from rsi_workbench.sandbox.plan import (
    PACKAGE_ROOT,
    PROBE_PROGRAM,
    SANDBOX_UID,
    Isolation,
    Limits,
    SandboxUnavailable,
    _layout,
    allow_list,
    bwrap_argv,
    obtain_isolation,
    package_dirs,
    sandbox_interpreters,
    sensitive_paths,
)

CHILD = Path(__file__).with_name("_child.py")
HASH_SEED = "0"  # PYTHONHASHSEED of every sandboxed process: set iteration order is the same in every run
# One thread per numeric library (OpenBLAS, OpenMP, MKL) in every sandboxed process: each thread counts
# against RLIMIT_NPROC (under plan `none`, the count of the whole host user the child runs as, so a
# busy host made numpy's thread start-up fail), CPU limits add up all threads, and a result does not
# depend on the machine's core count. The children keep these (``*_NUM_THREADS``) when they clear
# their environment.
CHILD_ENV = {
    "PYTHONHASHSEED": HASH_SEED,
    "OPENBLAS_NUM_THREADS": "1",
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
}
# what a verdict means; part of execution-cache keys, so a change here invalidates every old cache
SANDBOX_SEMANTICS = (
    "issue31: test code in a judge process; exact types; fixed hash seed; coverage in every run; "
    "one BLAS/OpenMP thread"
)
PY_FLAGS = ["-s", "-S", "-P"]  # not -I: it implies -E, which would ignore PYTHONHASHSEED (the env is ours)
COVERAGE_CAP = 1 << 20
SIGXCPU_EXIT = 128 + int(signal.SIGXCPU)
MAX_DEPTH = 200
log = logging.getLogger("rsi_workbench.sandbox")

Kind = Literal["value", "raised", "failed", "passed", "timeout", "error"]


@dataclass(frozen=True)
class CallResult:
    """What one call produced, as plain data: ``value`` (the returned data), ``raised`` / ``failed``
    (exception type name and message; ``failed`` only for an assert check's own failure),
    ``passed`` (an assert check ran through), ``timeout`` (wall clock or CPU), ``error`` (no valid
    result: crash, several frames, malformed frame, unserialisable result, nonzero exit)."""

    kind: Kind
    value: Any = None
    error: tuple[str, str] | None = None
    message: str = ""
    stdout: str = ""
    stderr: str = ""
    wall_s: float = 0.0
    cpu_s: float = 0.0
    lines: tuple[int, ...] | None = None


# ------------------------------------------------------------------------------------ processes
class _Child:
    """One sandboxed process and its five pipes (job in; stdout, stderr, result frames, coverage out):
    the candidate's (``_child.py``) or a judge's (``source``). With ``job=None`` the process is
    started and waits, before any limit is set, for :meth:`start` to send its job."""

    def __init__(
        self,
        iso: Isolation,
        limits: Limits,
        job: dict[str, Any] | None,
        source: str | None = None,
        workdir: bool = True,
    ):
        self.limits = limits
        self.bwrap = iso.plan == "bwrap"
        self.workdir: str | None = None
        exe = iso.interpreter
        user: int | None = None
        info_r = info_w = -1
        if iso.plan == "bwrap":
            info_r, info_w = os.pipe()  # bwrap reports its PID 1 here: we wait for that to be gone
            argv = bwrap_argv(iso, limits)
            for k, v in CHILD_ENV.items():
                argv += ["--setenv", k, v]
            argv += [exe, *PY_FLAGS, "-c", source or _child_source()]
            argv[1:1] = ["--info-fd", str(info_w)]
            cwd = "/"
            sys_path = [PACKAGE_ROOT] if iso.packages else []
            # as root, start bwrap as an unprivileged host user: a candidate whose host uid is root
            # would be exempt from RLIMIT_NPROC (the kernel never limits root's process count)
            user = SANDBOX_UID if os.geteuid() == 0 else None
        else:
            self.workdir = tempfile.mkdtemp(prefix=f"rsi-sandbox-{os.getpid()}-") if workdir else None
            argv, cwd = [exe, *PY_FLAGS, "-c", source or _child_source()], self.workdir or "/"
            if os.geteuid() == 0 and iso.uid is not None:  # at least not root, even without namespaces
                user = iso.uid
                if self.workdir:
                    os.chown(self.workdir, user, user)
            sys_path = sorted({str(Path(d).parent) for d, _ in package_dirs(iso.packages, exe)})
        setpriv = shutil.which("setpriv", path="/usr/bin:/bin")
        if user is not None and setpriv:  # exec-time switch: Popen(user=...) forbids vfork (slow)
            argv = [setpriv, "--reuid", str(user), "--regid", str(user), "--clear-groups", *argv]
            user = None
        r, w = os.pipe()
        cov_r, cov_w = os.pipe()
        self.t0 = time.monotonic()
        try:
            self.proc = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                pass_fds=(w, cov_w) if info_w < 0 else (w, cov_w, info_w),
                env={"PATH": limits.path, **CHILD_ENV},
                cwd=cwd,
                start_new_session=True,
                user=user,
                group=user,
                extra_groups=[] if user is not None else None,
            )
            self.cgroup = cgroup.attach(self.proc.pid, iso, limits)  # before the job is sent
        except BaseException:
            for fd in (r, w, cov_r, cov_w, info_r, info_w):
                if fd >= 0:
                    os.close(fd)
            self._rmdir()
            raise
        os.close(w)
        os.close(cov_w)
        if info_w >= 0:
            os.close(info_w)
        assert self.proc.stdin and self.proc.stdout and self.proc.stderr
        self.result_fd = r
        self.out_fd, self.err_fd = self.proc.stdout.fileno(), self.proc.stderr.fileno()
        self.caps = {
            self.out_fd: limits.output_cap_bytes,
            self.err_fd: limits.output_cap_bytes,
            r: limits.result_cap_bytes + 9,  # one frame's header and body, and a byte to tell "too long"
            cov_r: COVERAGE_CAP,
        }
        self.cov_fd = cov_r
        self.info_fd = info_r
        self.ns_pidfd: int | None = None
        self.ns_pid: int | None = None  # the sandbox's PID 1 (bwrap's init), as the host numbers it
        if info_r >= 0:
            self.caps[info_r] = 4096
        self.bufs = {fd: bytearray() for fd in self.caps}
        self.open = set(self.caps)
        self.in_fd = self.proc.stdin.fileno()  # written with os.write: no buffer, one syscall a frame
        self.ep = select.epoll()
        for fd in self.caps:
            os.set_blocking(fd, False)
            self.ep.register(fd, select.EPOLLIN)
        self.pidfd = os.pidfd_open(self.proc.pid)
        self.ep.register(self.pidfd, select.EPOLLIN)
        self.exited = False
        self.status: int | None = None
        self.cpu_s = 0.0
        self._job = {"result_fd": w, "cov_fd": cov_w, "limits": asdict(limits), "sys_path": sys_path}
        if job is not None:
            self.start(job)

    def start(self, job: dict[str, Any]) -> None:
        """Send the job (once): the child sets its limits and loads it."""
        if not self._job:
            raise RuntimeError("job already sent")
        full, self._job = {**job, **self._job}, {}
        self.send(_frame_out(full))

    def send(self, data: bytes) -> bool:
        if self.in_fd < 0:  # stdin closed: the descriptor's number may name another file by now
            return False
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(self.in_fd, view) :]
            return True
        except OSError:  # the child died before reading: reported from its exit
            return False

    def close_stdin(self) -> None:
        self.in_fd = -1
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
        except OSError:
            pass

    @property
    def stdout(self) -> bytes:
        return bytes(self.bufs[self.out_fd])

    @property
    def stderr(self) -> bytes:
        return bytes(self.bufs[self.err_fd])

    @property
    def results(self) -> bytearray:
        return self.bufs[self.result_fd]

    def covered(self) -> tuple[int, ...]:
        """The candidate lines reported on the coverage pipe so far (a torn tail is dropped)."""
        b = self.bufs[self.cov_fd]
        return tuple(sorted({int.from_bytes(b[i : i + 4], "big") for i in range(0, len(b) - 3, 4)}))

    def pump(
        self,
        deadline: float,
        frame_from: int | None = None,
        nudge: tuple[float, Callable[[], None]] | None = None,
        eager: bool = False,
    ) -> bool:
        """Read until every pipe is closed and the child has exited (or, with ``frame_from``, until
        a complete frame starts there); False when the deadline passed first. ``nudge`` (time, fn):
        if still waiting at that time, ``fn()`` is called once and the wait goes on to ``deadline``.
        ``eager`` (with ``frame_from``): the first time it would wait, it first reads the result pipe
        itself (one system call instead of two when the frame is already there, as it is when the
        processes share a CPU); the other pipes are read on the next wait or drain."""
        results, cap = self.bufs[self.result_fd], self.caps[self.result_fd]
        eager = eager and frame_from is not None
        while True:
            if frame_from is not None:
                if _complete(results, frame_from):
                    return True
                if self.exited or self.result_fd not in self.open:
                    return True
                if len(results) >= cap:
                    return True  # the buffer is full: the frame is over the cap (the caller sees it torn)
            elif not self.open and self.exited:
                return True
            now = time.monotonic()
            left = deadline - now
            if left <= 0:
                return False
            if nudge is not None:
                if now >= nudge[0]:
                    nudge[1]()
                    nudge = None
                else:
                    left = min(left, nudge[0] - now)
            if eager:  # the result pipe is open here (checked above)
                eager = False
                try:
                    chunk = os.read(self.result_fd, 65536)
                except BlockingIOError:
                    pass
                else:
                    self._add(self.result_fd, chunk)
                    continue
            self._service(self.ep.poll(left))

    def drain(self) -> None:
        """Read whatever is already waiting, without blocking."""
        while not self.exited or self.open:
            events = self.ep.poll(0)
            if not events:
                return
            self._service(events)

    def _service(self, events: list[tuple[int, int]]) -> None:
        for fd, _ in events:
            if fd == self.pidfd:
                self._reap()
                continue
            try:
                chunk = os.read(fd, 65536)
            except BlockingIOError:
                continue
            self._add(fd, chunk)
            if fd == self.info_fd and self.ns_pidfd is None:
                self._watch_namespace()

    def _add(self, fd: int, chunk: bytes) -> None:
        if not chunk:
            self.ep.unregister(fd)
            self.open.discard(fd)
        elif len(self.bufs[fd]) < self.caps[fd]:
            self.bufs[fd] += chunk[: self.caps[fd] - len(self.bufs[fd])]

    def _watch_namespace(self) -> None:
        try:
            pid = int(json.loads(bytes(self.bufs[self.info_fd]))["child-pid"])
            self.ns_pidfd = os.pidfd_open(pid)
            self.ns_pid = pid
        except (ValueError, KeyError, TypeError, OSError):
            pass

    def wait_namespace(self, timeout: float = 10.0) -> None:
        """Return once the sandbox's PID 1 has exited, i.e. every process in its namespace is gone
        (bwrap itself may exit a moment before)."""
        if self.ns_pidfd is not None:
            _wait_readable(self.ns_pidfd, timeout)

    def _reap(self) -> None:
        if self.exited:
            return
        _, status, usage = os.wait4(self.proc.pid, 0)
        self.proc.returncode = os.waitstatus_to_exitcode(status)
        self.status = self.proc.returncode
        self.cpu_s = usage.ru_utime + usage.ru_stime
        self.exited = True
        self.ep.unregister(self.pidfd)

    def kill(self) -> None:
        """SIGKILL the process group; under bwrap the sandbox's init dies with it (``--die-with-parent``)
        and the kernel then kills everything in the PID namespace."""
        if self.exited:
            return
        children = _children(self.proc.pid)
        for child in children:  # the sandbox's PID 1: the kernel then kills its namespace
            try:
                os.kill(child, signal.SIGKILL)
            except ProcessLookupError:
                pass
        # bwrap exits only once its PID 1 is reaped, i.e. once every process in the namespace is gone;
        # without bwrap (plan none) the process is the candidate itself and nothing would end it: no wait
        if self.bwrap and children and _wait_readable(self.pidfd, 10.0):
            self._reap()
            return
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self._reap()

    def finish(self) -> None:
        self.kill()
        self.wait_namespace()
        self.ep.close()
        self.in_fd = -1
        os.close(self.pidfd)
        for fd in (self.info_fd, self.ns_pidfd):
            if fd is not None and fd >= 0:
                os.close(fd)
        for f in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            try:
                f.close()  # type: ignore[union-attr]
            except OSError:
                pass
        os.close(self.result_fd)
        os.close(self.cov_fd)
        self.oom_kills = cgroup.release(self.cgroup)  # the child is reaped: remove its group
        self._rmdir()

    def _rmdir(self) -> None:
        if self.workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)
            self.workdir = None

    @property
    def cpu_exceeded(self) -> bool:
        return (
            self.status == SIGXCPU_EXIT
            or self.status == -signal.SIGXCPU
            or self.cpu_s >= self.limits.cpu_soft_s
        )


@functools.cache
def _child_source() -> str:
    """The child's code, passed with ``-c``: nothing of the checkout needs to be visible inside."""
    return CHILD.read_text()


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children", "rb") as f:
            return [int(x) for x in f.read().split()]
    except (OSError, ValueError):
        return []


def _wait_readable(fd: int, timeout: float) -> bool:
    with selectors.DefaultSelector() as sel:
        sel.register(fd, selectors.EVENT_READ)
        return bool(sel.select(timeout))


def _complete(buf: bytearray, at: int) -> bool:
    if len(buf) - at < 8:
        return False
    return len(buf) - at - 8 >= int.from_bytes(buf[at : at + 8], "big")


def _text(b: bytes | bytearray) -> str:
    return b.decode("utf-8", errors="replace")


ONE_SHOT_KINDS = frozenset({"value", "raised", "unplain", "load_error", "no_entry"})
ASSERT_KINDS = frozenset({"passed", "failed", "raised", "load_error", "no_entry"})


def _result(kind: str, payload: Any, exact: bool = False, **common: Any) -> CallResult:
    """The call's result; ``exact`` keeps tuples, sets, bytes, complex and non-str dict keys (see
    :mod:`rsi_workbench.sandbox.values`), otherwise tuples arrive as lists and the rest is an error."""
    if kind == "value":
        if not exact:
            try:
                payload = values.loosen(payload)
            except values.ValueFormatError as e:
                msg = f"unserialisable result: {e} (without exact types)"
                return CallResult("error", message=msg, **common)
        return CallResult("value", value=payload, **common)
    if kind in ("raised", "failed"):
        return CallResult(
            "raised" if kind == "raised" else "failed",
            error=(payload[0], payload[1]),
            message=f"{payload[0]}: {payload[1]}"[:500],
            **common,
        )
    if kind == "passed":
        return CallResult("passed", **common)
    if kind == "load_error":
        return CallResult(
            "raised",
            error=(payload[0], payload[1]),
            message=f"loading program: {payload[0]}: {payload[1]}"[:500],
            **common,
        )
    if kind == "unplain":
        return CallResult("error", message=f"unserialisable result: {payload}", **common)
    return CallResult("error", message=f"entry point {payload!r} is not defined", **common)


def run_once(
    iso: Isolation,
    limits: Limits,
    job: dict[str, Any],
    allowed: frozenset[str],
    *,
    trace: bool = False,
    exact: bool = False,
) -> CallResult:
    """Run one job in a fresh process and judge the *channel* (never the answer). Coverage is
    collected in every run; ``trace`` only decides whether the result carries it."""
    child = _Child(iso, limits, job)
    try:
        child.close_stdin()
        done = child.pump(child.t0 + limits.wall_s)
        if not done:
            child.kill()
        wall = time.monotonic() - child.t0
    finally:
        child.finish()
    common: dict[str, Any] = {
        "stdout": _text(child.stdout),
        "stderr": _text(child.stderr),
        "wall_s": wall,
        "cpu_s": child.cpu_s,
    }
    if not done:
        return CallResult("timeout", message=f"wall clock {limits.wall_s:g} s exceeded", **common)
    if child.cpu_exceeded:
        return CallResult("timeout", message=f"CPU time limit exceeded ({limits.cpu_soft_s} s)", **common)
    if child.oom_kills:
        return CallResult("error", message=cgroup.memory_message(child.oom_kills, limits), **common)
    data = bytes(child.results)
    if len(data) > limits.result_cap_bytes + 8:
        return CallResult("error", message="result frame larger than the cap", **common)
    try:
        frames = split_frames(data)
        if len(frames) != 1:
            return CallResult(
                "error",
                message=f"process exited with status {child.status} with {len(frames)} result frames (need exactly 1)",
                **common,
            )
        kind, payload, _ = decode_frame(frames[0], allowed)
    except FrameError as e:
        return CallResult("error", message=f"bad result channel: {e}", **common)
    if child.status != 0:
        return CallResult(
            "error", message=f"process exited with status {child.status} after its result", **common
        )
    return _result(kind, payload, exact, lines=child.covered() if trace else None, **common)


# ------------------------------------------------------------------------------------ probing
def _plan(kind: str, interpreter: str, packages: tuple[str, ...]) -> Isolation:
    exe = _layout(interpreter)["exe"]
    if kind == "bwrap":
        binds, masks = allow_list(interpreter, packages)
        return Isolation(
            plan="bwrap",
            interpreter=exe,
            uid=SANDBOX_UID,
            binds=tuple(binds),
            masks=tuple(masks),
            packages=packages,
        )
    return Isolation(
        plan="none", interpreter=exe, packages=packages, uid=SANDBOX_UID if os.geteuid() == 0 else None
    )


@functools.cache
def probe_isolation(packages: tuple[str, ...] = ()) -> Isolation:
    """Find, once per process, the strongest plan this host allows, and prove from inside what it
    achieves (network, PID namespace, private /tmp, uid, capabilities, hidden host paths)."""
    notes = []
    kinds = ["bwrap", "none"] if shutil.which("bwrap", path="/usr/bin:/bin") else ["none"]
    if kinds == ["none"]:
        notes.append("bwrap not found (install Debian's bubblewrap: make sysdeps)")
    paths = sensitive_paths()
    tries = [(k, i) for k in kinds for i in sandbox_interpreters()]
    for kind, interp in tries:
        try:
            iso = _plan(kind, interp, packages)
        except (ValueError, OSError, subprocess.SubprocessError) as e:
            notes.append(f"{kind} with {interp}: {e}")
            continue
        keep = [dst for _, dst in iso.binds]
        job = {"program": PROBE_PROGRAM, "entry": "probe", "args": [paths, keep]}
        try:
            res = run_once(iso, Limits(wall_s=20.0), job, ONE_SHOT_KINDS)
        except OSError as e:
            notes.append(f"{kind}: {e}")
            continue
        if res.kind != "value" or type(res.value) is not dict:
            notes.append(f"{kind} failed: {res.message} {res.stderr.strip()[:300]}")
            continue
        f = res.value
        sandboxed = kind == "bwrap"
        if f.get("visible"):
            notes.append(f"visible from inside: {f['visible'][:5]}")
        return Isolation(
            network_namespace=f.get("ifaces") in ([], ["lo"]),
            pid_namespace=sandboxed and f.get("ppid") == 1 and f.get("pid", 99) < 10,
            private_tmp=sandboxed and bool(f.get("tmp_private")),
            unprivileged_user=f.get("uid") != 0,
            hiding=sandboxed and not f.get("visible"),
            cannot_undo=sandboxed
            and bool(f.get("caps_zero") and f.get("umount_refused") and f.get("userns_refused")),
            dies_with_supervisor=sandboxed,
            plan=kind,
            interpreter=iso.interpreter,
            uid=iso.uid,
            binds=iso.binds,
            masks=iso.masks,
            packages=packages,
            notes="; ".join(notes),
            memory_limit=cgroup.memory_mode(),
        )
    raise SandboxUnavailable("the sandbox child could not start at all: " + "; ".join(notes))


def check_mode(iso: Isolation, mode: str) -> None:
    """A thin caller of :func:`~rsi_workbench.sandbox.plan.obtain_isolation` for an already probed plan:
    the stricter of ``mode`` and ``RSI_WORKBENCH_SANDBOX_MODE`` refuses or warns (every time)."""
    obtain_isolation(mode=mode, purpose="sandbox", isolation=iso)
