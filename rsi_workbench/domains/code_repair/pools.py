"""Pools that contain a fix: ``rsi-workbench tasks pools TASKS --out DIR``.

For every task of a task file (or the built-in HumanEvalFix, ``TASKS = humanevalfix``) the mutation
coder proposes up to ``n`` distinct compiling candidates for the task's initial state (the buggy
program), weighted towards the top fault-localised lines (Ochiai suspiciousness squared x operator
prior, :class:`~rsi_workbench.domains.code_repair.MutationCoder`), or a model coder does
(``--coder FILE`` with a ``coder:`` block, ``llm`` or ``hybrid``; its invalid or non-compiling
samples are dropped, so a task may have fewer than ``n``); each candidate is executed on the
task's public and hidden tests in the sandbox through the experiment's environment and execution
cache (metrics only, never charged). A task is **fixable** when at least one candidate passes every
hidden test; for each fixable task with at least three non-fixes, up to ``pools_per_task`` distinct
pools of four candidates holding exactly one fix are drawn (seeded), so chance top-1 is 25%.

Files in ``DIR``:

- ``manifest.json``: provenance (task source and its sha256, coder, seed, n, pools per task, the
  sandbox semantics key and hash seed, the execution-cache key version); a later command on the same
  directory with other settings is refused, naming the field;
- ``candidates.jsonl``: one line per finished task (appended and fsynced as each finishes), so a
  command killed mid-way resumes with the next unfinished task (a torn last line is cut);
- ``exec_cache.jsonl``: the sandbox outcomes (the experiment's :class:`ExecutionCache`);
- ``pools.json``: the fixable tasks and the drawn pools (indices into a task's candidates), rewritten
  from ``candidates.jsonl`` at the end of each command.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import random
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

FORMAT = "rsi-workbench/code-ranker-pools/v1"
POOL_SIZE = 4
HUMANEVALFIX = "humanevalfix"


class PoolsError(ValueError):
    """A pools directory or task source that cannot be used (the message names the file or field)."""


class ArmUnavailable(ValueError):
    """A ranker that cannot run on these pools (e.g. too few pooled tasks for its folds)."""


def pooled_candidates(data: Mapping[str, Any]) -> dict[str, list[int]]:
    """Per pooled task, the indices of its candidates that appear in some pool (in index order)."""
    out: dict[str, set[int]] = {}
    for p in data["pools"]:
        out.setdefault(p["task_id"], set()).update(p["candidates"])
    return {t: sorted(v) for t, v in out.items()}


def load_source(tasks: str) -> tuple[list[Any], str, str]:
    """(tasks, source name, sha256 of the source) for a task file path or ``humanevalfix``."""
    from rsi_workbench.domains.code_repair import load_humanevalfix, load_task_file

    if tasks == HUMANEVALFIX:
        loaded = load_humanevalfix()
        blob = json.dumps([t.model_dump(mode="json") for t in loaded], sort_keys=True).encode()
        return loaded, HUMANEVALFIX, hashlib.sha256(blob).hexdigest()
    path = Path(tasks)
    if not path.is_file():
        raise PoolsError(f"{tasks}: no such task file (or pass '{HUMANEVALFIX}' for the built-in tasks)")
    return load_task_file(path), str(tasks), hashlib.sha256(path.read_bytes()).hexdigest()


def coder_identity(settings: Any) -> Any:
    """What a manifest records of the proposer: ``mutation-sbfl``, or a model coder's kind, model
    identity and sampling settings (a ``coder:`` block, :class:`~rsi_workbench.domains.code_repair.
    coder_settings.CoderSettings`)."""
    from rsi_workbench.domains.code_repair.coder_settings import uses_model

    if not uses_model(settings):
        return "mutation-sbfl"
    from rsi_workbench.models import identity_of

    keep = ("kind", "temperature", "top_p", "max_tokens", "sample_cap", "batched", "stop")
    return {**{k: getattr(settings, k) for k in keep}, "model": identity_of(settings.model)}


def manifest_for(
    source: str, sha: str, *, n: int, pools_per_task: int, seed: int, coder: Any = "mutation-sbfl"
) -> dict[str, Any]:
    """The provenance a pools directory records (everything a pool depends on)."""
    from rsi_workbench.domains.code_repair.binding import CACHE_KEY_VERSION
    from rsi_workbench.sandbox.supervisor import HASH_SEED, SANDBOX_SEMANTICS

    return {
        "format": FORMAT,
        "tasks": source,
        "tasks_sha256": sha,
        "coder": coder,
        "state": "initial",
        "seed": seed,
        "n": n,
        "pool_size": POOL_SIZE,
        "pools_per_task": pools_per_task,
        "sandbox_semantics": SANDBOX_SEMANTICS,
        "hash_seed": HASH_SEED,
        "exec_cache_key": CACHE_KEY_VERSION,
    }


def _check_manifest(out: Path, want: dict[str, Any]) -> None:
    path = out / "manifest.json"
    if path.exists():
        have = json.loads(path.read_text())
        for k, v in want.items():
            if have.get(k) != v and k != "tasks":  # the same file (sha256) under another path is fine
                raise PoolsError(
                    f"{path}: {k} is {have.get(k)!r} there but {v!r} now; use another --out "
                    "(a pools directory holds one setting)"
                )
    else:
        out.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(want, indent=1, sort_keys=True) + "\n")


def read_rows(path: Path, *, repair: bool = False) -> list[dict[str, Any]]:
    """The finished task rows of ``candidates.jsonl``; a torn last line (a killed command) is
    skipped, and cut from the file when ``repair``; any other bad line is an error naming it."""
    if not path.exists():
        return []
    text = path.read_text()
    lines = text.split("\n")
    rows = []
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            if i == len(lines) - 1:
                if repair:
                    with open(path, "r+") as f:
                        f.truncate(len(text) - len(line))
                continue
            raise PoolsError(f"{path}:{i + 1}: undecodable line") from None
    return rows


def task_row(
    env: Any, task: Any, n: int, seed: int, llm: Any = None, kind: str = "mutation"
) -> dict[str, Any]:
    """One task's candidates (up to ``n``, initial state) with their public and hidden pass counts;
    ``llm``: an ``LLMCoder`` proposing instead (``kind`` llm) or first (``hybrid``, mutants fill)."""
    from rsi_workbench.domains.code_repair import MutationCoder, RepairFeedback, Sandbox, pass_count
    from rsi_workbench.domains.code_repair.llm_coder import HybridCoder, is_invalid

    state, _ = env.initial(task.task_id)
    coder: Any = MutationCoder(sandbox=env.sandbox, executor=env.executor)
    if llm is not None:
        coder = HybridCoder(llm, coder) if kind == "hybrid" else llm
    rng = random.Random(f"pools|{seed}|{task.task_id}")
    proposed = coder.propose(task, state.program, RepairFeedback(state.program, state.outcomes), n, rng)
    cands, seen = [], set()
    for c in proposed:  # a model's invalid or non-compiling samples are no candidates
        if is_invalid(c) is None and Sandbox.compile_error(c.program) is None and c.program not in seen:
            seen.add(c.program)
            cands.append(c)
    cands = cands[:n]
    progs = [c.program for c in cands]
    pub = env.run(task.task_id, progs, "public") if progs else []
    hid = env.run(task.task_id, progs, "hidden") if progs else []
    rows = []
    for c, p, h in zip(cands, pub, hid, strict=True):
        rows.append(
            {
                "program": c.program,
                "operator": c.meta.get("operator", "llm"),  # a model's sample: no operator
                "lines": c.meta.get("lines", []),
                "suspiciousness": c.meta.get("suspiciousness", []),
                "public_passed": pass_count(p),
                "hidden_passed": pass_count(h),
                "fix": pass_count(h) == len(h),
            }
        )
    return {
        "task_id": task.task_id,
        "n_public": len(task.public_tests),
        "n_hidden": len(task.hidden_tests),
        "kept_public_passed": state.passed,
        "candidates": rows,
    }


def draw_pools(row: dict[str, Any], pools_per_task: int, seed: int) -> list[dict[str, Any]]:
    """Up to ``pools_per_task`` distinct pools of 4 (one fix, three non-fixes) from a task's
    candidates, seeded by (seed, task); the fix's position in a pool is drawn too."""
    cands = row["candidates"]
    fixes = [i for i, c in enumerate(cands) if c["fix"]]
    others = [i for i, c in enumerate(cands) if not c["fix"]]
    if not fixes or len(others) < POOL_SIZE - 1:
        return []
    rng = random.Random(f"draw|{seed}|{row['task_id']}")
    combos = [(f, rest) for f in fixes for rest in itertools.combinations(others, POOL_SIZE - 1)]
    picked = rng.sample(combos, min(pools_per_task, len(combos)))
    out = []
    for j, (f, rest) in enumerate(picked):
        members = [f, *rest]
        rng.shuffle(members)
        out.append(
            {"pool_id": f"{row['task_id']}#{j}", "task_id": row["task_id"], "candidates": members, "fix": f}
        )
    return out


