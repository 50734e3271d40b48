"""The shifted-prior design of code repair: the coder's own ranking (``coder_prior``), the features
readout trained on injected bugs (``train_on: injected``, methods ``features_*``) and the binary
reliability of a readout that predicts only P(all public tests pass)."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "code_repair_tasks" / "tasks.jsonl"
TASKS = ("mine/is_leap", "mine/median")


def _units(pairs: list[tuple[float, bool]], version: str = "v") -> list[tuple[Any, ...]]:
    from rsi_workbench.protocol.selection import UtilitySpec
    from rsi_workbench.protocol.spec import Observation, Prediction
    from rsi_workbench.protocol.state import Readout

    readout = Readout("binary", UtilitySpec())
    out: list[tuple[Any, ...]] = []
    for i, (p, y) in enumerate(pairs):
        pred = Prediction(utility_terms={"p_all_pass": p, "pass_fraction": p}, version=version, probs=[])
        obs = Observation(utility_terms={"p_all_pass": float(y), "pass_fraction": float(y)}, labels=[0, 1])
        out += readout.units(f"t{i % 5}", pred, obs)
    return out


def test_binary_reliability_of_an_all_pass_readout_can_say_reliable() -> None:
    from rsi_workbench.protocol.reliability import BinaryReliabilityCriteria, binary_reliability

    crit = BinaryReliabilityCriteria()
    # calibrated: in each declared bin the mean prediction matches the observed pass rate
    calibrated = [(0.1, i < 2) for i in range(20)] + [(0.4, i < 8) for i in range(20)]
    v = binary_reliability(_units(calibrated), "v", crit)
    assert v.verdict == "reliable", v.reasons
    assert v.n_predictions == 40 and v.metrics["ece"] == pytest.approx(0.0)
    # a shifted prior: confident passes that fail
    shifted = [(0.6, i < 2) for i in range(40)]
    v = binary_reliability(_units(shifted), "v", crit)
    assert v.verdict == "unreliable" and any("ece" in r for r in v.reasons)
    # too few units, or units of another version: insufficient, never reliable
    assert binary_reliability(_units(calibrated[:5]), "v", crit).verdict == "insufficient"
    other = binary_reliability(_units(calibrated, version="old"), "v", crit)
    assert other.verdict == "insufficient" and other.n_excluded_other_versions == 40
    with pytest.raises(ValueError, match="bins"):
        BinaryReliabilityCriteria(bins=[0.0, 0.5, 0.4, 1.0])


def test_the_binary_readout_scores_one_unit_per_prediction_with_the_binary_brier() -> None:
    from rsi_workbench.protocol.selection import UtilitySpec
    from rsi_workbench.protocol.settings import ProtocolSettings
    from rsi_workbench.protocol.state import Readout

    units = _units([(0.25, True), (0.25, False)])
    assert [u[3] for u in units] == [0, 1] and units[0][2] == [0.25, 0.75]
    assert Readout("binary", UtilitySpec()).score(units) == pytest.approx((0.75**2 + 0.25**2) / 2)
    assert "binary_reliability" not in ProtocolSettings().model_dump()  # default: dumped as before
    assert ProtocolSettings(readout="binary").binary_reliability.bins[0] == 0.0


def test_coder_prior_executes_the_coders_top_weighted_candidate() -> None:
    from rsi_workbench.agents import Candidate
    from rsi_workbench.domains.code_repair import MutationCoder, load_task_file
    from rsi_workbench.domains.code_repair.coder_prior import CoderPriorPredictor
    from rsi_workbench.experiments.code_repair.runs import method_settings
    from rsi_workbench.protocol.settings import ProtocolSettings

    acts = [Candidate("a", "", {"weight": 0.2}), Candidate("b", "", {"weight": 0.6}), Candidate("c", "", {})]
    preds = CoderPriorPredictor().predict("t", None, acts)
    shares = [p.utility_terms["p_all_pass"] for p in preds]
    assert shares == pytest.approx([0.25, 0.75, 0.0]) and max(range(3), key=shares.__getitem__) == 1
    s = method_settings(ProtocolSettings(), "coder_prior")
    assert s.rule == "utility_argmax" and not s.adaptation.enabled
    task = next(t for t in load_task_file(EXAMPLES) if t.task_id == TASKS[0])
    cands = MutationCoder().propose(task, task.program, None, 4, random.Random(0))
    assert cands and all(c.meta["weight"] > 0 for c in cands)  # every mutant carries its weight


def test_features_methods_and_the_injected_setting(tmp_path: Path) -> None:
    from rsi_workbench.experiments.code_repair.config import Config
    from rsi_workbench.experiments.code_repair.runs import method_settings
    from rsi_workbench.protocol.settings import ProtocolSettings

    with pytest.raises(ValueError, match="need world.lm_readout"):
        Config.model_validate({"methods": ["random_k", "features_fixed"]})
    block = {"pools": str(tmp_path), "use_lm": True, "train_on": "injected"}
    with pytest.raises(ValueError, match="features readout only"):
        Config.model_validate({"methods": ["lm_fixed"], "world": {"lm_readout": block}})
    cfg = Config.model_validate(
        {"methods": ["features_fixed", "features_oracle"], "world": {"lm_readout": block}}
    )
    assert cfg.world.lm_readout is not None and cfg.world.lm_readout.train_on == "injected"
    plain = Config.model_validate(
        {"methods": ["features_fixed"], "world": {"lm_readout": {"pools": str(tmp_path)}}}
    )
    assert "train_on" not in json.dumps(plain.model_dump(mode="json"))  # default: dumped as before
    assert method_settings(ProtocolSettings(), "features_adaptive").adaptation.enabled
    assert not method_settings(ProtocolSettings(), "features_fixed").adaptation.enabled


def test_injected_training_rows_come_from_bugs_in_the_references(tmp_path: Path) -> None:
    from rsi_workbench.domains.code_repair import Sandbox, load_task_file
    from rsi_workbench.domains.code_repair.binding import CodeRepairEnvironment
    from rsi_workbench.domains.code_repair.injected_training import (
        build_injected,
        injected_states,
        injected_training_rows,
    )
    from rsi_workbench.domains.code_repair.world_settings import InjectedTraining

    tasks = {t.task_id: t for t in load_task_file(EXAMPLES) if t.task_id in TASKS}
    s = InjectedTraining(per_problem=2, candidates=6, pools_per_state=2)
    states = injected_states(s, tasks)
    assert {o for o, _, _ in states} == set(TASKS) and len(states) == 4
    assert all(t.program != tasks[o].reference and t.task_id == sid for o, sid, t in states)
    env = CodeRepairEnvironment(list(tasks.values()), Sandbox())
    rows = injected_training_rows(s, tasks, tmp_path, env)
    assert set(rows) <= set(TASKS)
    for rs in rows.values():
        assert all(y in (0.0, 1.0) and "op_cmp_swap" in f for f, y in rs)
    built = build_injected(s, tasks, tmp_path, env)  # read back: nothing is executed again
    assert [r["task_id"] for r in built] == [sid for _, sid, _ in states]
    assert all(r["origin"] in TASKS for r in built)


def test_a_committed_injected_table_is_read_not_rebuilt_and_a_mismatch_is_named(tmp_path: Path) -> None:
    """``injected.table``: an earlier build's rows are copied in (nothing executes: no sandbox is
    given), the key stays the table-less one, and a table built with other settings is refused at
    config validation, naming its settings file and the differing field."""
    from rsi_workbench.domains.code_repair.injected_training import build_injected, injected_dir
    from rsi_workbench.domains.code_repair.world_settings import InjectedTraining

    plain = InjectedTraining(per_problem=1, candidates=4, pools_per_state=1)
    table = tmp_path / "table"
    table.mkdir()
    (table / "settings.json").write_text(json.dumps(plain.model_dump(mode="json")))
    rows = [
        {"task_id": "a#injected0", "origin": "a", "candidates": [{"fix": True}, {"fix": False}]},
        {"task_id": "b#injected0", "origin": "b", "candidates": [{"fix": False}]},
    ]
    (table / "candidates.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    s = InjectedTraining(per_problem=1, candidates=4, pools_per_state=1, table=str(table))
    assert injected_dir(s, tmp_path) == injected_dir(plain, tmp_path)
    assert "table" not in json.dumps(plain.model_dump(mode="json"))

    # the table holds every state the settings ask for: nothing is built
    out = tmp_path / "exp"
    from rsi_workbench.domains.code_repair import injected_training as it

    orig = it.injected_states
    it.injected_states = lambda _s, _t: [("a", "a#injected0", None), ("b", "b#injected0", None)]  # type: ignore[assignment]
    try:
        got = build_injected(s, {}, out, env=None)  # env None: any execution would fail
    finally:
        it.injected_states = orig  # type: ignore[assignment]
    assert [r["task_id"] for r in got] == ["a#injected0", "b#injected0"]
    assert (injected_dir(s, out) / "candidates.jsonl").read_text().count("\n") == 2

    with pytest.raises(ValueError, match=r"settings\.json: built with other settings.*candidates"):
        InjectedTraining(per_problem=1, candidates=8, pools_per_state=1, table=str(table))
    (table / "candidates.jsonl").write_text('{"task_id": 3}\n')
    with pytest.raises(ValueError, match=r"candidates\.jsonl:1: not an injected state row"):
        InjectedTraining(per_problem=1, candidates=4, pools_per_state=1, table=str(table))


def test_the_report_says_where_reliability_fired_what_a_gate_kept_and_what_it_gained() -> None:
    from rsi_workbench.domains.code_repair.adaptation_story import adaptive_vs_fixed_lines
    from rsi_workbench.protocol.report import RunSummary

    def run(solved: set[str], cycles: list[dict[str, Any]]) -> RunSummary:
        final = {t: {"hidden_all_pass": t in solved} for t in ("t1", "t2", "t3")}
        return RunSummary("r", 3, final, {}, 0.0, None, None, cycles=cycles, finished=True)

    rel = {"verdict": "unreliable", "n_predictions": 40, "metrics": {"brier": 0.14, "ece": 0.15}}
    trig = {"triggered": True, "n_adapt_examples": 40}
    kept = {
        "cycle": 1,
        "reliability": rel,
        "adaptation_trigger": trig,
        "gates": {
            "predictor": {
                "gate": "predictor",
                "passed": True,
                "skipped": False,
                "n_units": 67,
                "current": {"brier": 0.0816},
                "proposed": {"brier": 0.0811},
                "thresholds": {"score": "brier"},
            },
            "pair": {
                "gate": "pair",
                "passed": True,
                "skipped": False,
                "n_units": 17,
                "current": {"utility": 0.126, "n_units": 67.0},
                "proposed": {"utility": 0.203},
            },
        },
        "retain": {"proposed_predictor_version": "fr-1", "predictor_version": "fr-1"},
    }
    refused = {
        "cycle": 2,
        "reliability": rel,
        "adaptation_trigger": trig,
        "gates": {
            "predictor": {
                "gate": "predictor",
                "passed": False,
                "skipped": False,
                "n_units": 126,
                "current": {"brier": 0.06},
                "proposed": {"brier": 0.05},
                "thresholds": {"score": "brier"},
                "reasons": ["ranking drop 0.01 > 0.0"],
            }
        },
        "retain": {"proposed_predictor_version": "fr-2", "predictor_version": "fr-1"},
    }
    lines = adaptive_vs_fixed_lines(
        {
            "features_adaptive": {10: run({"t1", "t2"}, [kept, refused])},
            "features_fixed": {10: run({"t2"}, [])},
        }
    )
    text = "\n".join(lines)
    assert "1 kept; at least one kept in 1/1 seeds" in text
    assert "2 vs 1 tasks solved (hidden all-pass); gained t1" in text
    assert "cycle 1: reliability unreliable (n=40, brier=0.140, ece=0.150) fired → refit on 40" in text
    assert "pair gate passed (utility 0.126 → 0.203; 67 units) → KEPT as fr-1" in text
    assert "predictor gate REFUSED: ranking drop 0.01 > 0.0 (brier 0.0600 → 0.0500; 126 units)" in text
