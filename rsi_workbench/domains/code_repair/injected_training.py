"""Training candidates from injected bugs: the shifted prior of the features readout
(``world.lm_readout.train_on: injected``).

For every task of the task source with a reference program, ``per_problem`` bugs are injected into
the reference (:func:`~rsi_workbench.domains.code_repair.coder.inject_bugs`: uniform over operators,
then sites; seeded by (seed, task)); each injected bug is a state whose ``n`` mutation-coder
candidates are proposed (public-test feedback, as for a pools directory's initial states,
:func:`~rsi_workbench.domains.code_repair.pools.task_row`) and executed on the public and hidden
tests (label: passes every hidden test). As with a pools directory, only candidates of states that
hold a fix and three non-fixes are drawn into pools of four (:func:`~.pools.draw_pools`), and the
pooled candidates are the training rows, keyed by the task whose reference was mutated (so the
readout of a task fold never trains on bugs of its own tasks' references).

The candidates are built once per experiment directory and setting and kept, resumable, in
``<out>/injected_training/<key>/`` (``candidates.jsonl``, one line per injected state, and the
state's ``exec_cache.jsonl``); every seed and method reads them from there. ``table:`` names an
earlier build's directory (its ``candidates.jsonl`` and ``settings.json``; the committed one of the
shifted-prior run is ``benchmarks/data/code_repair_shifted/injected_training``): when its settings
equal these, its rows are copied into the experiment directory first and only missing states are
built (the demo so skips the 15-minute build).
"""

from __future__ import annotations

import hashlib
import json
import os
import random
from collections.abc import Mapping
from pathlib import Path
from typing import Any

Row = tuple[dict[str, float], float]


class InjectedTableError(ValueError):
    """An ``injected.table`` that cannot be used (named file and field)."""


def _key_settings(settings: Any) -> dict[str, Any]:
    return {k: v for k, v in settings.model_dump(mode="json").items() if k != "table"}


def injected_dir(settings: Any, out: Path) -> Path:
    """Where the injected states of ``settings`` (an :class:`~.world_settings.InjectedTraining`) live."""
    key = hashlib.sha256(json.dumps(_key_settings(settings), sort_keys=True).encode()).hexdigest()
    return Path(out) / "injected_training" / key[:12]


def table_rows(settings: Any) -> list[dict[str, Any]]:
    """The rows of ``settings.table`` (checked: its settings equal ``settings``; every row a state
    with an origin and a candidates list); [] without a table."""
    from rsi_workbench.domains.code_repair.pools import read_rows

    if settings.table is None:
        return []
    d = Path(settings.table)
    sp = d / "settings.json"
    try:
        have = json.loads(sp.read_text())
    except (OSError, ValueError) as e:
        raise InjectedTableError(f"{sp}: cannot read the table's settings ({e})") from None
    want = _key_settings(settings)
    if have != want:
        diff = sorted(k for k in {*have, *want} if have.get(k) != want.get(k))
        raise InjectedTableError(
            f"{sp}: built with other settings than world.lm_readout.injected ({', '.join(diff)}: "
            f"table {[have.get(k) for k in diff]}, config {[want.get(k) for k in diff]})"
        )
    rows = read_rows(d / "candidates.jsonl")
    for i, r in enumerate(rows, 1):
        if not (
            isinstance(r, dict)
            and isinstance(r.get("task_id"), str)
            and isinstance(r.get("origin"), str)
            and isinstance(r.get("candidates"), list)
            and all(isinstance(c, dict) and isinstance(c.get("fix"), bool | int) for c in r["candidates"])
        ):
            raise InjectedTableError(f"{d / 'candidates.jsonl'}:{i}: not an injected state row")
    return rows


