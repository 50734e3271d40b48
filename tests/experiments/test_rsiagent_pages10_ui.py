"""``configs/rsiagent/pages10_smoke.yaml`` in Debian's headless Chromium (built-in roles): the learning
cap binds and is recorded, every learning episode is audited beside its raw reward, the fresh
instances are disjoint from every practised and tested one, seeds take different targets, and the
page check on one page, with and without reloading between candidates (issue 35 item 2)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from rsi_workbench.cli import load_experiment_config
from rsi_workbench.records import Run

pytestmark = pytest.mark.ui

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def browser() -> None:
    pytest.importorskip("miniwob")
    pytest.importorskip("selenium")
    from rsi_workbench.domains.gui.browser import CHROMEDRIVER, CHROMIUM

    if not (shutil.which(CHROMIUM) and shutil.which(CHROMEDRIVER)):
        pytest.skip("Debian chromium + chromium-driver are not installed (make sysdeps)")


def test_capped_audited_arm_with_fresh_instances(browser: None, tmp_path: Path) -> None:
    from rsi_workbench.domains.gui.rsiagent.matched import AUDIT, FRESH, audit_events
    from rsi_workbench.domains.gui.rsiagent.miniwob import FRESH_BASE, SPAN, target_seed_for
    from rsi_workbench.experiments.rsiagent import run_experiment
    from studies.rsiagent_matched_report.matched_report import summary, tables

    config = load_experiment_config(ROOT / "configs/rsiagent/pages10_smoke.yaml")
    out = run_experiment(config, tmp_path / "run")
    (arm,) = [e.payload for e in Run.open(out).events("arm_finished")]
    assert arm["learning_episodes_cap"] == 2 and arm["learning_episodes_spent"] == 2
    sub = Run.open(out / arm["run_dir"])
    branches = [e.payload for e in sub.events("memory_branch")]
    assert any(b["status"] == "rejected" and "budget (2) is spent" in b["error"] for b in branches)
    audit = audit_events(sub)
    assert len(audit) == 2 == len(sub.events(AUDIT))
    assert all(r["verdict"] in ("PASS", "FAIL") and r["raw_reward"] is not None for r in audit)
    assert arm["audit"]["all"]["episodes"] == 2
    fresh = [e.payload for e in sub.events(FRESH)]
    target = target_seed_for("rsiagent-miniwob", "click-checkboxes", 0, 0, vary_template=True)
    practised = {e.payload["seed"] for e in sub.events(AUDIT)} | {target}  # MiniWoB++ seeds played
    assert len(fresh) == 2 and all(FRESH_BASE <= f["seed"] < FRESH_BASE + SPAN for f in fresh)
    assert not {f["seed"] for f in fresh} & practised
    assert list(arm["fresh"]) == ["t-click-checkboxes-0"] and len(arm["fresh"]["t-click-checkboxes-0"]) == 2
    text = tables(summary(out))
    assert "| full RSI |" in text and "verifier audit" in text
    # resume of the finished experiment adds nothing
    before = len(Run.open(out).events())
    run_experiment(config, out, resume=True)
    assert len(Run.open(out).events()) == before


def test_seeds_take_different_targets(browser: None) -> None:
    from rsi_workbench.domains.gui import EpisodeLimits
    from rsi_workbench.domains.gui.rsiagent.miniwob import MiniwobEnvironment, MiniwobWorkspace

    seeds = []
    for sd in range(3):
        env = MiniwobEnvironment([("email-inbox-delete", 1)], seed=sd, vary_template=True)
        seeds.append(env.target_pages()["t-email-inbox-delete-0"][1])
    assert len(set(seeds)) == 3
    ws = MiniwobWorkspace("email-inbox-delete", seeds[0], "host", EpisodeLimits())
    try:
        utterances = set()
        for s in seeds:
            ws.seed = s
            utterances.add(ws.observe().utterance)
    finally:
        ws.close()
    assert len(utterances) == 3


def test_page_check_on_one_page(browser: None) -> None:
    from studies.rsiagent_page_check.page_check import check_page

    r = check_page("click-button", 1, 4)
    assert r["reachable"] and r["reached"] == 1 and r["verifier_family"] == "click"
    (inst,) = r["instances"]
    assert inst["first_success_rank"] is not None and inst["tried"][-1]["raw_reward"] == 1.0


def test_page_check_reload_reaches_the_date_picker(browser: None) -> None:
    from studies.rsiagent_page_check.page_check import check_page

    r = check_page("choose-date", 1, 16, reload=True)  # without reload the picker keeps earlier state
    assert r["reachable"] and r["instances"][0]["tried"][-1]["candidate"].startswith("datepicker:")
