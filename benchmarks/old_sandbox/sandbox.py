"""FROZEN COPY (benchmarks only, pre-issue-15). Sandbox executor (E0 evidence): every test of a candidate runs in a fresh ``python -I`` under
rlimits, in fresh network / PID / mount namespaces, as an unprivileged user, with a wall clock.

Outcomes are the five statuses the world model's readout predicts (paper, "对照四"): ``AC`` passed,
``WA`` the test's own check failed, ``TLE`` wall clock or CPU limit, ``RE`` the candidate raised or
the process died, ``CE`` the program does not compile (every test CE, nothing runs). The isolation
actually achieved is probed once per process and recorded with every execution; ``required`` mode
refuses to run without full isolation, ``best_effort`` runs with what the kernel allows.
"""

from __future__ import annotations

import functools
import marshal
import os
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any, Literal

RUNNER = Path(__file__).with_name("_runner.py")
NOBODY_UID = 65534
MODE_ENV = "RSI_WORKBENCH_SANDBOX_MODE"
SandboxMode = Literal["required", "best_effort"]


class Status(StrEnum):
    """The five execution outcomes, in the order of the world model's readout logits."""

    AC = "AC"
    WA = "WA"
    TLE = "TLE"
    RE = "RE"
    CE = "CE"


STATUSES: tuple[Status, ...] = tuple(Status)


class SandboxUnavailable(RuntimeError):
    """``required`` mode was asked for but the kernel or host does not allow full isolation."""


@dataclass(frozen=True)
class SandboxLimits:
    """Per-test resource limits; defaults are the paper's sandbox (CPU 10/11 s, 1 GiB, 1 MiB, 64 fds, 3 s)."""

    cpu_soft_s: int = 10
    cpu_hard_s: int = 11
    address_space_bytes: int = 1 << 30
    file_size_bytes: int = 1 << 20
    open_files: int = 64
    processes: int = 64
    wall_s: float = 3.0
    path: str = "/usr/bin:/bin"
    output_cap_bytes: int = 16 * 1024

    def __post_init__(self) -> None:
        if self.cpu_soft_s > self.cpu_hard_s:
            raise ValueError("SandboxLimits: cpu_soft_s must be <= cpu_hard_s")
        if self.wall_s <= 0:
            raise ValueError("SandboxLimits: wall_s must be > 0")


@dataclass(frozen=True)
class Isolation:
    """What the probe achieved on this host (recorded with every execution)."""

    network_namespace: bool = False
    pid_namespace: bool = False
    private_tmp: bool = False
    unprivileged_user: bool = False
    rlimits: bool = True
    unshare: tuple[str, ...] = ()
    interpreter: str = sys.executable
    uid: int | None = None
    hidden_paths: tuple[str, ...] = ()
    notes: str = ""

    @property
    def complete(self) -> bool:
        """All of: no network, every descendant killable, private /tmp, not running as root."""
        return self.network_namespace and self.pid_namespace and self.private_tmp and self.unprivileged_user

    def record(self) -> dict[str, Any]:
        return {
            "network_namespace": self.network_namespace,
            "pid_namespace": self.pid_namespace,
            "private_tmp": self.private_tmp,
            "unprivileged_user": self.unprivileged_user,
            "rlimits": self.rlimits,
            "hidden_host_paths": bool(self.hidden_paths),
            "complete": self.complete,
        }


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


# ------------------------------------------------------------------------------------- spawning
def _test_dict(test: Any) -> dict[str, Any]:
    if hasattr(test, "model_dump"):
        return dict(test.model_dump(mode="json"))
    if isinstance(test, Mapping):
        return dict(test)
    raise TypeError(f"a test must be a TestCase or a dict, got {type(test).__name__}")


def _limits_dict(limits: SandboxLimits) -> dict[str, Any]:
    return asdict(limits)


@dataclass
class _Raw:
    verdict: dict[str, Any] | None
    stdout: bytes
    stderr: bytes
    timed_out: bool
    returncode: int | None
    wall_s: float


