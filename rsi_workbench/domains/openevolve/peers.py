"""The two tools of ``rsi-workbench compare openevolve``, each run as its own process on a private
copy of the task directory, against its own metering proxy (:mod:`.meter`), and read back from its
own records into one shape (:class:`ToolRun`: one :class:`CallRecord` per forwarded model call).

- **the workbench** — ``python -m rsi_workbench run`` of an ``experiment: program_agent`` config
  (arm ``program``: :class:`~rsi_workbench.domains.openevolve.agent.OpenEvolveAgent`, whole-block
  edits of the evolve block, W = 1 so calls are sequential, one tree of ``calls`` attempts, policy
  ``greedy_deepest_best``); every candidate is evaluated in this project's sandbox. Read back from
  the run's ``tree_node`` and ``model_call`` events.
- **OpenEvolve** (``openevolve==0.4.1``, the ``openevolve`` extra) — ``python -m openevolve.cli``
  with a config derived from the task's ``config.yaml`` (its prompt, database and evaluator
  sections kept) with the LLM section replaced (the proxy, the pinned sampling settings, no
  retries), one evaluation worker, no LLM feedback, no embedding novelty check, the evolution trace
  on (code and failures). It evaluates candidates **in its own process on the host, unsandboxed**.
  Read back from its trace, its failures file and its log's ``LLM Token Usage`` lines.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rsi_workbench.domains.openevolve.task import read_settings, verdict

OPENEVOLVE_VERSION = "0.4.1"
EDIT_FORMAT = {
    "workbench": "whole block (the answer's first code block replaces the evolve block)",
    "openevolve:diff": "diff (SEARCH/REPLACE blocks applied to the parent program)",
    "openevolve:full": "full rewrite (the answer's first code block is the whole program)",
}
_USAGE = re.compile(r"LLM Token Usage \(.*?\): prompt_tokens=(\d+), completion_tokens=(\d+)")


@dataclass
class CallRecord:
    """What one forwarded model call gave: a program that was evaluated (score and validity by
    :func:`~.task.verdict` on the metrics the tool recorded) or a failed edit (no program)."""

    call: int  # 1-based, in the tool's call order
    program: str | None
    score: float | None
    valid: bool
    error: str = ""


@dataclass
class ToolRun:
    """One tool's run on one seed, read back from its own records."""

    tool: str
    seed: int
    rc: int
    wall_s: float
    calls: list[CallRecord] = field(default_factory=list)
    initial_score: float | None = None
    own_calls: int = 0  # model calls the tool's own log/records show
    own_prompt_tokens: int = 0
    own_completion_tokens: int = 0
    api_errors: int = 0  # iterations whose model call failed (e.g. refused past the cap)
    log_tail: str = ""
    out: str = ""


