"""Reports and dashboard banners say under which sandbox isolation an experiment ran its untrusted code."""

from __future__ import annotations

from pathlib import Path

from rsi_workbench.records import Run
from rsi_workbench.sandbox import describe_isolation
from rsi_workbench.widgets.commands import isolation_line

COMPLETE = {
    "plan": "bwrap",
    "network_namespace": True,
    "pid_namespace": True,
    "private_tmp": True,
    "unprivileged_user": True,
    "hidden_host_paths": True,
    "cannot_undo": True,
    "dies_with_supervisor": True,
}


def test_describe_isolation_names_what_is_missing() -> None:
    assert describe_isolation(COMPLETE).startswith("sandbox isolation: complete (bwrap")
    line = describe_isolation({**COMPLETE, "network_namespace": False, "cannot_undo": False})
    assert "INCOMPLETE" in line and "no network" in line and "cannot undo" in line
    assert "not recorded" in describe_isolation(None)


def test_banner_finds_the_experiment_record_from_a_run_below_it(tmp_path: Path) -> None:
    exp = Run.create(tmp_path / "exp", {"experiment": "code_repair"})
    exp.append("experiment_started", {"sandbox": COMPLETE})
    exp.commit()
    Run.create(tmp_path / "exp" / "runs" / "m-seed0", {"x": 1}).commit()
    assert "complete" in (isolation_line(tmp_path / "exp") or "")
    assert "complete" in (isolation_line(tmp_path / "exp" / "runs" / "m-seed0") or "")
    plain = Run.create(tmp_path / "rx", {"experiment": "reactions"})
    plain.commit()
    assert isolation_line(tmp_path / "rx") is None  # no untrusted code, no line