def _spawn(iso: Isolation, limits: SandboxLimits, job: dict[str, Any]) -> _Raw:
    """Start the runner under the chosen namespaces, feed it the job, drain output, enforce the wall clock."""
    workdir = None
    if not iso.private_tmp:
        workdir = tempfile.mkdtemp(prefix="rsi-sandbox-")
        if iso.uid is not None:
            os.chown(workdir, iso.uid, iso.uid)
        job = {**job, "workdir": workdir}
    cmd = [*iso.unshare, iso.interpreter, "-I", "-S", str(RUNNER)]
    r, w = os.pipe()
    t0 = time.monotonic()
    try:
        proc = subprocess.Popen(
            cmd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            pass_fds=(w,),
            env={"PATH": limits.path},
            cwd="/",
            start_new_session=True,
        )
    except BaseException:
        os.close(r)
        os.close(w)
        if workdir:
            shutil.rmtree(workdir, ignore_errors=True)
        raise
    os.close(w)
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    payload = marshal.dumps({**job, "verdict_fd": w, "limits": _limits_dict(limits)})
    out_fd, err_fd = proc.stdout.fileno(), proc.stderr.fileno()
    caps = {out_fd: limits.output_cap_bytes, err_fd: limits.output_cap_bytes, r: 1 << 20}
    bufs = {fd: bytearray() for fd in caps}
    timed_out = False
    rc: int | None = None
    sel = selectors.DefaultSelector()
    try:
        try:
            proc.stdin.write(payload)
            proc.stdin.close()
        except OSError:  # the runner died before reading its job: reported as RE below
            pass
        for fd in caps:
            os.set_blocking(fd, False)
            sel.register(fd, selectors.EVENT_READ)
        deadline = t0 + limits.wall_s
        open_fds = set(caps)
        while open_fds:
            left = deadline - time.monotonic()
            if left <= 0:
                timed_out = True
                break
            for key, _ in sel.select(timeout=left):
                fd = int(key.fd)  # type: ignore[call-overload]
                try:
                    chunk = os.read(fd, 65536)
                except BlockingIOError:
                    continue
                if not chunk:
                    sel.unregister(fd)
                    open_fds.discard(fd)
                elif len(bufs[fd]) < caps[fd]:
                    bufs[fd] += chunk[: caps[fd] - len(bufs[fd])]
        if timed_out:
            _kill_group(proc)
        try:
            rc = proc.wait(timeout=max(0.0, deadline - time.monotonic()) + 1.0)
        except subprocess.TimeoutExpired:  # pipes closed but the runner lingers: the clock ran out
            timed_out = True
            _kill_group(proc)
            rc = proc.wait()
    finally:
        sel.close()
        wall = time.monotonic() - t0
        if proc.poll() is None:
            _kill_group(proc)
            proc.wait()
        proc.stdout.close()
        proc.stderr.close()
        os.close(r)
        if workdir:
            shutil.rmtree(workdir, ignore_errors=True)
    verdict = None
    if bufs[r] and not timed_out:
        try:
            v = marshal.loads(bytes(bufs[r]))
            verdict = v if isinstance(v, dict) and v.get("status") in ("AC", "WA", "RE", "TLE") else None
        except (ValueError, EOFError, TypeError):
            verdict = None
    return _Raw(verdict, bytes(bufs[out_fd]), bytes(bufs[err_fd]), timed_out, rc, wall)


