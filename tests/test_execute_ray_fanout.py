"""Experiment-level fan-out on Ray: (method, seed) runs and dreaming arms as tasks, a worker killed
mid-run, a dead holder's writer lock, the GPU request of heavy tasks, and an unreachable cluster address."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from rsi_workbench.execute import ExecutorConfig
from rsi_workbench.execute.writer_lock import WriterLock, WriterLockHeld, holder_alive, pid_alive


# ---------------------------------------------------------------------------------------------
# the writer lock (no Ray)
# ---------------------------------------------------------------------------------------------
def test_writer_lock_is_taken_over_only_from_a_dead_holder(tmp_path: Path) -> None:
    with WriterLock(tmp_path) as lock:
        assert lock.took_over is None and (tmp_path / "writer.lock").exists()
        with pytest.raises(WriterLockHeld, match=f"pid {os.getpid()}"):
            WriterLock(tmp_path).acquire()  # a live holder (this process) keeps it
    assert not (tmp_path / "writer.lock").exists()

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()  # reaped: its pid is free
    me = WriterLock(tmp_path).me
    (tmp_path / "writer.lock").write_text(json.dumps(me | {"pid": dead.pid}))
    assert not holder_alive(me | {"pid": dead.pid})
    with WriterLock(tmp_path) as lock:
        assert lock.took_over is not None and lock.took_over["pid"] == dead.pid

    # a live pid whose start time differs is a reused pid, not the holder
    assert pid_alive(os.getpid()) and not pid_alive(os.getpid(), start_ticks=-5)
    # another host and no Ray to ask: held, and the error says how to break it
    (tmp_path / "writer.lock").write_text(json.dumps(me | {"host": "elsewhere", "node_id": None}))
    with pytest.raises(WriterLockHeld, match="on elsewhere.*delete the lock file"):
        WriterLock(tmp_path).acquire()


def test_heavy_tasks_request_the_gpu_sandbox_tasks_do_not(monkeypatch: pytest.MonkeyPatch) -> None:
    """``num_gpus`` reaches Ray's options of heavy tasks (runs, training) only (no GPU here)."""
    from rsi_workbench.execute import ray_backend

    seen: list[dict[str, Any]] = []

    class Remote:
        def options(self, **kw: Any) -> Any:
            seen.append(kw)
            return self

        def remote(self, fn: Any, *args: Any) -> Any:
            return fn(*args)

    class FakeRay:
        def is_initialized(self) -> bool:
            return True

        def cluster_resources(self) -> dict[str, float]:
            return {"CPU": 4.0, "GPU": 1.0}

        def remote(self, fn: Any) -> Remote:
            return Remote()

        def get(self, x: Any) -> Any:
            return x

    monkeypatch.setattr(ray_backend, "import_ray", lambda address=None: FakeRay())
    ex = ray_backend.RayExecutor(ExecutorConfig(kind="ray", num_gpus=1, num_cpus=2, resources={"sandbox": 1}))
    assert list(ex.run_tasks(pow, [(2, 3), (3, 2)])) == [8, 9]
    assert seen[-1]["num_gpus"] == 1 and seen[-1]["max_retries"] == 3 and seen[-1]["num_cpus"] == 2
    assert seen[-1]["retry_exceptions"] is False and seen[-1]["resources"] == {"sandbox": 1}
    ex._remote(pow)
    assert "num_gpus" not in seen[-1] and seen[-1]["num_cpus"] == 2


# ---------------------------------------------------------------------------------------------
# a tiny code-repair experiment (tests/conftest.py's code_repair_run: process pool) rerun on Ray
# ---------------------------------------------------------------------------------------------
def _table(out: Path) -> list[str]:
    """The report without lines naming the directory or giving wall times."""
    from rsi_workbench.experiments.code_repair import report

    lines, in_wall = [], False
    for ln in report(out).splitlines():
        in_wall = ln.startswith("wall time") or (in_wall and ln.startswith("  "))
        if not in_wall and str(out) not in ln:
            lines.append(ln)
    return lines


def _ray_copy(src: Path, dst: Path) -> Any:
    """A fresh experiment directory sharing ``src``'s execution cache and training transitions, and
    ``src``'s config on ``executor: {kind: ray}``."""
    from rsi_workbench.experiments.code_repair.experiment import stored_config

    dst.mkdir()
    shutil.copy(src / "exec_cache.jsonl", dst / "exec_cache.jsonl")
    shutil.copytree(src / "transitions", dst / "transitions")
    return stored_config(src).model_copy(update={"executor": ExecutorConfig(kind="ray")})


def _kinds(run_dir: Path) -> list[tuple[str, Any]]:
    return [(e["kind"], e.get("cycle")) for e in map(json.loads, (run_dir / "events.jsonl").open())]