def summarise(out: Path, manifest: dict[str, Any], rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Write ``pools.json`` from the finished rows and return it."""
    pools = [p for r in rows for p in draw_pools(r, manifest["pools_per_task"], manifest["seed"])]
    fixable = [r["task_id"] for r in rows if any(c["fix"] for c in r["candidates"])]
    data = {
        "manifest": manifest,
        "tasks_done": len(rows),
        "candidates": sum(len(r["candidates"]) for r in rows),
        "fixes": sum(c["fix"] for r in rows for c in r["candidates"]),
        "fixable": fixable,
        "pooled_tasks": sorted({p["task_id"] for p in pools}),
        "pools": pools,
    }
    tmp = out / "pools.json.tmp"
    tmp.write_text(json.dumps(data, indent=0, sort_keys=True) + "\n")
    os.replace(tmp, out / "pools.json")
    return data


def build_pools(
    tasks: str,
    out: str | Path,
    *,
    n: int = 16,
    pools_per_task: int = 4,
    seed: int = 0,
    limit: int | None = None,
    workers: int = 1,
    sandbox_mode: Any = None,
    on_task: Callable[[dict[str, Any]], None] | None = None,
    coder: Any = None,
    coder_backend: Any = None,
) -> dict[str, Any]:
    """Build (or resume) the pools of ``tasks`` in ``out`` (module doc); ``limit``: only the first N
    tasks (a later command with a larger limit continues); ``on_task``: called after each finished
    task's row is written (progress); ``coder``: a ``coder:`` block (``CoderSettings``; None: the
    mutation coder), its model calls recorded in ``out/coder/seed<seed>`` (replayed on resume);
    ``coder_backend``: an already-built model for it (a test double). Returns ``pools.json``'s content."""
    from rsi_workbench.domains.code_repair import Sandbox
    from rsi_workbench.domains.code_repair.binding import CodeRepairEnvironment, ExecutionCache
    from rsi_workbench.execute import make_executor

    if n < POOL_SIZE:
        raise PoolsError(f"--n must be at least {POOL_SIZE} (a pool holds {POOL_SIZE} candidates), got {n}")
    if pools_per_task < 1:
        raise PoolsError(f"--pools-per-task must be at least 1, got {pools_per_task}")
    loaded, source, sha = load_source(tasks)
    if limit:
        loaded = loaded[:limit]
    out = Path(out)
    manifest = manifest_for(
        source, sha, n=n, pools_per_task=pools_per_task, seed=seed, coder=coder_identity(coder)
    )
    _check_manifest(out, manifest)
    path = out / "candidates.jsonl"
    rows = read_rows(path, repair=True)
    done = {r["task_id"] for r in rows}
    todo = [t for t in loaded if t.task_id not in done]
    if todo:
        with make_executor("process", workers) as ex:
            env = CodeRepairEnvironment(
                loaded, Sandbox(sandbox_mode), executor=ex, cache=ExecutionCache(out / "exec_cache.jsonl")
            )
            llm = None
            if manifest["coder"] != "mutation-sbfl":
                from rsi_workbench.domains.code_repair.coder_settings import open_llm_coder

                llm = open_llm_coder(coder, out, seed, backend=coder_backend)
            for t in todo:
                row = task_row(env, t, n, seed, llm, coder.kind if llm is not None else "mutation")
                with open(path, "a") as f:
                    f.write(json.dumps(row, sort_keys=True) + "\n")
                    f.flush()
                    os.fsync(f.fileno())
                rows.append(row)
                if on_task is not None:
                    on_task(row)
            if llm is not None and llm.prompt_run is not None:
                llm.prompt_run.close()
    order = {t.task_id: i for i, t in enumerate(loaded)}
    keep = sorted((r for r in rows if r["task_id"] in order), key=lambda r: order[r["task_id"]])
    return summarise(out, manifest, keep)


