"""Inside the sandbox: ``python -I -S _child.py``, the candidate's own process (stdlib only, few imports).

It reads one marshalled job from stdin, sets its rlimits, loads the program and answers calls. It
holds no expected value and decides no verdict: it reports plain data only, as exactly one
length-prefixed frame per call on the result descriptor, then exits 0. Everything here runs
in the same process as untrusted code, so the host trusts nothing it says beyond "this is the data".
"""

import marshal
import os
import resource
import sys

CANDIDATE = "candidate.py"
PRISTINE_BUILTINS = dict(vars(__builtins__))
PLAIN_DEPTH = 100
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
    """The value as JSON-ready data: exact built-in types only (no subclass survives), tuples as
    lists, dicts tagged ``{"$d": ...}`` with str keys, non-finite floats tagged ``{"$f": ...}``."""
    if depth > PLAIN_DEPTH:
        raise Unplain("nested too deeply")
    t = type(x)
    if x is None or t is bool or t is int or t is str:
        return x
    if t is float:
        if x != x:
            return {"$f": "nan"}
        if x in (float("inf"), float("-inf")):
            return {"$f": "inf" if x > 0 else "-inf"}
        return x
    if t is list or t is tuple:
        return [plain(v, depth + 1) for v in x]
    if t is dict:
        out = {}
        for k, v in dict.items(x):
            if type(k) is not str:
                raise Unplain("dict key of type " + type(k).__name__)
            out[k] = plain(v, depth + 1)
        return {"$d": out}
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
    try:
        data = _frame(payload)
    except BaseException as e:  # e.g. an int too long to print: still exactly one frame
        data = _frame({"unplain": str(e)[:200]})
    while data:
        n = os.write(JOB["result_fd"], data)
        data = data[n:]


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


def _call(fn, args, materialise):
    try:
        v = fn(*args)
        if materialise:
            v = _materialise(v, materialise)
    except BaseException as e:
        name, msg = _describe(e)
        return {"raised": [name, msg]}
    try:
        return {"value": plain(v)}
    except Unplain as e:
        return {"unplain": str(e)[:200]}
    except BaseException as e:  # RecursionError, MemoryError while encoding
        return {"unplain": ": ".join(_describe(e))}


def _test_codes(code):
    seen, stack = set(), [code]
    while stack:
        c = stack.pop()
        seen.add(c)
        stack.extend(k for k in c.co_consts if type(k) is type(code))
    return seen


def _assert_test(ns, src, entry):
    """An unconverted assert test: fresh globals (a copy of the loaded module's names, less any that
    shadow a builtin) and a fresh copy of the builtins taken before the program ran. WA only when every frame of the failure is
    the test's own code (identity, not file name); otherwise the candidate raised: RE."""
    code = compile(src, "<test>", "exec")
    mine = _test_codes(code)
    g = {k: v for k, v in ns.items() if k not in PRISTINE_BUILTINS or k == entry}  # no shadowed builtins
    g["__builtins__"] = dict(PRISTINE_BUILTINS)
    g["__name__"] = "__test__"
    try:
        exec(code, g)
    except BaseException as e:
        tb = e.__traceback__.tb_next  # the first entry is this function's own exec() call
        ours = True
        while tb is not None:
            if tb.tb_frame.f_code not in mine:
                ours = False
            tb = tb.tb_next
        name, msg = _describe(e)
        return {"failed" if ours else "raised": [name, msg]}
    return {"passed": True}


def main():
    job = marshal.loads(sys.stdin.buffer.read(int.from_bytes(sys.stdin.buffer.read(8), "big")))
    JOB["result_fd"] = job["result_fd"]
    _set_limits(job["limits"])
    os.environ.clear()
    os.environ["PATH"] = job["limits"]["path"]
    for p in reversed(job.get("sys_path", ())):
        sys.path.insert(0, p)
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
    session = job.get("session", False)
    if not session:
        os.close(0)
    try:
        code = compile(job["program"], CANDIDATE, "exec")
        if tracer:
            sys.settrace(tracer)
        exec(code, ns)
        sys.settrace(None)
    except BaseException as e:
        sys.settrace(None)
        _send({"load_error": list(_describe(e))})
        _flush_exit()
    fn = ns.get(job["entry"])
    if not session:
        if not callable(fn):
            res = {"no_entry": job["entry"]}
        elif job.get("assert_code") is not None:
            if tracer:
                sys.settrace(tracer)
            res = _assert_test(ns, job["assert_code"], job["entry"])
        else:
            if tracer:
                sys.settrace(tracer)
            res = _call(fn, job["args"], job.get("materialise", 0))
        sys.settrace(None)
        if job.get("trace"):
            res["lines"] = sorted(lines)
        _send(res)
        _flush_exit()
    if not callable(fn):
        _send({"no_entry": job["entry"]})
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
        _send(_call(fn, req["args"], req.get("materialise", 0)))
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
