"""``tests/experiments/gui_competent_tiny.yaml`` end to end in headless Chromium: tier 0 pretrained on
click-option and shared by all three arms, each arm updating only what it declares, the provenance of
the starting pair in the run, and the report's policy-only column, per-seed table and tier-0 line."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from rsi_workbench.cli import load_experiment_config, main
from rsi_workbench.records import Run

pytestmark = pytest.mark.ui

CONFIG = Path(__file__).parent / "gui_competent_tiny.yaml"


@pytest.fixture(scope="module")
def competent_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("miniwob")
    pytest.importorskip("selenium")
    from rsi_workbench.domains.gui.browser import CHROMEDRIVER, CHROMIUM

    if not (shutil.which(CHROMIUM) and shutil.which(CHROMEDRIVER)):
        pytest.skip("Debian chromium + chromium-driver are not installed (make sysdeps)")
    from rsi_workbench.experiments.gui import run_experiment

    return run_experiment(load_experiment_config(CONFIG), tmp_path_factory.mktemp("gui") / "competent")


def test_every_arm_starts_from_the_pretrained_pair(competent_run: Path) -> None:
    run = Run.open(competent_run)
    ip = run.events("initial_pair")
    assert len(ip) == 1 and ip[0].payload["task"] == "click-option"
    assert run.config["initial_pair"] == ip[0].payload["settings"]
    assert (competent_run / "pretrain" / "gen1").is_dir()
    tiers = {(t.payload["method"], t.payload["tier"]): t.payload for t in run.events("tier")}
    assert {m for m, _ in tiers} == {"rsi", "world_based", "policy_only"}
    for m in ("rsi", "world_based", "policy_only"):
        assert tiers[(m, 0)]["policy_artifact"] == ip[0].payload["policy_artifact"]
        assert tiers[(m, 0)]["predictor_artifact"] == ip[0].payload["predictor_artifact"]
    # world_based keeps the policy, policy_only keeps the world model
    assert tiers[("world_based", 1)]["policy_version"] == tiers[("world_based", 0)]["policy_version"]
    assert tiers[("policy_only", 1)]["predictor_version"] == tiers[("policy_only", 0)]["predictor_version"]
    eps = run.events("test_episode")
    assert {e.payload["pair"] for e in eps} == {t["pair"] for t in tiers.values()}


def test_report_shows_the_arms_per_seed_and_the_starting_pair(
    competent_run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["report", str(competent_run)]) == 0
    out = capsys.readouterr().out
    assert "| tier | rsi success | world-based control success | policy-only success |" in out
    assert (
        "tier 0: pretrained on click-option (1 generation(s) of 2 training + 1 gate episodes, seed 0" in out
    )
    assert "| policy_only | 0 |" in out and "rsi − policy_only: tier 0: +0.0" in out
    assert "not finished" not in out


def test_resume_adds_nothing(competent_run: Path) -> None:
    from rsi_workbench.experiments.gui import run_experiment

    before = len(Run.open(competent_run).events())
    run_experiment(load_experiment_config(CONFIG), competent_run, resume=True)
    assert len(Run.open(competent_run).events()) == before
