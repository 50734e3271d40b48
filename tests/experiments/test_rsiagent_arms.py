"""Per-arm settings of the ``rsiagent`` experiment (``arms:``): merged over the shared blocks, bad keys named
by arm before any run directory exists, and each arm's engine run and frozen arm config get its own."""

from __future__ import annotations

from pathlib import Path

import pytest

from rsi_workbench.experiments.rsiagent.experiment import Config, arm_settings, build_arm

BASE = {
    "environment": {"kind": "miniwob", "targets": [{"page": "click-checkboxes"}]},
    "ablations": ["brs_only", "full"],
    "engine": {"project_budget": 8, "max_waves": 2, "drs_order": "seeded"},
    "curriculum": {"cover_passes": 2, "brs_pages": "others", "transfer_pages": ["click-button"]},
}


def test_an_arms_block_overrides_only_its_arm() -> None:
    cfg = Config.model_validate(
        {
            **BASE,
            "arms": {
                "brs_only": {
                    "engine": {"project_budget": 14, "max_waves": 9},
                    "curriculum": {"cover_passes": 9},
                }
            },
        }
    )
    brs, full = arm_settings(cfg, "brs_only", 4), arm_settings(cfg, "full", 4)
    assert (brs.project_budget, brs.max_waves, brs.ablation, brs.seed, brs.drs_order) == (
        14,
        9,
        "brs_only",
        4,
        "seeded",
    )
    assert (full.project_budget, full.max_waves, full.ablation) == (8, 2, "full")
    assert cfg.curriculum_of("brs_only").cover_passes == 9 and cfg.curriculum_of("full").cover_passes == 2
    assert cfg.curriculum_of("brs_only").transfer_pages == ["click-button"]  # the rest is the shared block
    assert (
        build_arm(cfg, 0, "brs_only")[3].cover_passes == 9 and build_arm(cfg, 0, "full")[3].cover_passes == 2
    )
    assert Config.model_validate(cfg.run_config()) == cfg  # the frozen config validates again (resume)


@pytest.mark.parametrize(
    ("arms", "words"),
    [
        ({"brs_only": {"engine": {"project_budgt": 14}}}, ["arms.brs_only", "project_budgt"]),
        ({"full": {"curriculum": {"cover_passes": 0}}}, ["arms.full", "cover_passes"]),
        ({"drs_only": {"engine": {"seed": 3}}}, ["arms.drs_only.engine", "seed"]),
        ({"oracle": {"engine": {}}}, ["arms", "oracle"]),
    ],
)
def test_a_bad_arms_block_is_named_before_any_run(tmp_path: Path, arms: dict, words: list[str]) -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError) as err:
        Config.model_validate({**BASE, "arms": arms})
    assert all(w in str(err.value) for w in words)
    assert not list(tmp_path.iterdir())