@pytest.mark.slow
@pytest.mark.ray
def test_a_worker_killed_mid_run_is_retried_to_the_same_report(
    local_ray: Any, code_repair_run: Path, tmp_path: Path
) -> None:
    """The (method, seed) runs as Ray tasks, in Ray workers, give the process pool's report; and
    SIGKILL the worker holding one run's writer lock: Ray retries the task, the retry takes the dead
    holder's lock over and resumes the run directory; no event twice, the same report. (One test: an
    uninterrupted fan-out of the same experiment is its ``random_k`` run.)"""
    from lock_holder_kill import run_killing_lock_holder

    from rsi_workbench.experiments.code_repair import run_experiment
    from rsi_workbench.records import Run

    cfg = _ray_copy(code_repair_run, tmp_path / "ray")
    lock = tmp_path / "ray" / "runs" / "world_adaptive-seed0" / "writer.lock"
    killed = run_killing_lock_holder(lambda: run_experiment(cfg, tmp_path / "ray"), lock)
    assert killed, "the run finished before its worker could be killed"
    fin = {e.payload["run"]: e.payload for e in Run.open(tmp_path / "ray").events("run_finished")}
    assert fin["world_adaptive-seed0"]["took_over_from"]["pid"] == killed[0]
    assert len(fin) == 2 and _table(tmp_path / "ray") == _table(code_repair_run)
    assert sorted(fin) == sorted(p.name for p in (tmp_path / "ray" / "runs").iterdir())
    assert all(f["worker"]["pid"] != os.getpid() for f in fin.values())  # ran in Ray workers
    assert not list((tmp_path / "ray").glob("runs/*/writer.lock"))  # released
    for run in (tmp_path / "ray" / "runs").iterdir():
        assert _kinds(run) == _kinds(code_repair_run / "runs" / run.name)  # nothing appended twice


@pytest.mark.ray
def test_closed_port_names_the_address_and_the_experiment_resumes_locally(
    code_repair_run: Path, tmp_path: Path
) -> None:
    """A driver that cannot reach the cluster stops with the address in the error; `rsi-workbench
    resume --executor process` finishes the same directory locally."""
    pytest.importorskip("ray", reason="the ray extra is not installed")
    from rsi_workbench.cli import main
    from rsi_workbench.experiments.code_repair import run_experiment

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cfg = _ray_copy(code_repair_run, tmp_path / "exp")
    cfg = cfg.model_copy(update={"executor": ExecutorConfig(kind="ray", address=f"127.0.0.1:{port}")})
    with pytest.raises(ConnectionError, match=f"127.0.0.1:{port}"):
        run_experiment(cfg, tmp_path / "exp")
    assert main(["resume", str(tmp_path / "exp"), "--executor", "process"]) == 0
    assert _table(tmp_path / "exp") == _table(code_repair_run)


# ---------------------------------------------------------------------------------------------
# the dreaming smoke config's arms as Ray tasks (tests/conftest.py's dreaming_run: the same config
# on its own `executor: serial`)
# ---------------------------------------------------------------------------------------------
def _dreaming_table(out: Path) -> list[str]:
    """The dreaming report without the line naming the directory, the wall-time lines and the tree
    table's last column (``wall s``)."""
    from rsi_workbench.experiments.dreaming.experiment import report

    lines, in_wall, in_trees = [], False, False
    for ln in report(out).splitlines():
        in_wall = ln.startswith("wall time") or (in_wall and ln.startswith("  "))
        in_trees = ln.rstrip().endswith("wall s") or (in_trees and ln.strip() != "")
        if not in_wall and str(out) not in ln:
            lines.append(ln.rsplit(None, 1)[0] if in_trees else ln)
    return lines


@pytest.mark.slow
@pytest.mark.ray
def test_dreaming_arms_on_ray_give_the_serial_report(
    local_ray: Any, dreaming_run: Path, tmp_path: Path
) -> None:
    """Each arm of the smoke config runs as one Ray task (in a worker, under its sub-run's writer
    lock); the driver alone appends ``arm_finished``; the report equals the serial run's."""
    from rsi_workbench.experiments.dreaming.experiment import Config, run_experiment
    from rsi_workbench.records import Run

    base = Run.open(dreaming_run).config
    cfg = Config.model_validate(base | {"executor": {"kind": "ray"}})
    out = run_experiment(cfg, tmp_path / "ray")
    assert _dreaming_table(out) == _dreaming_table(dreaming_run)
    fins = [e.payload for e in Run.open(out).events("arm_finished")]
    assert [(f["arm"], f["seed"]) for f in fins] == [(a, s) for s in cfg.seeds for a in cfg.arms]
    assert not list(out.glob("arms/*/writer.lock"))  # released by each task
    for arm in (out / "arms").iterdir():
        assert _kinds(arm) == _kinds(dreaming_run / "arms" / arm.name)
