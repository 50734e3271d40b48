"""Inside the sandbox: ``python -s -S -P -c <this file>`` (``PYTHONHASHSEED`` fixed by the host),
the candidate's own process (stdlib only, few imports).

It reads one marshalled job from stdin, sets its rlimits, loads the program and answers calls. It
holds no expected value, no test code and decides no verdict: it reports plain data only, as exactly
one length-prefixed frame per call on the result descriptor (a one-shot job then exits 0), and the
candidate's covered lines on the coverage descriptor. Everything here runs in the same process as
untrusted code, so the host trusts nothing it says beyond "this is the data".
"""

import marshal
import os
import resource
import sys

CANDIDATE = "candidate.py"
PLAIN_DEPTH = 100
INF = float("inf")
JOB: dict = {}


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


class Unplain(Exception):
    pass


def plain(x, depth=0):
    """The value as JSON-ready data: exact built-in types only (no subclass survives), with the
    tagged forms of :mod:`rsi_workbench.sandbox.values`: dicts ``{"$d": ...}`` (str keys) or
    ``{"$m": [[k, v], ...]}``, tuples ``$t``, sets ``$s``, frozensets ``$z``, bytes ``$b``, complex
    ``$c``, non-finite floats ``$f``."""
    if depth > PLAIN_DEPTH:
        raise Unplain("nested too deeply")
    t = type(x)
    if x is None or t is bool or t is int or t is str:
        return x
    d = depth + 1
    if t is float:
        if x != x:
            return {"$f": "nan"}
        if x in (float("inf"), float("-inf")):
            return {"$f": "inf" if x > 0 else "-inf"}
        return x
    if t is list:
        return [plain(v, d) for v in x]
    if t is tuple:
        return {"$t": [plain(v, d) for v in x]}
    if t is dict:
        items = list(dict.items(x))
        if all(type(k) is str for k, _ in items):
            return {"$d": {k: plain(v, d) for k, v in items}}
        return {"$m": [[plain(k, d), plain(v, d)] for k, v in items]}
    if t is set or t is frozenset:
        return {"$s" if t is set else "$z": [plain(v, d) for v in x]}
    if t is bytes:
        return {"$b": x.hex()}
    if t is complex:
        return {"$c": [plain(x.real, d), plain(x.imag, d)]}
    raise Unplain("value of type " + t.__name__)


def _dump(x, out):
    """JSON for the already-plain payload, without importing ``json`` (and ``re``: ~15 ms a start)."""
    from _json import encode_basestring_ascii as enc

    t = type(x)
    if x is None:
        out.append("null")
    elif t is bool:
        out.append("true" if x else "false")
    elif t is int:
        out.append(int.__repr__(x))
    elif t is float:
        out.append(float.__repr__(x))  # finite: non-finite floats were tagged by ``plain``
    elif t is str:
        out.append(enc(x))
    elif t is list:
        out.append("[")
        for i, v in enumerate(x):
            if i:
                out.append(",")
            _dump(v, out)
        out.append("]")
    elif t is dict:
        out.append("{")
        for i, (k, v) in enumerate(x.items()):
            if i:
                out.append(",")
            out.append(enc(k))
            out.append(":")
            _dump(v, out)
        out.append("}")
    else:
        raise Unplain("value of type " + t.__name__)


def _frame(payload):
    out = []
    _dump(payload, out)
    body = "".join(out).encode("ascii")
    return len(body).to_bytes(8, "big") + body


def _send(payload):
    try:  # what the program printed comes before its result (a session's process is killed, not exited)
        sys.stdout.flush()
        sys.stderr.flush()
    except BaseException:
        pass
    try:
        data = _scalar_frame(payload) or _frame(payload)
    except BaseException as e:  # e.g. an int too long to print: still exactly one frame
        data = _frame({"unplain": str(e)[:200]})
    while data:
        n = os.write(JOB["result_fd"], data)
        data = data[n:]


def _scalar_frame(payload):
    """``_frame(payload)`` in one step for the common ``{"value": v}``, ``v`` None, a bool, an int, a
    finite float or a str (the coverage tracer slows every Python frame here); None otherwise."""
    if type(payload) is not dict or len(payload) != 1 or "value" not in payload:
        return None
    v = payload["value"]
    t = type(v)
    if t is int:
        try:
            s = int.__repr__(v)
        except ValueError:  # too many digits: the general path says so
            return None
    elif t is str:
        from _json import encode_basestring_ascii as enc

        s = enc(v)
    elif v is None:
        s = "null"
    elif t is bool:
        s = "true" if v else "false"
    elif t is float and -INF < v < INF:
        s = float.__repr__(v)
    else:
        return None
    body = ('{"value":' + s + "}").encode("ascii")
    return len(body).to_bytes(8, "big") + body


