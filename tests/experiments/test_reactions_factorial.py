"""The factorial's per-arm settings (issue 32 item 3): ``updates: every_observation`` and ``decision:
expected_improvement`` are validated, map to the declared protocol settings, are recorded in the run,
and the CI smoke of ``configs/reactions/factorial.yaml`` runs them (one target, one seed)."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest

from rsi_workbench.domains.reactions.acquisition import ExpectedImprovement
from rsi_workbench.domains.reactions.arms import MethodSpec
from rsi_workbench.experiments.reactions import experiment as rx
from rsi_workbench.protocol.selection import ScoredCandidate

ROOT = Path(__file__).resolve().parents[2]
SMOKE = ROOT / "configs" / "reactions" / "factorial_smoke.yaml"


def _load(path: Path) -> rx.Config:
    from rsi_workbench.config import read_config_file

    return rx.Config.model_validate(read_config_file(path))


def test_factorial_config_parses() -> None:
    cfg = _load(ROOT / "configs" / "reactions" / "factorial.yaml")
    arms = {m.name: m for m in cfg.methods if isinstance(m, MethodSpec)}
    assert {a.updates for a in arms.values()} == {"gated", "every_observation"}
    assert arms["refit_ei"].decision == "expected_improvement" and arms["gated_l0"].lambda_ == 0


@pytest.mark.parametrize(
    ("arm", "match"),
    [
        ({"name": "a", "kind": "gp_ei", "updates": "every_observation"}, "protocol kinds only"),
        ({"name": "a", "kind": "predictor_information_gp", "decision": "expected_improvement"}, "utility"),
        (
            {"name": "a", "kind": "predictor_utility_gp", "decision": "expected_improvement", "lambda": 0.5},
            "λ|lambda",
        ),
        (
            {
                "name": "a",
                "kind": "predictor_utility_gp",
                "updates": "every_observation",
                "adaptation": False,
            },
            "adaptation",
        ),
        ({"name": "a", "kind": "predictor_utility_gp", "updates": "always"}, "updates"),
    ],
)
def test_bad_factorial_arms_are_named(arm: dict[str, object], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        MethodSpec.model_validate(arm)


def test_default_arms_dump_unchanged() -> None:
    arm = MethodSpec.model_validate({"name": "a", "kind": "predictor_utility_gp", "lambda": 0})
    assert "updates" not in arm.model_dump() and "decision" not in arm.model_dump()


def test_settings_of_the_factorial_arms() -> None:
    cfg = _load(SMOKE)
    by = {m.name: m for m in cfg.methods if isinstance(m, MethodSpec)}
    gated = rx.protocol_settings(cfg, by["gated_l05"], 10)
    refit = rx.protocol_settings(cfg, by["refit_l0"], 10)
    ei = rx.protocol_settings(cfg, by["refit_ei"], 10)
    assert gated.rule == "utility_argmax" and gated.utility.uncertainty_penalty == 0.5
    assert gated.regression_reliability == cfg.reliability and not gated.rescore_history
    assert refit.gate_window == 1 and refit.rescore_history and refit.gate_data == "prequential"
    assert refit.regression_reliability.max_mae < 1e-6 and refit.utility.uncertainty_penalty == 0
    assert ei.rule == rx.EI_RULE and ei.utility.uncertainty_penalty == 0


def test_expected_improvement_ranks_by_ei() -> None:
    rule = ExpectedImprovement(lambda: 50.0)
    cands = [
        ScoredCandidate(0, True, utility=45.0, uncertainty=1.0),  # sure, below the incumbent
        ScoredCandidate(1, True, utility=45.0, uncertainty=20.0),  # same mean, wide: more EI
        ScoredCandidate(2, True, utility=55.0, uncertainty=1.0),  # sure improvement of ~5
        ScoredCandidate(3, True, utility=20.0, uncertainty=1.0),  # hopeless (EI underflows without logs)
        ScoredCandidate(4, True, utility=19.0, uncertainty=1.0),
    ]
    assert rule.rank(cands, random.Random(0)) == [1, 2, 0, 3, 4]
    with pytest.raises(ValueError, match="incumbent"):
        ExpectedImprovement().rank(cands, random.Random(0))
    assert math.isclose(ExpectedImprovement(lambda: 0.0).rank(cands[:1], random.Random(0))[0], 0)


def test_factorial_smoke(tmp_path: Path) -> None:
    """GP-EI and GP protocol arms with both new settings run; each run records its arm's settings, the
    EI rule as an acquisition rule, and the ungated arms refit every guided cycle."""
    out = rx.run_experiment(_load(SMOKE), tmp_path / "fx")
    runs = {e["method"]: e for e in rx.runs_frame(out).to_dict(orient="records")}
    assert set(runs) == {"gp_ei", "gated_l05", "refit_l0", "refit_ei"}
    child = out / "runs" / "perera-1a+2b" / "refit_ei-seed4001"
    cfg = json.loads((child / "config.json").read_text())
    assert cfg["updates"] == "every_observation" and cfg["decision"] == "expected_improvement"
    assert cfg["protocol"]["rule"] == rx.EI_RULE
    gated_cfg = json.loads((out / "runs" / "perera-1a+2b" / "gated_l05-seed4001" / "config.json").read_text())
    assert "updates" not in gated_cfg
    from rsi_workbench.records import Run

    sel = [e.payload for e in Run.open(child).events("selection")]
    assert any(p.get("rule_kind") == "acquisition" for p in sel), sel[:1]
    # 10 experiments, 4 initial: every guided cycle after the first has update data, so 5 refits kept
    assert runs["refit_l0"]["adaptations"] >= 5 and runs["refit_ei"]["adaptations"] >= 5