def _children(pid: int) -> list[int]:
    try:
        return [int(x) for x in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except (OSError, ValueError):
        return []


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """Kill everything the test started. The runner is PID 1 of its namespace: SIGKILL it first, so
    the kernel kills every process in the namespace (however detached) and ``unshare`` reaps it
    only after they are gone; then SIGKILL the process group (covers hosts without a PID namespace)."""
    for child in _children(proc.pid):
        try:
            os.kill(child, signal.SIGKILL)
        except ProcessLookupError:
            pass
    try:  # unshare reaps its child only after the kernel has killed the whole namespace
        proc.wait(timeout=10.0)
    except subprocess.TimeoutExpired:
        pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _decode(b: bytes) -> str:
    return b.decode("utf-8", errors="replace")


def _outcome(test_id: str, raw: _Raw, iso: Isolation, limits: SandboxLimits) -> TestOutcome:
    """Map a raw execution to exactly one of the five statuses."""
    v = raw.verdict
    common: dict[str, Any] = {
        "stdout": _decode(raw.stdout),
        "stderr": _decode(raw.stderr),
        "isolation": iso.record(),
    }
    if raw.timed_out:
        return TestOutcome(
            test_id, Status.TLE, raw.wall_s, message=f"wall clock {limits.wall_s:g} s exceeded", **common
        )
    if v is not None:
        lines = tuple(v["lines"]) if "lines" in v else None
        return TestOutcome(
            test_id,
            Status(v["status"]),
            float(v.get("runtime_s", raw.wall_s)),
            message=str(v.get("message", "")),
            covered_lines=lines,
            **common,
        )
    return TestOutcome(
        test_id,
        Status.RE,
        raw.wall_s,
        message=f"process exited with status {raw.returncode} without a verdict",
        **common,
    )


# ------------------------------------------------------------------------------------- probing
_PROBE_PROGRAM = """
import os, socket
def probe():
    import hashlib, fractions, heapq, statistics, decimal  # stdlib must be readable after the drop
    names = [n for _, n in socket.if_nameindex()]
    tmp_private = os.path.ismount("/tmp")
    return {"pid": os.getpid(), "ppid": os.getppid(), "uid": os.getuid(), "ifaces": names, "tmp_private": tmp_private,
            "env": sorted(os.environ)}
"""


def _probe_once(
    unshare: tuple[str, ...],
    interpreter: str,
    private_tmp: bool,
    uid: int | None,
    hidden: tuple[str, ...] = (),
) -> dict | None:
    iso = Isolation(unshare=unshare, interpreter=interpreter, private_tmp=private_tmp, uid=uid)
    job = {
        "program": _PROBE_PROGRAM,
        "entry_point": "probe",
        "test": {"id": "probe", "kind": "io", "args": [], "expected": None, "compare": "exact"},
        "isolation": {"private_tmp": private_tmp, "uid": uid, "hidden": list(hidden)},
    }
    try:
        raw = _spawn(iso, SandboxLimits(wall_s=10.0), job)
    except OSError:
        return None
    if raw.verdict is None or raw.verdict.get("status") != "WA":
        return None
    msg = str(raw.verdict.get("message", ""))
    if not msg.startswith("got "):
        return None
    import ast

    try:
        facts = ast.literal_eval(msg[4:])
    except (ValueError, SyntaxError):
        return None
    return facts if isinstance(facts, dict) else None


def hidden_host_paths(interpreter: str) -> tuple[str, ...]:
    """Host dirs to cover with an empty read-only tmpfs: this checkout, the dataset mirror and cache,
    home and project dirs; never a dir holding the sandbox interpreter (its stdlib must stay)."""
    pkg_root = Path(__file__).resolve().parents[3]
    cands = {"/home", "/root", "/work", "/mnt", "/media", "/opt", "/srv", str(pkg_root)}
    cands |= {os.environ.get("RSI_WORKBENCH_DATA", ""), str(Path.home() / ".cache")}
    interp = os.path.realpath(interpreter)
    keep = []
    for d in sorted(c for c in cands if c and os.path.isdir(c)):
        real = os.path.realpath(d)
        if real == "/" or interp.startswith(real.rstrip("/") + "/") or real.startswith("/usr"):
            continue
        keep.append(real)
    # drop dirs already covered by a hidden parent
    return tuple(d for d in keep if not any(d != p and d.startswith(p.rstrip("/") + "/") for p in keep))


def _interpreters() -> list[str]:
    out = [sys.executable]
    for p in ("/usr/bin/python3", "/usr/local/bin/python3"):
        if os.path.exists(p) and os.path.realpath(p) != os.path.realpath(sys.executable):
            out.append(p)
    return out


@functools.cache
def probe_isolation() -> Isolation:
    """Find, once per process, the strongest isolation this host allows (tried strongest first)."""
    unshare = shutil.which("unshare", path="/usr/bin:/bin")
    root = os.geteuid() == 0
    ns_flags = ["--net", "--pid", "--fork", "--kill-child", "--mount-proc"]
    plans: list[tuple[tuple[str, ...], bool, int | None]] = []
    if unshare:
        if root:
            plans.append(((unshare, *ns_flags), True, NOBODY_UID))
        plans.append(((unshare, "--user", "--map-root-user", *ns_flags), True, None))
        plans.append(((unshare, "--user", "--map-root-user", "--net"), False, None))
    plans.append(((), False, NOBODY_UID if root else None))
    notes = []
    for flags, private_tmp, uid in plans:
        for interp in _interpreters():
            hidden = hidden_host_paths(interp) if private_tmp else ()
            facts = _probe_once(flags, interp, private_tmp, uid, hidden)
            if facts is None and hidden:  # hiding host dirs broke something: try without it
                notes.append(f"hiding {list(hidden)} failed with {interp}")
                hidden = ()
                facts = _probe_once(flags, interp, private_tmp, uid)
            if facts is None:
                notes.append(f"failed: {' '.join(flags) or '(no unshare)'} with {interp}")
                continue
            return Isolation(
                network_namespace=facts.get("ifaces") in ([], ["lo"]),
                pid_namespace=facts.get("ppid") == 1,  # the runner is PID 1 of its namespace
                private_tmp=private_tmp and bool(facts.get("tmp_private")),
                unprivileged_user=(uid is not None and facts.get("uid") == uid) or not root,
                unshare=flags,
                interpreter=interp,
                uid=uid,
                hidden_paths=hidden,
                notes="; ".join(notes),
            )
    raise SandboxUnavailable("the sandbox runner could not start at all: " + "; ".join(notes))


def default_mode() -> SandboxMode:
    """``RSI_WORKBENCH_SANDBOX_MODE`` (CI sets ``required``), else ``best_effort``."""
    mode = os.environ.get(MODE_ENV, "best_effort") or "best_effort"
    if mode not in ("required", "best_effort"):
        raise ValueError(f"{MODE_ENV}={mode!r}: allowed values are 'required', 'best_effort'")
    return mode  # type: ignore[return-value]


# ------------------------------------------------------------------------------------- the sandbox
class Sandbox:
    """Runs tests of candidate programs, one fresh interpreter per test; picklable for process pools."""

    def __init__(self, mode: SandboxMode | None = None, limits: SandboxLimits | None = None):
        self.mode: SandboxMode = mode or default_mode()
        if self.mode not in ("required", "best_effort"):
            raise ValueError(f"Sandbox mode {self.mode!r}: allowed values are 'required', 'best_effort'")
        self.limits = limits or SandboxLimits()
        self.isolation = probe_isolation()
        if self.mode == "required" and not self.isolation.complete:
            missing = [k for k, v in self.isolation.record().items() if not v and k != "complete"]
            raise SandboxUnavailable(
                f"sandbox mode 'required' but this host cannot provide: {', '.join(missing)} "
                f"(unshare: {' '.join(self.isolation.unshare) or 'unavailable'}; {self.isolation.notes}). "
                f"Run as root with util-linux `unshare`, or set {MODE_ENV}=best_effort to run with the "
                "isolation recorded per execution."
            )

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
        job = {
            "program": program,
            "entry_point": entry_point,
            "test": t,
            "trace": trace,
            "isolation": {
                "private_tmp": self.isolation.private_tmp,
                "uid": self.isolation.uid,
                "hidden": list(self.isolation.hidden_paths),
            },
        }
        return _outcome(
            str(t.get("id")), _spawn(self.isolation, self.limits, job), self.isolation, self.limits
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
        if jobs:
            if executor is None:
                outs: Iterable[TestOutcome] = (_run_one(a) for _, _, a in jobs)
            else:
                outs = executor.map(_run_one, [a for _, _, a in jobs])
            for (i, j, _), o in zip(jobs, outs):
                results[i][j] = o
        return [[o for o in row if o is not None] for row in results]

    def run_batch(
        self, items: Sequence[tuple[str, Any, str]], executor: Any = None, *, trace: bool = False
    ) -> list[TestOutcome]:
        """Run heterogeneous ``(program, test, entry_point)`` items (any tasks), fanned out together."""
        args = [(self, prog, _test_dict(test), ep, trace) for prog, test, ep in items]
        if executor is None:
            return [_run_one(a) for a in args]
        return list(executor.map(_run_one, args))


def _run_one(args: tuple[Sandbox, str, dict[str, Any], str, bool]) -> TestOutcome:
    sb, program, test, entry_point, trace = args
    return sb.run_test(program, test, entry_point, trace=trace)


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
    "pass_count",
    "probe_isolation",
]
