"""An OpenEvolve task directory is copied, never followed (run as root in the main pytest run and
again as ``nobody``): a link in it (to a file, to a directory, a loop) or a special file is refused
before anything runs, naming the entry; the staged copy holds only what was walked, is readable only
by the sandbox's user, and is removed at exit or, after a SIGKILL, at the next start."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

from rsi_workbench.cli import load_experiment_config, main
from rsi_workbench.config import ConfigError
from rsi_workbench.domains.openevolve import load_task
from rsi_workbench.domains.openevolve import task as oe
from rsi_workbench.domains.openevolve.task import OpenEvolveTaskError, clean_stale_stages, stage_task
from rsi_workbench.sandbox.plan import SANDBOX_UID

REPO = Path(__file__).resolve().parents[2]
INITIAL = "# EVOLVE-BLOCK-START\nX = 2\n# EVOLVE-BLOCK-END\n"
EVALUATOR = "def evaluate(program_path):\n    return {'combined_score': 1.0}\n"


def _task(tmp_path: Path) -> Path:
    d = tmp_path / "task"
    d.mkdir()
    (d / "initial_program.py").write_text(INITIAL)
    (d / "evaluator.py").write_text(EVALUATOR)
    return d


def _secret(tmp_path: Path) -> Path:
    s = tmp_path / "secret.txt"
    s.write_text("host secret\n")
    s.chmod(0o600)
    return s


def test_a_file_link_is_refused_naming_it(tmp_path: Path) -> None:
    d = _task(tmp_path)
    (d / "data.txt").symlink_to(_secret(tmp_path))
    with pytest.raises(OpenEvolveTaskError, match=r"data.txt: a symbolic link \(to .*secret.txt\)"):
        load_task(d)


def test_a_link_in_place_of_a_required_file_is_refused(tmp_path: Path) -> None:
    d = _task(tmp_path)
    real = tmp_path / "elsewhere.py"
    (d / "evaluator.py").rename(real)
    (d / "evaluator.py").symlink_to(real)
    with pytest.raises(OpenEvolveTaskError, match=r"evaluator.py: a symbolic link"):
        load_task(d)


def test_a_directory_link_and_a_loop_are_refused(tmp_path: Path) -> None:
    d = _task(tmp_path)
    big = tmp_path / "big"
    big.mkdir()
    (big / "blob").write_bytes(b"x" * 1024)
    (d / "sub").mkdir()
    (d / "sub" / "data").symlink_to(big, target_is_directory=True)
    with pytest.raises(OpenEvolveTaskError, match=r"sub/data: a symbolic link"):
        load_task(d)
    (d / "sub" / "data").unlink()
    (d / "sub" / "loop").symlink_to(d / "sub", target_is_directory=True)
    with pytest.raises(OpenEvolveTaskError, match=r"sub/loop: a symbolic link"):
        load_task(d)
    (d / "sub" / "loop").unlink()
    os.mkfifo(d / "pipe")  # a FIFO would stall the copy
    with pytest.raises(OpenEvolveTaskError, match=r"pipe: not a regular file or a directory"):
        load_task(d)


def test_the_config_is_refused_before_a_run_directory_exists(tmp_path: Path) -> None:
    d = _task(tmp_path)
    (d / "data.txt").symlink_to(_secret(tmp_path))
    cfg = tmp_path / "c.yaml"
    cfg.write_text("experiment: program_agent\ntask: {kind: openevolve, dir: task}\narms: [mutate]\n")
    with pytest.raises(ConfigError, match=r"data.txt: a symbolic link"):
        load_experiment_config(cfg)
    out = tmp_path / "run"
    assert main(["run", str(cfg), "--out", str(out)]) == 2
    assert not out.exists()


def test_the_size_cap_counts_what_is_copied(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    d = _task(tmp_path)
    monkeypatch.setattr(oe, "MAX_TASK_BYTES", 4096)
    (d / "data").mkdir()
    (d / "data" / "blob").write_bytes(b"x" * 5000)
    with pytest.raises(OpenEvolveTaskError, match="more than 4096 bytes"):
        load_task(d)
    (d / "data" / "blob").unlink()
    (d / "__pycache__").mkdir()
    (d / "__pycache__" / "skip.pyc").write_bytes(b"x" * 5000)  # not copied, not counted
    load_task(d)


def test_the_staged_copy_is_private_and_holds_what_was_walked(tmp_path: Path) -> None:
    d = _task(tmp_path)
    (d / "sub").mkdir()
    (d / "sub" / "table.csv").write_text("1,2\n")
    stage = stage_task(d, "digest-perm-test")
    try:
        assert stage.name.startswith(f"rsi-openevolve-{os.getpid()}-")
        owner = SANDBOX_UID if os.geteuid() == 0 else os.geteuid()
        files = sorted(p.relative_to(stage / "task").as_posix() for p in (stage / "task").rglob("*"))
        assert files == ["evaluator.py", "initial_program.py", "sub", "sub/table.csv"]
        for p in [stage, *stage.rglob("*")]:
            st = p.lstat()
            assert not stat.S_ISLNK(st.st_mode)
            assert st.st_uid == owner, p
            assert stat.S_IMODE(st.st_mode) == (0o700 if p.is_dir() else 0o600), p
    finally:
        oe._cleanup_staged()
    assert not stage.exists()


def test_a_killed_runs_copy_is_removed_at_the_next_start(tmp_path: Path) -> None:
    d = _task(tmp_path)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    tmp.chmod(0o1777)
    child = textwrap.dedent(
        f"""
        import os, sys, tempfile, time
        from pathlib import Path
        tempfile.tempdir = {str(tmp)!r}
        from rsi_workbench.domains.openevolve.task import stage_task
        print(stage_task(Path({str(d)!r}), "digest-kill-test"), flush=True)
        time.sleep(120)
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", child], stdout=subprocess.PIPE, text=True, cwd=REPO)
    try:
        assert proc.stdout is not None
        staged = Path(proc.stdout.readline().strip())
        assert staged.is_dir() and staged.parent == tmp
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert staged.is_dir()  # SIGKILL runs no exit handler
    other = Path(tempfile.mkdtemp(prefix=f"rsi-openevolve-{os.getpid()}-", dir=tmp))  # alive: kept
    assert clean_stale_stages(str(tmp)) == [staged]
    assert not staged.exists() and other.is_dir()