def _python_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a tool's process: this interpreter's packages, this checkout first on the
    path (so ``python -m rsi_workbench`` is this code), no proxy variables (loopback only)."""
    import rsi_workbench

    env = {k: v for k, v in os.environ.items() if k.lower() not in ("http_proxy", "https_proxy", "all_proxy")}
    root = str(Path(rsi_workbench.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join([root, *filter(None, [env.get("PYTHONPATH")])])
    env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1,localhost"
    env.update(extra or {})
    return env


def _run(cmd: list[str], cwd: Path, log: Path, env: dict[str, str], timeout_s: float) -> tuple[int, float]:
    t0 = time.perf_counter()
    with open(log, "wb") as f:
        try:
            rc = subprocess.run(
                cmd, cwd=cwd, stdout=f, stderr=subprocess.STDOUT, env=env, timeout=timeout_s
            ).returncode
        except subprocess.TimeoutExpired:
            rc = 124
    return rc, time.perf_counter() - t0


def _tail(path: Path, n: int = 1500) -> str:
    try:
        return path.read_text(errors="replace")[-n:]
    except OSError:
        return ""


# -- the workbench -------------------------------------------------------------------------------
def workbench_config(
    task_copy: Path, base_url: str, model: str, calls: int, sampling: dict[str, Any]
) -> dict[str, Any]:
    """The ``program_agent`` config the workbench runs (one seed is set per run)."""
    return {
        "experiment": "program_agent",
        "task": {"kind": "openevolve", "dir": str(task_copy)},
        "model": {
            "backend": "openai",
            "base_url": base_url,
            "name": model,
            "max_retries": 0,  # a refused call is not retried: the proxy's cap ends the run
            "concurrency": 1,
            "timeout_s": 3600.0,  # a CPU server may take minutes per answer (OpenEvolve's: the same)
        },
        "arms": ["program"],
        "W": 1,
        "calls": calls,
        "calls_per_round": calls,
        "policy": "greedy_deepest_best",
        "temperature": sampling["temperature"],
        "top_p": sampling["top_p"],
        "max_tokens": sampling["max_tokens"],
    }


def run_workbench(
    task_copy: Path,
    base_url: str,
    model: str,
    calls: int,
    seed: int,
    sampling: dict[str, Any],
    out: Path,
    timeout_s: float = 3600.0,
) -> ToolRun:
    """Run the workbench's program agent on ``task_copy`` for ``calls`` model calls; read it back."""
    import yaml

    out.mkdir(parents=True)
    cfg = {**workbench_config(task_copy, base_url, model, calls, sampling), "seeds": [seed]}
    (out / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    log = out / "workbench.log"
    cmd = [sys.executable, "-m", "rsi_workbench", "run", str(out / "config.yaml"), "--out", str(out / "run")]
    rc, wall = _run(cmd, out, log, _python_env({"OPENAI_API_KEY": "metered-by-proxy"}), timeout_s)
    res = ToolRun("workbench", seed, rc, wall, log_tail=_tail(log), out=str(out))
    if not (out / "run" / "events.jsonl").exists():
        return res
    from rsi_workbench.records import Run

    run = Run.open(out / "run")
    for e in run.events("initial_program_scored"):
        res.initial_score = e.payload.get("score") if e.payload.get("valid") else None
    calls_ev = run.events("model_call")
    res.own_calls = len(calls_ev)
    res.own_prompt_tokens = sum(int(e.payload.get("prompt_tokens") or 0) for e in calls_ev)
    res.own_completion_tokens = sum(int(e.payload.get("completion_tokens") or 0) for e in calls_ev)
    for i, p in enumerate((e.payload for e in run.events("tree_node")), 1):
        if p.get("move") == "no_program":
            res.calls.append(CallRecord(i, None, None, False, "no program in the answer"))
            continue
        program = run.artifacts.get_json(p["payload"])
        res.calls.append(
            CallRecord(i, str(program), p.get("score"), bool(p.get("valid")), str(p.get("reason") or ""))
        )
    return res


# -- OpenEvolve ----------------------------------------------------------------------------------
def openevolve_config(
    task_copy: Path,
    base_url: str,
    model: str,
    iterations: int,
    seed: int,
    sampling: dict[str, Any],
    edit: str,
    out: Path,
) -> dict[str, Any]:
    """OpenEvolve's config: the task's ``config.yaml`` (prompt, database, evaluator kept) with the
    LLM section replaced and the settings that would add or hide model calls turned off."""
    import yaml

    path = task_copy / "config.yaml"
    base = yaml.safe_load(path.read_text()) if path.is_file() else {}
    cfg: dict[str, Any] = dict(base) if isinstance(base, dict) else {}
    settings = read_settings(path)
    cfg.update(
        max_iterations=iterations,
        random_seed=seed,
        checkpoint_interval=max(1, iterations),
        log_level="INFO",
        log_dir=str(out / "logs"),
        diff_based_evolution=edit == "diff",
        full_rewrite_probability=0.0,
        language="python",
    )
    cfg["llm"] = {
        "models": [{"name": model, "weight": 1.0}],
        "evaluator_models": [{"name": model, "weight": 1.0}],
        "api_base": base_url,
        "api_key": "metered-by-proxy",
        "temperature": sampling["temperature"],
        "top_p": sampling["top_p"],
        "max_tokens": sampling["max_tokens"],
        "timeout": 3600,
        "retries": 0,
        "retry_delay": 0,
    }
    ev = dict(cfg.get("evaluator") or {})
    ev.update(
        parallel_evaluations=1,
        use_llm_feedback=False,
        timeout=int(-(-settings.timeout // 1)),  # OpenEvolve's field is an int (seconds)
        cascade_evaluation=settings.cascade_evaluation,
        cascade_thresholds=list(settings.cascade_thresholds),
    )
    cfg["evaluator"] = ev
    db = dict(cfg.get("database") or {})
    db["embedding_model"] = None  # its novelty check would spend model calls of its own
    db["random_seed"] = seed
    cfg["database"] = db
    prompt = dict(cfg.get("prompt") or {})
    prompt["programs_as_changes_description"] = False
    cfg["prompt"] = prompt
    cfg["evolution_trace"] = {
        "enabled": True,
        "format": "jsonl",
        "include_code": True,
        "include_prompts": False,
        "include_failures": True,
        "output_path": str(out / "trace.jsonl"),
        "buffer_size": 1,
    }
    return cfg


def _jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    rows = []
    for line in path.read_text().splitlines():
        try:
            rows.append(json.loads(line))
        except ValueError:
            continue
    return rows


def _metric_verdict(metrics: Any) -> tuple[float | None, bool, str]:
    ev = verdict(metrics)
    return ev.score, bool(ev.valid), str(ev.reason or "")


def run_openevolve(
    task_copy: Path,
    base_url: str,
    model: str,
    iterations: int,
    seed: int,
    sampling: dict[str, Any],
    edit: str,
    out: Path,
    timeout_s: float = 3600.0,
) -> ToolRun:
    """Run OpenEvolve on ``task_copy`` for ``iterations`` iterations (one model call each); read it back."""
    import yaml

    out.mkdir(parents=True)
    cfg = openevolve_config(task_copy, base_url, model, iterations, seed, sampling, edit, out)
    (out / "openevolve.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    log = out / "openevolve.log"
    cmd = [
        sys.executable, "-m", "openevolve.cli",
        str(task_copy / "initial_program.py"), str(task_copy / "evaluator.py"),
        "--config", str(out / "openevolve.yaml"), "--output", str(out / "output"),
        "--iterations", str(iterations),
    ]  # fmt: skip
    rc, wall = _run(cmd, out, log, _python_env({"OPENAI_API_KEY": "metered-by-proxy"}), timeout_s)
    res = ToolRun(f"openevolve:{edit}", seed, rc, wall, log_tail=_tail(log), out=str(out))
    text = "\n".join(p.read_text(errors="replace") for p in sorted((out / "logs").glob("*.log")))
    usage = [(int(a), int(b)) for a, b in _USAGE.findall(text)]
    res.own_calls = len(usage) + text.count("usage info not returned by API")
    res.own_prompt_tokens = sum(a for a, _ in usage)
    res.own_completion_tokens = sum(b for _, b in usage)
    by_iter: dict[int, CallRecord] = {}
    for t in _jsonl(out / "trace.jsonl"):
        it = int(t.get("iteration") or 0)
        score, valid, why = _metric_verdict(t.get("child_metrics"))
        by_iter[it] = CallRecord(it, t.get("child_code"), score, valid, why)
    for t in _jsonl(out / "trace_failures.jsonl"):
        it, err = int(t.get("iteration") or 0), str(t.get("error") or "")
        if err.startswith("LLM generation failed") or err.startswith("LLM returned None"):
            res.api_errors += 1  # no answer: not a spent call
            continue
        by_iter[it] = CallRecord(it, None, None, False, err[:300])
    res.calls = [by_iter[k] for k in sorted(by_iter)]
    for i, c in enumerate(res.calls, 1):  # call order (one worker: iterations run in order)
        c.call = i
    for ck in sorted(
        (out / "output" / "checkpoints").glob("checkpoint_*"), key=lambda p: int(p.name.split("_")[-1])
    ):
        for pf in (ck / "programs").glob("*.json"):
            prog = json.loads(pf.read_text())
            if prog.get("parent_id") is None and int(prog.get("iteration_found") or 0) == 0:
                s, v, _ = _metric_verdict(prog.get("metrics"))
                res.initial_score = s if v else None
    return res


__all__ = [
    "EDIT_FORMAT",
    "OPENEVOLVE_VERSION",
    "CallRecord",
    "ToolRun",
    "openevolve_config",
    "run_openevolve",
    "run_workbench",
    "workbench_config",
]
