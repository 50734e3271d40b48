"""The in-sandbox side of one OpenEvolve evaluation: :data:`HARNESS` is the program the sandbox loads.

:func:`evaluate_task` (inside the sandbox, stdlib only) writes the candidate program to a file under
the sandbox's private ``/tmp``, loads ``evaluator.py`` from the (read-only) task directory the way
OpenEvolve does (the directory first on ``sys.path``, module name ``evaluation_module``), and calls
``evaluate(program_path)`` — or the ``evaluate_stage1`` / ``evaluate_stage2`` / ``evaluate_stage3``
cascade, with OpenEvolve's threshold rule — each stage under its own ``timeout`` (an interval timer).
``PYTHONPATH`` is set to the sandbox's packages so that a ``sys.executable`` subprocess the
evaluator starts imports numpy (and the compatibility ``openevolve`` when it is on the path).

What comes back is plain data: ``{"outcome": "ok" | "timeout" | "error", "stage": ..., "metrics":
..., "artifacts": ..., "stages": [...], "error": [type, message, traceback tail]}``, plus
``"invalid": reason`` when a stage returned something else than a dict or an ``EvaluationResult``
with a dict of metrics; numpy scalars and arrays become numbers and lists, bytes become text, an int
of more than 8192 bits the text "<an int of N bits>" (its decimal digits would exceed
Python's int-to-text limit), anything else its ``repr`` (non-finite floats travel tagged, see
:mod:`rsi_workbench.sandbox.values`).
"""

from __future__ import annotations

HARNESS = r'''
import importlib.util
import os
import signal
import sys
import tempfile
import traceback

ARTIFACT_CHARS = 4000


class _StageTimeout(BaseException):
    """Raised by the interval timer (a BaseException: an evaluator's ``except Exception`` keeps it)."""


def _on_alarm(signum, frame):
    raise _StageTimeout()


def _plain(x, depth=0):
    if depth > 40:
        return repr(x)[:200]
    if x is None or isinstance(x, (bool, str)):
        return x[:ARTIFACT_CHARS] if isinstance(x, str) else x
    if isinstance(x, int):
        x = int(x)  # beyond float range stays an int (the host says so); beyond 8192 bits, a note
        return x if x.bit_length() <= 8192 else "<an int of %d bits>" % x.bit_length()
    if isinstance(x, float):
        return float(x)
    if isinstance(x, bytes):
        return x[:ARTIFACT_CHARS].decode("utf-8", "replace")
    if getattr(x, "shape", None) == () and hasattr(x, "item"):
        return _plain(x.item(), depth + 1)
    if hasattr(x, "tolist"):
        return _plain(x.tolist(), depth + 1)
    if isinstance(x, dict):
        return {str(k): _plain(v, depth + 1) for k, v in list(x.items())[:200]}
    if isinstance(x, (list, tuple)):
        return [_plain(v, depth + 1) for v in list(x)[:1000]]
    return repr(x)[:ARTIFACT_CHARS]


def _normalise(res):
    if isinstance(res, dict):
        return {"metrics": _plain(res), "artifacts": {}}
    if hasattr(res, "metrics"):  # an EvaluationResult (or the like)
        metrics, arts = res.metrics, getattr(res, "artifacts", None)
        arts = _plain(arts) if isinstance(arts, dict) else {}
        if isinstance(metrics, dict):
            return {"metrics": _plain(metrics), "artifacts": arts}
        return {"metrics": {}, "artifacts": arts,
                "invalid": "metrics is a %s, not a dict" % type(metrics).__name__}
    return {"metrics": {}, "artifacts": {},
            "invalid": "evaluate returned a %s, not a dict or an EvaluationResult" % type(res).__name__}


def _float(v):
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    try:
        v = float(v)
    except OverflowError:
        return None
    return v if v == v and v not in (float("inf"), float("-inf")) else None


def _passes(metrics, threshold):
    # a score that is not a finite number passes no threshold (the host makes the node invalid)
    if "combined_score" in metrics:
        score = _float(metrics["combined_score"])
        return score is not None and score >= threshold
    nums = [_float(v) for k, v in metrics.items()
            if k != "error" and isinstance(v, (int, float)) and not isinstance(v, bool)]
    return bool(nums) and None not in nums and sum(nums) / len(nums) >= threshold


def _timed(fn, arg, timeout):
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        return fn(arg)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


def _failure(out, stage, kind, exc=None):
    out["outcome"], out["stage"] = kind, stage
    if exc is not None:
        tb = traceback.format_exc()
        out["error"] = [type(exc).__name__, str(exc)[:500], tb[-1500:]]
    else:
        out["error"] = ["Timeout", "stage %s ran past %g s" % (stage, out["timeout"]), ""]
    return out


def evaluate_task(task_dir, compat_dir, program, timeout, cascade, thresholds, package_path):
    out = {"outcome": "ok", "stage": "", "metrics": {}, "artifacts": {}, "stages": [],
           "error": None, "timeout": timeout, "compat": False}
    path = list(package_path)
    sys.path.insert(0, task_dir)
    if compat_dir and importlib.util.find_spec("openevolve") is None:
        sys.path.append(compat_dir)  # last: never in front of a real openevolve
        path.append(compat_dir)
        out["compat"] = True
    os.environ["PYTHONPATH"] = os.pathsep.join(path)
    work = tempfile.mkdtemp(prefix="candidate-")
    program_path = os.path.join(work, "program.py")
    with open(program_path, "w") as f:
        f.write(program)
    signal.signal(signal.SIGALRM, _on_alarm)
    try:
        spec = importlib.util.spec_from_file_location("evaluation_module", os.path.join(task_dir, "evaluator.py"))
        module = importlib.util.module_from_spec(spec)
        sys.modules["evaluation_module"] = module
        _timed(spec.loader.exec_module, module, timeout)
    except _StageTimeout:
        return _failure(out, "load", "timeout")
    except BaseException as e:
        return _failure(out, "load", "error", e)
    stages = ["evaluate"]
    if cascade and hasattr(module, "evaluate_stage1"):
        stages = ["evaluate_stage1"]
        for later in ("evaluate_stage2", "evaluate_stage3"):  # a stage runs only after the one before it
            if not hasattr(module, later):
                break
            stages.append(later)
    merged_metrics, merged_artifacts = {}, {}
    for i, name in enumerate(stages):
        fn = getattr(module, name, None)
        if not callable(fn):
            return _failure(out, name, "error", AttributeError("evaluator.py defines no function %s" % name))
        try:
            res = _normalise(_timed(fn, program_path, timeout))
        except _StageTimeout:
            return _failure(out, name, "timeout")
        except BaseException as e:
            return _failure(out, name, "error", e)
        out["stages"].append(name)
        if "invalid" in res:  # not a dict of metrics: the host makes the node invalid with this reason
            out["stage"], out["invalid"] = name, "%s: %s" % (name, res["invalid"])
            out["artifacts"] = dict(merged_artifacts, **res["artifacts"])
            return out
        if i == 0:
            merged_metrics = dict(res["metrics"])
        else:  # OpenEvolve's merge: numbers of every stage, later stages win, no "error" key carried
            merged_metrics = {k: v for k, v in merged_metrics.items() if k != "error"}
            merged_metrics.update({k: v for k, v in res["metrics"].items() if k != "error"})
        merged_artifacts.update(res["artifacts"])
        out["metrics"], out["artifacts"], out["stage"] = merged_metrics, merged_artifacts, name
        if i < len(stages) - 1:
            limit = thresholds[i] if i < len(thresholds) else None
            if limit is None or not _passes(merged_metrics, limit):
                break
    return out
'''
