"""The dreaming arm's ``recording`` block: trees grown by a broad behaviour policy with ``factor`` × the
deployed budget, candidates replayed under a node budget (the deployed budget)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from rsi_workbench.domains.math.dream_arm import ArmSettings, RecordingSettings
from rsi_workbench.experiments.dreaming.experiment import Config, run_experiment
from rsi_workbench.records import Run, load_events
from rsi_workbench.replay import DiscoveryTree


def test_recording_settings_defaults_and_validation():
    cfg = ArmSettings(calls_per_round=10, recording={})
    assert cfg.recorded_calls() == 30
    assert cfg.replay_budget() == {"node_budget": 10, "legal": "online"}
    assert ArmSettings().replay_budget() == {"node_budget": None, "legal": "recorded"}
    assert ArmSettings(calls_per_round=10).recorded_calls() == 10
    with pytest.raises(ValidationError, match="unknown behaviour family"):
        RecordingSettings(behaviour="nope")


def test_dreaming_arm_records_with_the_behaviour_policy_and_replays_under_the_budget(tmp_path):
    cfg = Config(
        task={"kind": "circle_packing", "n": 6, "maxiter": 30},
        arms=["dreaming"],
        seeds=[0],
        W=2,
        executor="serial",
        calls=12,
        calls_per_round=2,
        candidates=2,
        recording={"behaviour": "breadth_first", "factor": 3.0},
    )
    out = run_experiment(cfg, tmp_path / "exp")
    sub = Run.open(out / "arms" / "dreaming-s0")
    recorded = sub.events("tree_recorded")
    assert len(recorded) == 2
    started = sub.events("tree_started")
    assert {e.payload["policy"] for e in started} == {"breadth_first"}
    for e in recorded:
        assert len(DiscoveryTree.from_json(sub.artifacts.get_json(e.payload["artifact"]))) == 6
    rows = load_events(sub, kind="replay_tree_scored")
    assert (rows["node_budget"] == 2).all() and (rows["n"] <= 2).all()
    assert "out_of_tree_share" in rows.columns
