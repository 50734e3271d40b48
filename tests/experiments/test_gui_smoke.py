"""``configs/gui/smoke.yaml`` end to end in Debian's headless Chromium (one browser, about 20 episodes):
the run's events, the test/train disjointness by content, the report's shape, and an idempotent resume."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from rsi_workbench.cli import load_experiment_config, main
from rsi_workbench.records import Run

pytestmark = pytest.mark.ui

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def gui_smoke_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("miniwob")
    pytest.importorskip("selenium")
    from rsi_workbench.domains.gui.browser import CHROMEDRIVER, CHROMIUM

    if not (shutil.which(CHROMIUM) and shutil.which(CHROMEDRIVER)):
        pytest.skip("Debian chromium + chromium-driver are not installed (make sysdeps)")
    from rsi_workbench.experiments.gui import run_experiment

    cfg = load_experiment_config(ROOT / "configs/gui/smoke.yaml")
    return run_experiment(cfg, tmp_path_factory.mktemp("gui") / "smoke")


def test_smoke_run_records_every_tier_and_generation(gui_smoke_run: Path) -> None:
    run = Run.open(gui_smoke_run)
    cfg = run.config
    gens = run.events("generation_finished")
    assert {(g.payload["method"], g.payload["generation"]) for g in gens} == {("rsi", 1), ("world_based", 1)}
    tiers = run.events("tier")
    assert {(t.payload["method"], t.payload["tier"]) for t in tiers} == {
        (m, t) for m in ("rsi", "world_based") for t in (0, 1)
    }
    eps = run.events("test_episode")
    pairs = {t.payload["pair"] for t in tiers}
    assert {e.payload["pair"] for e in eps} == pairs
    for e in eps:
        p = e.payload
        assert p["evidence"] == "E0" and p["n_actions"] <= cfg["max_actions"]
        assert p["success"] == (p["outcome"] == "done" and p["raw_reward"] == 1.0)
    # the world-based control never changes its policy; both start from the same untrained pair
    control = {t.payload["tier"]: t.payload for t in tiers if t.payload["method"] == "world_based"}
    assert control[0]["policy_version"] == control[1]["policy_version"]
    rsi0 = next(t.payload for t in tiers if t.payload["method"] == "rsi" and t.payload["tier"] == 0)
    assert rsi0["pair"] == control[0]["pair"]
    # every generation is a protocol run whose splits hold the declared episode counts
    for g in gens:
        assert len(g.payload["splits"]["gate"]) == cfg["gate_episodes"]
        assert len(g.payload["splits"]["update"]) == cfg["train_episodes"]
        sub = Run.open(gui_smoke_run / g.payload["run_dir"])
        kinds = {e.kind for e in sub.events()}
        assert {"reliability", "adaptation_trigger", "policy_trigger", "gate", "retain"} <= kinds


def test_test_instances_are_disjoint_from_training_and_gate_episodes(gui_smoke_run: Path) -> None:
    inst = Run.open(gui_smoke_run).events("instances")[0].payload
    test_keys = {k for _, k in inst["test"]}
    episode_keys = [r[1] for rows in inst["episodes"].values() for r in rows]
    assert len(test_keys) == len(inst["test"]) and len(episode_keys) == len(set(episode_keys))
    assert not test_keys & set(episode_keys)
    test_seeds = {s for s, _ in inst["test"]}
    assert not test_seeds & {r[0] for rows in inst["episodes"].values() for r in rows}


def test_report_shape(gui_smoke_run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(gui_smoke_run)]) == 0
    out = capsys.readouterr().out
    assert "| method | tier | episodes | success [95% CI] | mean actions [95% CI] | wrong submits |" in out
    assert "| rsi | 0 |" in out and "| world_based | 1 |" in out
    assert "| tier | rsi success | world-based control success | paper rsi | paper control |" in out
    assert "reliability" in out and "retained" in out and "gates" in out
    assert "asserted" in out and "not finished" not in out


def test_resume_of_a_finished_run_adds_nothing(gui_smoke_run: Path) -> None:
    from rsi_workbench.experiments.gui import run_experiment

    before = len(Run.open(gui_smoke_run).events())
    cfg = load_experiment_config(ROOT / "configs/gui/smoke.yaml")
    run_experiment(cfg, gui_smoke_run, resume=True)
    evs = Run.open(gui_smoke_run).events()
    assert len(evs) == before
