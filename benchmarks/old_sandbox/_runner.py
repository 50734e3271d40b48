"""FROZEN COPY (benchmarks only, pre-issue-15). Sandbox runner: executed as ``python -I -S _runner.py`` inside fresh namespaces, one test per process.

Standalone on purpose (stdlib only, nothing from the package, few imports: each one costs start-up
time on every test): it reads one marshalled job from stdin, makes a private /tmp (tmpfs), forks the
candidate's process (rlimits, unprivileged user, empty environment; runs program then test), and
writes one marshalled verdict to the verdict file descriptor. The host owns the wall clock.
"""

import marshal
import os
import resource
import sys
import time

SIGXCPU = 24  # Linux; avoids importing `signal` (and `enum`) on every start
SEP = "\x1f"

CANDIDATE = "candidate.py"
TEST = "<test>"
PRIVATE_DIRS = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock")


def _mount_private_tmp(dirs, hidden=()):
    """Fresh writable tmpfs on each world-writable dir; empty read-only tmpfs over ``hidden`` host
    dirs (checkout, datasets, home dirs), so the candidate can neither leave files nor read them."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    mounts = [(d, 0, b"size=64m,nr_inodes=4096,mode=1777") for d in dirs]
    mounts += [(d, 7, b"size=4k,nr_inodes=16,mode=755") for d in hidden]  # MS_RDONLY|NOSUID|NODEV
    for d, flags, opts in mounts:
        if os.path.isdir(d) and libc.mount(b"tmpfs", d.encode(), b"tmpfs", flags, opts) != 0:
            raise OSError(ctypes.get_errno(), f"mount tmpfs on {d} failed")


def _set_limits(lim):
    R = resource
    pairs = {
        R.RLIMIT_CPU: (lim["cpu_soft_s"], lim["cpu_hard_s"]),
        R.RLIMIT_AS: (lim["address_space_bytes"],) * 2,
        R.RLIMIT_FSIZE: (lim["file_size_bytes"],) * 2,
        R.RLIMIT_NOFILE: (lim["open_files"],) * 2,
        R.RLIMIT_NPROC: (lim["processes"],) * 2,
        R.RLIMIT_CORE: (0, 0),
    }
    for k, v in pairs.items():
        resource.setrlimit(k, v)


def _normalize(x):
    import json  # only io tests pay for it

    return json.loads(json.dumps(x))


def _approx(a, b, rel=1e-6, abs_=1e-9):
    if isinstance(a, bool) or isinstance(b, bool):
        return a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return abs(a - b) <= max(rel * max(abs(a), abs(b)), abs_)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_approx(x, y, rel, abs_) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_approx(a[k], b[k], rel, abs_) for k in a)
    return a == b


def _blame(tb):
    """RE when the exception passed through the candidate's own code, else WA (the test failed)."""
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == CANDIDATE:
            return "RE"
        tb = tb.tb_next
    return "WA"


def _describe(e):
    return f"{type(e).__name__}: {e}"[:500]


def run_job(job):
    """Load the program, then run the test; returns the verdict dict (status AC/WA/RE)."""
    lines = set()
    tracer = None
    if job.get("trace"):

        def tracer(frame, event, arg):
            if frame.f_code.co_filename != CANDIDATE:
                return None
            if event == "line":
                lines.add(frame.f_lineno)
            return tracer

    ns = {"__name__": "__candidate__", "__builtins__": __builtins__}
    t0 = time.perf_counter()
    verdict = {}
    try:
        code = compile(job["program"], CANDIDATE, "exec")
    except BaseException as e:  # CE is decided by the host; this is a safety net
        return {"status": "RE", "message": "compile: " + _describe(e), "runtime_s": 0.0}
    if tracer:
        sys.settrace(tracer)
    try:
        exec(code, ns)
    except BaseException as e:
        sys.settrace(None)
        return {"status": "RE", "message": "loading program: " + _describe(e), "runtime_s": 0.0}
    fn = ns.get(job["entry_point"])
    if not callable(fn):
        sys.settrace(None)
        return {
            "status": "RE",
            "message": f"entry point {job['entry_point']!r} is not defined",
            "runtime_s": 0.0,
        }
    test = job["test"]
    try:
        if test["kind"] == "assert":
            tcode = compile(test["code"], TEST, "exec")
            exec(tcode, ns)
            verdict = {"status": "AC", "message": ""}
        else:
            got = fn(*test["args"])
            sys.settrace(None)
            try:
                got_n = _normalize(got)
            except (TypeError, ValueError) as e:
                got_n = None
                verdict = {"status": "WA", "message": f"output not JSON-serializable: {_describe(e)}"}
            if not verdict:
                same = (
                    _approx(got_n, test["expected"])
                    if test.get("compare") == "approx"
                    else got_n == test["expected"]
                )
                verdict = {
                    "status": "AC" if same else "WA",
                    "message": "" if same else f"got {got_n!r}"[:500],
                }
    except BaseException as e:
        sys.settrace(None)
        verdict = {"status": _blame(e.__traceback__), "message": _describe(e)}
    sys.settrace(None)
    verdict["runtime_s"] = time.perf_counter() - t0
    if job.get("trace"):
        verdict["lines"] = sorted(lines)
    return verdict


