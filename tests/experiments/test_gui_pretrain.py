"""The GUI experiment's competent starting pair (``initial_pair``: tier 0 pretrained on another task) and
its ``policy_only`` arm, without a browser: config validation and its errors, the arms' protocol
settings, pretraining on simulated pages (provenance recorded, reloaded on resume), and a policy-only
generation that never adapts the world model."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from rsi_workbench.cli import load_experiment_config
from rsi_workbench.config import ConfigError
from rsi_workbench.domains.gui.components import ActionScoringPolicy
from rsi_workbench.domains.gui.generation import initial_pair, protocol_settings
from rsi_workbench.domains.gui.pretrain import InitialPair
from rsi_workbench.experiments.gui.experiment import Config
from rsi_workbench.records import Run, verify_children

sys.path.insert(0, str(Path(__file__).parent))
from gui_sim import SeededSimEnvironment, run_sim_generation  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def _write(tmp_path: Path, extra: str) -> Path:
    p = tmp_path / "cfg.yaml"
    p.write_text("experiment: gui\ntask: click-checkboxes\n" + extra)
    return p


def test_competent_config_declares_the_preregistered_design() -> None:
    pytest.importorskip("miniwob")
    cfg = load_experiment_config(ROOT / "configs/gui/click_checkboxes_competent.yaml")
    assert cfg.methods == ["rsi", "world_based", "policy_only"]
    assert len(cfg.seeds) == 10 and cfg.test_instances == 100 and cfg.generations == 3
    assert cfg.initial_pair is not None and cfg.initial_pair.pretrain == "click-option"
    assert cfg.run_config()["initial_pair"]["pretrain"] == "click-option"
    text = (ROOT / "configs/gui/click_checkboxes_competent.yaml").read_text()
    assert "Pre-registered" in text and "falsified" in text and "inconclusive" in text


def test_bad_initial_pair_values_name_the_file_and_field(tmp_path: Path) -> None:
    pytest.importorskip("miniwob")
    p = _write(tmp_path, "initial_pair: {pretrain: click-optoin, train_episodes: 4}\n")
    with pytest.raises(ConfigError, match=r"cfg\.yaml: initial_pair\.pretrain: unknown MiniWoB\+\+ task"):
        load_experiment_config(p)
    p = _write(tmp_path, "initial_pair: {pretrain: click-checkboxes}\n")
    with pytest.raises(ConfigError, match=r"cfg\.yaml: initial_pair\.pretrain: .*own task"):
        load_experiment_config(p)
    p = _write(tmp_path, "initial_pair: {pretrain: click-option, train_episodes: 0}\n")
    with pytest.raises(ConfigError, match=r"(?s)cfg\.yaml.*initial_pair\.train_episodes"):
        load_experiment_config(p)
    p = _write(tmp_path, "initial_pair: {pretrain: click-option, episodes: 4}\n")
    with pytest.raises(ConfigError, match=r"(?s)cfg\.yaml.*initial_pair\.episodes"):
        load_experiment_config(p)
    p = _write(tmp_path, "methods: [rsi, policy-only]\n")
    with pytest.raises(ConfigError, match=r"(?s)cfg\.yaml.*methods"):
        load_experiment_config(p)


def test_each_arm_updates_what_it_declares() -> None:
    cfg = Config()
    on = {
        m: (
            protocol_settings(cfg, m, 1).policy_update.enabled,
            protocol_settings(cfg, m, 1).adaptation.enabled,
        )
        for m in ("rsi", "world_based", "policy_only")
    }
    assert on == {"rsi": (True, True), "world_based": (False, True), "policy_only": (True, False)}
    assert "initial_pair" not in cfg.run_config()  # runs made before the field existed resume


def _pretrain_cfg() -> Config:
    return Config(
        task="click-checkboxes",
        max_actions=4,
        explore_cycles=1,
        world_steps=30,
        min_adapt_examples=8,
        min_policy_records=4,
        initial_pair=InitialPair(pretrain="click-option", train_episodes=4, gate_episodes=2, seed=3),
    )


def test_pretraining_records_its_provenance_and_reloads(tmp_path: Path) -> None:
    from rsi_workbench.domains.gui.pretrain import pretrained_pair

    cfg = _pretrain_cfg()
    out = tmp_path / "exp"
    env = SeededSimEnvironment()
    with Run.create(out, cfg.run_config(), kind="gui") as run:
        pol, world = pretrained_pair(cfg, cfg.initial_pair, run, out, env=env, content=env.content)
        ev = run.events("initial_pair")
    assert len(ev) == 1
    p = ev[0].payload
    assert p["settings"] == cfg.run_config()["initial_pair"] and p["task"] == "click-option"
    assert len(p["instances"]["1"]) == 6 and p["generations"][0]["run_dir"] == "pretrain/gen1"
    assert p["policy_version"] == pol.version and p["predictor_version"] == world.version
    gen = p["generations"][0]  # the pair is what the pretraining generation retained
    assert (gen["policy_version"], gen["predictor_version"]) == (pol.version, world.version)
    assert [c["path"] for c in p["child_runs"]] == ["pretrain/gen1"]
    assert verify_children(out, ("initial_pair",)).verified
    # every method of every seed starts from this pair
    assert initial_pair(cfg, 0, None, (pol, world))[1].version == world.version
    # resumed: the pair is reloaded from its artifacts, nothing runs again
    with Run.open(out) as run:
        n = len(run.events())
        pol2, world2 = pretrained_pair(cfg, cfg.initial_pair, run, out, env=None)
        assert (pol2.version, world2.version) == (pol.version, world.version) and len(run.events()) == n


def test_policy_only_generation_never_adapts_the_world_model(tmp_path: Path) -> None:
    cfg = Config(
        train_episodes=4,
        gate_episodes=2,
        max_actions=4,
        explore_cycles=1,
        world_steps=30,
        min_policy_records=2,
    )
    pol = ActionScoringPolicy(utility=cfg.utility.weights, always_submit=True, temperature=0.5)
    run = Run.open(run_sim_generation(tmp_path / "po", pol, cfg, method="policy_only"))
    trig = run.events("adaptation_trigger")
    assert trig and not any(e.payload["triggered"] for e in trig)
    assert all(not e.payload["conjuncts"]["path_enabled"] for e in trig)
    retained = [e.payload["predictor_version"] for e in run.events("retain")]
    assert retained and all(v.startswith("world-v0-") for v in retained)  # never fitted
    assert any(e.payload["conjuncts"]["path_enabled"] for e in run.events("policy_trigger"))


def test_the_size_sweep_needs_an_initial_pair(tmp_path: Path) -> None:
    from studies.gui_pretrain_sweep.sweep import main

    with pytest.raises(ConfigError, match=r"smoke\.yaml: initial_pair: missing"):
        main([str(ROOT / "configs/gui/smoke.yaml"), "--out", str(tmp_path / "sweep")])