def _describe(e):
    try:
        return type(e).__name__, str(e)[:500]
    except BaseException:
        return type(e).__name__, "<unprintable>"


def _materialise(v, limit):
    """``compare: iter``: the returned iterable as a list (at most ``limit`` items, inside the limits)."""
    out = []
    for item in v:
        out.append(item)
        if len(out) > limit:
            raise Unplain(f"iterable longer than {limit} items")
    return out


def _untag(x):
    """The value of a tagged form the host sent (``values.encode``: it held a set or a dict with
    non-str keys, which the host keeps unhashed); the real containers are built here."""
    t = type(x)
    if t is list:
        return [_untag(v) for v in x]
    if t is not dict:
        return x
    if len(x) == 1:
        ((tag, p),) = x.items()
        if tag == "$d":
            return {k: _untag(v) for k, v in p.items()}
        if tag == "$m":
            return {_untag(k): _untag(v) for k, v in p}
        if tag in ("$t", "$l", "$s", "$z"):
            items = [_untag(v) for v in p]
            return {"$t": tuple, "$l": list, "$s": set, "$z": frozenset}[tag](items)
        if tag == "$b":
            return bytes.fromhex(p)
        if tag == "$c":
            return complex(_untag(p[0]), _untag(p[1]))
        if tag == "$f":
            return float(p)
    return {k: _untag(v) for k, v in x.items()}


def _call(fn, args, materialise):
    try:
        v = fn(*args)
        if materialise:
            v = _materialise(v, materialise)
    except BaseException as e:
        name, msg = _describe(e)
        return {"raised": [name, msg]}
    t = type(v)
    if v is None or t is int or t is str or t is bool:  # what ``plain`` returns as is, without its call
        return {"value": v}
    try:
        return {"value": plain(v)}
    except Unplain as e:
        return {"unplain": str(e)[:200]}
    except BaseException as e:  # RecursionError, MemoryError while encoding
        return {"unplain": ": ".join(_describe(e))}


def _tracer(cov_fd):
    """The coverage tracer (code repair installs it in every run, traced or not, public or hidden, so
    nothing in this process tells the runs apart): each candidate line is written to the coverage
    pipe the first time it runs, so lines already reported live on the host, out of this process's
    reach. A frame whose code has no unseen line left stops getting line events."""
    write, seen, todo = os.write, set(), {}

    def tracer(frame, event, arg):
        code = frame.f_code
        if code.co_filename != CANDIDATE:
            return None
        rem = todo.get(code)
        if rem is None:
            rem = todo[code] = {n for _, _, n in code.co_lines() if n is not None} - seen
        if event == "call" and not rem:
            return None
        if event == "line":
            n = frame.f_lineno
            rem.discard(n)
            if n not in seen:
                seen.add(n)
                try:
                    write(cov_fd, n.to_bytes(4, "big"))
                except BaseException:
                    pass
            if not rem:
                frame.f_trace_lines = False
        return tracer

    return tracer


def main():
    job = marshal.loads(sys.stdin.buffer.read(int.from_bytes(sys.stdin.buffer.read(8), "big")))
    JOB["result_fd"] = job["result_fd"]
    _set_limits(job["limits"])
    threads = {k: v for k, v in os.environ.items() if k.endswith("_NUM_THREADS")}  # the supervisor's
    os.environ.clear()
    os.environ["PATH"] = job["limits"]["path"]
    os.environ.update(threads)
    for p in reversed(job.get("sys_path", ())):
        sys.path.insert(0, p)
    ns = {"__name__": "__candidate__", "__builtins__": __builtins__}
    session = job.get("session", False)
    if not session:
        os.close(0)
    if job.get("coverage"):
        sys.settrace(_tracer(job["cov_fd"]))
    try:
        code = compile(job["program"], CANDIDATE, "exec")
        exec(code, ns)
    except BaseException as e:
        _send({"load_error": list(_describe(e))})
        _flush_exit()
    fn = ns.get(job["entry"])
    if not callable(fn):
        _send({"no_entry": job["entry"]})
        _flush_exit()
    if not session:
        args = _untag(job["args"]) if job.get("tagged") else job["args"]
        _send(_call(fn, args, job.get("materialise", 0)))
        _flush_exit()
    _send({"ready": True})
    stdin = sys.stdin.buffer
    while True:
        head = stdin.read(8)
        if len(head) < 8:
            break
        req = marshal.loads(stdin.read(int.from_bytes(head, "big")))
        if req is None:
            break
        args = _untag(req["args"]) if req.get("tagged") else req["args"]
        _send(_call(fn, args, req.get("materialise", 0)))
    _flush_exit()


def _flush_exit():
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BaseException:
        pass
    os._exit(0)


if __name__ == "__main__":
    main()
