"""E0 transitions read out of a code-repair experiment directory (e.g. one with the LLM coder).

Every recorded proposal of every (method, seed) run is a state (its program and public outcomes)
with its candidates. Each **valid** candidate becomes a :class:`~rsi_workbench.domains.code_repair.world_transitions.Transition` with
its outcomes on every public and hidden test, taken from the experiment's execution cache (the
metric-only audit executed them) or, when missing there, executed now in the sandbox. Invalid
candidates (eq. 7: never executed) are left out and counted. States are deduplicated by (task,
program) across methods, seeds and rounds, candidates by program within a state; a state's
``source`` is ``humanevalfix`` for the task's own bug and for later kept programs alike (all are
states of the experiment's tasks). Hidden outcomes are labels here, never model inputs.

``python -m studies.code_repair_world_compare.world_from_experiment EXP_DIR --out t.jsonl``
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from rsi_workbench.domains.code_repair.world_encoding import outcome_dict
from rsi_workbench.domains.code_repair.world_transitions import Transition, problem_of
from rsi_workbench.records import Run


def is_experiment_dir(path: str | Path) -> bool:
    """A code-repair experiment directory (``config.json`` of ``experiment: code_repair`` + ``runs/``)."""
    p = Path(path)
    try:
        cfg = json.loads((p / "config.json").read_text())
    except (OSError, ValueError):
        return False
    return cfg.get("experiment") == "code_repair" and (p / "runs").is_dir()


def _cache(exp: Path) -> Any:
    """The experiment's execution cache, read into memory (nothing is written back to it)."""
    from rsi_workbench.domains.code_repair.binding import ExecutionCache

    cache = ExecutionCache()
    path = exp / "exec_cache.jsonl"
    if path.exists():
        for line in path.read_text().splitlines():
            try:
                row = json.loads(line)
                cache.data[str(row["key"])] = row["outcomes"]
            except (ValueError, KeyError, TypeError):
                continue  # a torn last line: that execution is simply run again
    return cache


def transitions_from_experiment(
    exp_dir: str | Path, sandbox: Any = None
) -> tuple[list[Transition], dict[str, int]]:
    """(transitions, counts) of every valid recorded candidate of the experiment's runs."""
    from rsi_workbench.domains.code_repair.binding import CodeRepairEnvironment
    from rsi_workbench.domains.code_repair.sandbox import Sandbox
    from rsi_workbench.domains.code_repair.task_source import load_tasks
    from rsi_workbench.experiments.code_repair.config import stored_config

    exp = Path(exp_dir)
    config = stored_config(exp)
    env = CodeRepairEnvironment(load_tasks(config.tasks), sandbox or Sandbox(), cache=_cache(exp))
    counts = {"proposals": 0, "candidates": 0, "invalid": 0, "duplicate": 0}
    states: dict[tuple[str, str], tuple[list[dict[str, Any]], dict[str, None]]] = {}
    for run_dir in sorted((exp / "runs").iterdir()):
        if not (run_dir / "config.json").exists():
            continue
        for e in Run.open(run_dir).events("proposal"):
            p = e.payload
            counts["proposals"] += 1
            st = states.setdefault((p["task_id"], p["state"]["program"]), (p["state"]["outcomes"], {}))
            for c in p["candidates"]:
                counts["candidates"] += 1
                prog = p["actions"][c.get("slot", c["index"])]["program"]
                if not c["valid"]:
                    counts["invalid"] += 1
                elif prog in st[1]:
                    counts["duplicate"] += 1
                else:
                    st[1][prog] = None
    out: list[Transition] = []
    for (task_id, program), (public, cands) in states.items():
        progs = list(cands)
        if not progs:
            continue
        pub = env.run(task_id, progs, "public", trace=True)
        hid = env.run(task_id, progs, "hidden")
        group = f"{task_id}#state-{hashlib.sha256(program.encode()).hexdigest()[:10]}"
        state_public = [{k: o[k] for k in ("test_id", "status", "runtime_s", "message")} for o in public]
        for prog, po, ho in zip(progs, pub, hid, strict=True):
            out.append(
                Transition(
                    group,
                    task_id,
                    problem_of(task_id),
                    "humanevalfix",
                    program,
                    state_public,
                    prog,
                    [outcome_dict(o) for o in po],
                    [outcome_dict(o) for o in ho],
                )
            )
    counts.update(states=len({t.group_id for t in out}), transitions=len(out))
    return out, counts


def write_jsonl(transitions: Sequence[Transition], path: str | Path) -> None:
    """One :class:`Transition` per line (what ``world_compare`` reads)."""
    Path(path).write_text("".join(json.dumps(asdict(t)) + "\n" for t in transitions))


def main(argv: Sequence[str] | None = None) -> None:
    import argparse

    ap = argparse.ArgumentParser(prog="world_from_experiment", description=__doc__.split("\n")[0])
    ap.add_argument("experiment", help="a code-repair experiment directory")
    ap.add_argument("--out", required=True, help="the transitions JSONL to write")
    a = ap.parse_args(argv)
    trans, counts = transitions_from_experiment(a.experiment)
    write_jsonl(trans, a.out)
    print(f"{a.out}: {counts}")


if __name__ == "__main__":
    main()
