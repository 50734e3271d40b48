"""``configs/rsiagent/smoke.yaml`` end to end in Debian's headless Chromium with the built-in roles: both
arms finish, the no-RSI arm learns nothing, the full arm's memory holds a verified script and its
frozen evaluation used exactly the frozen snapshot, the report's shape, and an idempotent resume."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from rsi_workbench.cli import load_experiment_config, main
from rsi_workbench.records import Run

pytestmark = pytest.mark.ui

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def smoke_run(rsiagent_run: Path) -> Path:
    """The shared smoke run (tests/conftest.py's ``rsiagent_run``, built once per source version)."""
    return rsiagent_run


def test_both_arms_finish_and_memory_is_frozen_and_used(smoke_run: Path) -> None:
    run = Run.open(smoke_run)
    arms = {e.payload["ablation"]: e.payload for e in run.events("arm_finished")}
    assert set(arms) == {"none", "full"} and run.events("experiment_finished")
    none, full = arms["none"], arms["full"]
    assert none["episodes"] == 0 and none["memory_stats"]["n_files"] == 0
    assert full["episodes"] > 0 and full["brs_projects"] >= 1
    for a in (none, full):
        assert 0.0 <= a["partial"] <= 100.0 and set(a["scores"]) == set(a["targets"])
    sub = Run.open(smoke_run / full["run_dir"])
    evals = sub.events("memory_evaluation")
    assert evals and all(e.payload["memory"] == full["frozen_hash"] for e in evals)
    kinds = {e.kind for e in sub.events()}
    assert {"memory_wave_committed", "memory_outcome", "memory_handoff", "memory_curve_point"} <= kinds
    outcomes = [e.payload for e in sub.events("memory_outcome")]
    assert any(o["verdict"] == "PASS" for o in outcomes)


def test_report_shape(smoke_run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(smoke_run)]) == 0
    out = capsys.readouterr().out
    assert "| target set | targets/seed | seeds | no-RSI Partial | no-RSI Binary |" in out
    assert "| all | 1 | 1 |" in out and "learning episodes" in out
    assert "Recursion curves" in out and "full RSI  seed 0: 0i:" in out
    assert "not finished" not in out


def test_resume_of_a_finished_run_adds_nothing(smoke_run: Path, tmp_path: Path) -> None:
    from rsi_workbench.experiments.rsiagent import run_experiment

    copy = tmp_path / "smoke"  # the shared run stays untouched
    shutil.copytree(smoke_run, copy)
    before = len(Run.open(copy).events())
    run_experiment(load_experiment_config(ROOT / "configs/rsiagent/smoke.yaml"), copy, resume=True)
    assert len(Run.open(copy).events()) == before


def test_host_only_texts_are_the_target_utterances_and_the_audit_uses_them(smoke_run: Path) -> None:
    from rsi_workbench.experiments.rsiagent.experiment import build_arm
    from rsi_workbench.memory import MemoryTree
    from rsi_workbench.memory.audit import shingle_audit
    from rsi_workbench.memory.snapshots import load_snapshot

    cfg = load_experiment_config(ROOT / "configs/rsiagent/smoke.yaml")
    env = build_arm(cfg, 0)[0]
    texts = env.host_only_texts()  # [target utterance, target page source]
    assert len(texts) == 2 and texts[0].startswith("Select") and "<html" in texts[1].lower()
    full = next(
        e.payload for e in Run.open(smoke_run).events("arm_finished") if e.payload["ablation"] == "full"
    )
    frozen = load_snapshot(Run.open(smoke_run / full["run_dir"]), full["frozen_hash"])
    leaky = MemoryTree({**frozen.files, "lessons/leak.md": f"note: {texts[0]} (copied)"})
    res = shingle_audit(leaky, texts, cfg.engine.shingle_n)  # short utterances: whole-text shingles
    assert res.rejected == ("lessons/leak.md",)  # the learned memory itself passes the audit
