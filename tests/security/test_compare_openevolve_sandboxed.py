"""``compare openevolve`` under sandbox mode ``required`` (run as root in the main pytest run and again
as ``nobody``): the unsandboxed peer is refused without ``--allow-unsandboxed-peer``; with it, the
workbench's candidates and every re-scored best still run in the sandbox, the proxy's counts match
both tools' own records, and the task directory is not written. 1 seed x 2 calls on the stub server."""

from __future__ import annotations

from pathlib import Path

import pytest

from rsi_workbench.domains.openevolve.task import task_digest

pytest.importorskip("openevolve", reason="the openevolve extra (in .[dev])")


def test_compare_under_required_mode(tmp_path: Path, monkeypatch) -> None:
    from rsi_workbench.domains.openevolve.compare import CompareError, CompareSettings, run_compare
    from rsi_workbench.records import Run
    from tests.test_compare_openevolve import EVALUATOR, INITIAL, program_double

    monkeypatch.setenv("RSI_WORKBENCH_SANDBOX_MODE", "required")
    task = tmp_path / "task"
    task.mkdir()
    (task / "initial_program.py").write_text(INITIAL)
    (task / "evaluator.py").write_text(EVALUATOR)
    before = task_digest(task)
    srv = program_double(INITIAL)
    try:
        s = CompareSettings(task, srv.base_url, "double", 2, (3,), max_tokens=256, openevolve_edit="diff")
        with pytest.raises(CompareError, match="--allow-unsandboxed-peer"):
            run_compare(s, tmp_path / "refused")
        assert srv.log == []  # refused before any call
        s = CompareSettings(
            task,
            srv.base_url,
            "double",
            2,
            (3,),
            max_tokens=256,
            openevolve_edit="diff",
            allow_unsandboxed_peer=True,
        )
        (tmp_path / "out").mkdir()
        result = run_compare(s, tmp_path / "out")
    finally:
        srv.close()
    assert len(srv.log) == 4
    assert result["sandbox"]["mode"] == "required"
    for r in result["rows"]:
        assert r["rc"] == 0, r["log_tail"]
        assert r["meter"]["calls"] == 2 and r["counts_match"], (r["meter"], r["own"])
        assert r["best_holds"] and r["best_rescored"] is not None and r["best_rescored"] > -0.09
    wb = next(r for r in result["rows"] if r["tool"] == "workbench")
    run = Run.open(Path(wb["out"]) / "run")
    plans = [e.payload.get("plan") for e in run.events("sandbox_isolation")]
    assert plans and all(p == "bwrap" for p in plans), (
        plans
    )  # required: the workbench's evaluations ran in bwrap
    assert result["task_unchanged"] and task_digest(task) == before