def load_pools(path: str | Path) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """``pools.json`` of a pools directory and its task rows by task id."""
    d = Path(path)
    pf = d / "pools.json"
    if not pf.exists():
        raise PoolsError(f"{d}: no pools.json (build it with `rsi-workbench tasks pools TASKS --out {d}`)")
    data = json.loads(pf.read_text())
    if data.get("manifest", {}).get("format") != FORMAT:
        raise PoolsError(f"{pf}: manifest.format is not {FORMAT!r}")
    rows = {r["task_id"]: r for r in read_rows(d / "candidates.jsonl")}
    missing = sorted({p["task_id"] for p in data["pools"]} - set(rows))
    if missing:
        raise PoolsError(f"{d / 'candidates.jsonl'}: no row for pooled task(s) {missing[:5]}")
    return data, rows


def pools_line(data: dict[str, Any]) -> str:
    """One line saying what a pools directory holds."""
    return (
        f"tasks: {data['tasks_done']}  candidates: {data['candidates']}  fixes: {data['fixes']}  "
        f"fixable tasks: {len(data['fixable'])}  pooled tasks: {len(data['pooled_tasks'])}  "
        f"pools: {len(data['pools'])}"
    )


__all__ = [
    "FORMAT",
    "HUMANEVALFIX",
    "POOL_SIZE",
    "ArmUnavailable",
    "PoolsError",
    "build_pools",
    "draw_pools",
    "load_pools",
    "load_source",
    "pooled_candidates",
    "pools_line",
    "read_rows",
    "summarise",
    "task_row",
]