def injected_states(settings: Any, tasks: Mapping[str, Any]) -> list[tuple[str, str, Any]]:
    """(origin task id, state id, the task with the injected bug as its program) for every task
    with a reference, ``settings.per_problem`` bugs each."""
    from rsi_workbench.domains.code_repair.coder import inject_bugs

    out = []
    for tid in sorted(tasks):
        t = tasks[tid]
        if not t.reference:
            continue
        rng = random.Random(f"{settings.seed}:{tid}:inject")
        for i, bug in enumerate(inject_bugs(t.reference, t.entry_point, settings.per_problem, rng)):
            sid = f"{tid}#injected{i}"
            out.append((tid, sid, t.model_copy(update={"task_id": sid, "program": bug.program})))
    return out


def build_injected(settings: Any, tasks: Mapping[str, Any], out: Path, env: Any) -> list[dict[str, Any]]:
    """The injected states' candidate rows (module doc), built where missing (resumable) with the
    experiment environment ``env``'s sandbox and executor."""
    from rsi_workbench.domains.code_repair.binding import CodeRepairEnvironment, ExecutionCache
    from rsi_workbench.domains.code_repair.pools import read_rows, task_row

    d = injected_dir(settings, out)
    d.mkdir(parents=True, exist_ok=True)
    (d / "settings.json").write_text(json.dumps(_key_settings(settings), sort_keys=True) + "\n")
    path = d / "candidates.jsonl"
    rows = read_rows(path, repair=True)
    have = {r["task_id"] for r in rows}
    copied = [r for r in table_rows(settings) if r["task_id"] not in have]
    if copied:
        with open(path, "a") as f:
            f.write("".join(json.dumps(r, sort_keys=True) + "\n" for r in copied))
            f.flush()
            os.fsync(f.fileno())
        rows.extend(copied)
    done = {r["task_id"] for r in rows}
    states = injected_states(settings, tasks)
    todo = [s for s in states if s[1] not in done]
    if todo:
        benv = CodeRepairEnvironment(
            [t for _, _, t in todo],
            env.sandbox,
            executor=env.executor,
            cache=ExecutionCache(d / "exec_cache.jsonl"),
        )
        for origin, _sid, task in todo:
            row = {**task_row(benv, task, settings.candidates, settings.seed), "origin": origin}
            with open(path, "a") as f:
                f.write(json.dumps(row, sort_keys=True) + "\n")
                f.flush()
                os.fsync(f.fileno())
            rows.append(row)
    order = {sid: i for i, (_, sid, _) in enumerate(states)}
    return sorted((r for r in rows if r["task_id"] in order), key=lambda r: order[r["task_id"]])


def injected_training_rows(
    settings: Any, tasks: Mapping[str, Any], out: Path, env: Any
) -> dict[str, list[Row]]:
    """Per origin task, the (features, fix label) rows of its injected states' pooled candidates."""
    from rsi_workbench.domains.code_repair.lm_ranker import candidate_features
    from rsi_workbench.domains.code_repair.pools import POOL_SIZE, draw_pools
    from rsi_workbench.domains.code_repair.rank_pools import _meta

    per: dict[str, list[Row]] = {}
    for row in build_injected(settings, tasks, out, env):
        idx = sorted(
            {i for p in draw_pools(row, settings.pools_per_state, settings.seed) for i in p["candidates"]}
        )
        cands = row["candidates"]
        assert not idx or len(idx) >= POOL_SIZE
        per.setdefault(row["origin"], []).extend(
            (candidate_features(_meta(cands[i]), None, None), float(cands[i]["fix"])) for i in idx
        )
    return {t: rs for t, rs in sorted(per.items()) if rs}


def injected_summary(rows: list[dict[str, Any]]) -> dict[str, int]:
    """States, candidates, fixes and states with a fix of injected rows (for a run's record)."""
    return {
        "states": len(rows),
        "candidates": sum(len(r["candidates"]) for r in rows),
        "fixes": sum(c["fix"] for r in rows for c in r["candidates"]),
        "fixable_states": sum(any(c["fix"] for c in r["candidates"]) for r in rows),
    }


__all__ = [
    "InjectedTableError",
    "build_injected",
    "injected_dir",
    "injected_states",
    "injected_summary",
    "injected_training_rows",
    "table_rows",
]