def _child(job, uid, w):
    """The candidate's process: limits, unprivileged user, empty environment, then program + test."""
    _set_limits(job["limits"])
    if uid is not None:
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
    os.environ.clear()
    os.environ["PATH"] = job["limits"]["path"]
    verdict = run_job(job)
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BaseException:
        pass
    lines = ",".join(str(x) for x in verdict.get("lines", ()))
    record = SEP.join(
        [verdict["status"], repr(float(verdict.get("runtime_s", 0.0))), lines, verdict["message"]]
    )
    os.write(w, record.encode("utf-8", "replace")[:60000])
    os._exit(0)


def _parse_child(data):
    """The candidate's own report, parsed defensively (it ran untrusted code): None when malformed."""
    try:
        status, runtime, lines, message = data.decode("utf-8", "replace").split(SEP, 3)
        v = {"status": status, "runtime_s": float(runtime), "message": message[:500]}
        if lines:
            v["lines"] = [int(x) for x in lines.split(",")]
    except ValueError:
        return None
    return v if status in ("AC", "WA", "RE") else None


def main():
    """PID 1 of the sandbox (root until the fork): private /tmp, then a child runs the candidate; the
    parent (which the candidate cannot signal or impersonate) reports its verdict and wait status."""
    job = marshal.loads(sys.stdin.buffer.read())
    os.close(0)
    fd = job["verdict_fd"]
    iso = job["isolation"]
    if iso.get("private_tmp"):
        _mount_private_tmp(PRIVATE_DIRS, iso.get("hidden", ()))
        work = "/tmp/sandbox"
        os.mkdir(work, 0o700)
    else:
        work = job["workdir"]
    with open(os.path.join(work, CANDIDATE), "w") as f:
        f.write(job["program"])
    uid = iso.get("uid")
    if uid is not None:
        os.chown(work, uid, uid)
        os.chown(os.path.join(work, CANDIDATE), uid, uid)
    os.chdir(work)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        os.close(fd)
        try:
            _child(job, uid, w)
        finally:
            os._exit(70)
    os.close(w)
    _, status, usage = os.wait4(pid, 0)
    os.set_blocking(r, False)
    try:
        data = os.read(r, 65536)
    except BlockingIOError:
        data = b""
    verdict = _parse_child(data) if data else None
    cpu = usage.ru_utime + usage.ru_stime
    if verdict is None:
        if os.WIFSIGNALED(status) and (os.WTERMSIG(status) == SIGXCPU or cpu >= job["limits"]["cpu_soft_s"]):
            verdict = {"status": "TLE", "message": f"CPU time limit exceeded ({cpu:.1f} s)"}
        elif os.WIFSIGNALED(status):
            verdict = {"status": "RE", "message": f"killed by signal {os.WTERMSIG(status)}"}
        else:
            verdict = {"status": "RE", "message": f"exited with status {os.waitstatus_to_exitcode(status)}"}
        verdict["runtime_s"] = cpu
    verdict["cpu_s"] = cpu
    os.write(fd, marshal.dumps(verdict))
    os._exit(0)


if __name__ == "__main__":
    main()
