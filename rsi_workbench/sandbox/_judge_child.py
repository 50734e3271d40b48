"""Inside the sandbox: the judge process (``python -s -S -P -c <this file>``, same plan and limits as
the candidate's). It holds test code and the task's trusted helpers only, never the candidate's.

A persistent zygote: it reads one marshalled setup frame from stdin (rlimits, environment), then
for each test job forks a child that runs the test code in fresh globals, with ``random`` seeded
to 0, the entry point's name bound to a proxy. Each proxy call is sent to the host as a
JSON frame ``{"call": [tagged args]}`` on the result descriptor; the host forwards it to the
candidate's session and answers on stdin (marshal): ``{"value": v}`` (plain data, exact types;
``{"tagged": ...}`` when it holds a set or a dict with non-str keys, built here from its tagged form),
``{"raised": [type name, message]}`` (re-raised here as :class:`CandidateRaised`) or ``{"gone": why}``
(the candidate timed out or failed: the test unwinds, the host decides). The child reports one
outcome (``passed`` / ``failed`` / ``raised`` / ``gone`` / ``unsupported``) and exits 0, or 4 when a
reply it asked for was not read whole; the zygote then reports ``{"done": status}``. The child and the
zygote share stdin, so the host retires the judge after any test whose child did not report an outcome
and exit 0 (a reply sent to it may still wait there). Nothing here runs candidate code.
"""

import builtins
import copy  # noqa: F401  (warm imports, shared by every forked test)
import json
import marshal
import math
import os
import random
import resource
import string  # noqa: F401
import sys
from _json import encode_basestring_ascii as _enc

STATE: dict = {}
ENCODER = json.JSONEncoder(allow_nan=False, separators=(",", ":"))  # json.dumps with these settings
MAX_DEPTH = 200


class CandidateRaised(Exception):
    """The candidate raised ``name: message`` in its own process (a marked error: RE unless caught)."""

    def __init__(self, name, message):
        super().__init__(f"{name}: {message}")
        self.name, self.message = name, message


class _Gone(BaseException):
    pass


class _Unsupported(BaseException):
    pass


def _read_exact(n):
    out = bytearray()
    while len(out) < n:
        chunk = os.read(0, n - len(out))
        if not chunk:
            raise EOFError
        out += chunk
    return bytes(out)


def _recv():
    return marshal.loads(_read_exact(int.from_bytes(_read_exact(8), "big")))


def _send(obj, text=None):
    body = (text or ENCODER.encode(obj)).encode("ascii")
    data = len(body).to_bytes(8, "big") + body
    while data:
        data = data[os.write(STATE["result_fd"], data) :]


def _call_text(args):
    """``ENCODER.encode({"call": [tag(a) for a in args]})`` in one step when every argument is None, a
    bool, an int, a str or a finite float (each its own tagged form); None otherwise."""
    parts = []
    for a in args:
        t = type(a)
        if t is int:
            try:
                parts.append(int.__repr__(a))
            except ValueError:  # too many digits: the general path says so
                return None
        elif t is str:
            parts.append(_enc(a))
        elif a is None:
            parts.append("null")
        elif t is bool:
            parts.append("true" if a else "false")
        elif t is float and math.isfinite(a):
            parts.append(float.__repr__(a))
        else:
            return None
    return '{"call":[' + ",".join(parts) + "]}"


def tag(x, depth=0):
    """The tagged form of an argument (see :mod:`rsi_workbench.sandbox.values`)."""
    if depth > MAX_DEPTH:
        raise _Unsupported("argument nested too deeply")
    t, d = type(x), depth + 1
    if x is None or t in (bool, int, str):
        return x
    if t is float:
        return x if math.isfinite(x) else {"$f": "nan" if x != x else ("inf" if x > 0 else "-inf")}
    if t is list:
        return [tag(v, d) for v in x]
    if t is tuple:
        return {"$t": [tag(v, d) for v in x]}
    if t is set or t is frozenset:
        return {"$s" if t is set else "$z": [tag(v, d) for v in x]}
    if t is bytes:
        return {"$b": x.hex()}
    if t is complex:
        return {"$c": [tag(x.real, d), tag(x.imag, d)]}
    if t is dict:
        if all(type(k) is str for k in x):
            return {"$d": {k: tag(v, d) for k, v in x.items()}}
        return {"$m": [[tag(k, d), tag(v, d)] for k, v in x.items()]}
    raise _Unsupported(f"an argument of type {t.__name__} cannot cross to the candidate")


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


def _proxy(name):
    def candidate(*args, **kwargs):
        if kwargs:
            raise _Unsupported("keyword arguments cannot cross to the candidate")
        text = _call_text(args) or ENCODER.encode({"call": [tag(a) for a in args]})
        STATE["calls"] += 1  # once it can be sent, before sending: a call cut short counts as unanswered
        _send(None, text)
        reply = _recv()
        STATE["replies"] += 1  # read whole: nothing of it is left on stdin
        if "value" in reply:
            return reply["value"]
        if "tagged" in reply:
            return _untag(reply["tagged"])
        if "raised" in reply:
            raise CandidateRaised(*reply["raised"])
        raise _Gone(reply.get("gone", ""))

    candidate.__name__ = candidate.__qualname__ = name
    return candidate


def _describe(e):
    try:
        return [type(e).__name__, str(e)[:500]]
    except BaseException:
        return [type(e).__name__, "<unprintable>"]


def _run_test(job):
    STATE["calls"] = STATE["replies"] = 0
    random.seed(0)
    g = {"__name__": "__test__", "__builtins__": builtins, job["entry"]: _proxy(job["entry"])}
    try:
        exec(compile(job["code"], "<test>", "exec"), g)
    except _Gone:
        return {"gone": True}
    except _Unsupported as e:
        return {"unsupported": str(e)[:500]}
    except CandidateRaised as e:
        return {"raised": [e.name, e.message]}
    except BaseException as e:
        return {"failed": _describe(e)}
    return {"passed": True}


def main():
    setup = _recv()
    STATE["result_fd"] = setup["result_fd"]
    os.close(setup["cov_fd"])
    lim, R = setup["limits"], resource
    for k, v in {
        R.RLIMIT_CPU: (lim["cpu_soft_s"], lim["cpu_hard_s"]),
        R.RLIMIT_AS: (lim["address_space_bytes"],) * 2,
        R.RLIMIT_FSIZE: (lim["file_size_bytes"],) * 2,
        R.RLIMIT_NOFILE: (lim["open_files"],) * 2,
        R.RLIMIT_NPROC: (lim["processes"],) * 2,
        R.RLIMIT_CORE: (0, 0),
    }.items():
        resource.setrlimit(k, v)
    threads = {k: v for k, v in os.environ.items() if k.endswith("_NUM_THREADS")}  # the supervisor's
    os.environ.clear()
    os.environ["PATH"] = lim["path"]
    os.environ.update(threads)
    for p in reversed(setup.get("sys_path", ())):
        sys.path.insert(0, p)
    _send({"ready": True})
    while True:
        try:
            job = _recv()
        except EOFError:
            break
        if job is None:
            break
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            try:
                out = _run_test(job)
                sys.stdout.flush()
                sys.stderr.flush()
                _send(out)
            except BaseException:
                os._exit(3)
            # a reply not read whole (a thread's call still waiting, an error mid-read) is still on
            # the zygote's stdin, where the next job would be read: the host retires the judge
            os._exit(0 if STATE["calls"] == STATE["replies"] else 4)
        _, status = os.waitpid(pid, 0)
        _send({"done": os.waitstatus_to_exitcode(status)})
    os._exit(0)


if __name__ == "__main__":
    main()
