"""Prequential gate data: honest predictions only, disjoint per decision, and a loop run with it."""

from __future__ import annotations

import pytest
from protocol_doubles import make_test_double_spec

from rsi_workbench.protocol.loop import Loop, ProtocolSettings, effective_events
from rsi_workbench.protocol.prequential import (
    VersionRecord,
    observation_id,
    plan_gate_predictions,
    prequential_split,
    window_cycles,
)
from rsi_workbench.protocol.spec import Observation, PairRecord, Prediction
from rsi_workbench.protocol.splits import SplitOverlap
from rsi_workbench.records import Run


def _pair(cycle: int, guess: int, version: str | None) -> PairRecord:
    pred = Prediction({"pass_fraction": 0.5}, version, [[0.5, 0.5]]) if version else None
    obs = Observation({"pass_fraction": 1.0}, [0])
    return PairRecord("t0", cycle, {"guess": 0}, {"guess": guess}, pred, obs, "pi-0", version, "prequential")


def _history() -> list[PairRecord]:
    # phi-0 (the prior) predicted cycles 1–2; phi-1, made at the decision of cycle 2, predicted 3–4;
    # the record of cycle 5 carries a phi-2 prediction although phi-2 was made at cycle 5's decision
    return [
        _pair(1, 11, "phi-0"),
        _pair(2, 12, "phi-0"),
        _pair(3, 13, "phi-1"),
        _pair(4, 14, "phi-1"),
        _pair(5, 15, "phi-2"),
    ]


def test_the_window_holds_the_latest_cycles_and_update_data_the_rest():
    h = _history()
    assert window_cycles(5, 0.3, None) == 2 and window_cycles(1, 0.3, None) == 1
    assert window_cycles(5, 0.3, 4) == 4 and window_cycles(2, 0.3, 4) == 2
    upd, gate = prequential_split(h, 5, 0.3)
    assert [p.cycle for p in upd] == [1, 2, 3] and [p.cycle for p in gate] == [4, 5]
    # the cut-off never moves back: an observation leaves the window once and for all
    cuts = [k - window_cycles(k, 0.25, None) for k in range(1, 60)]
    assert cuts == sorted(cuts)


def test_a_prediction_made_after_its_observation_is_refused():
    h = _history()
    _, gate = prequential_split(h, 5, 0.3)  # cycles 4 and 5
    train = frozenset(observation_id(p) for p in h[:3])
    # phi-2 was made at the decision of cycle 5: its "prediction" of cycle 5's observation was made
    # after that observation arrived, so it must not be admitted as a prequential test point
    late = plan_gate_predictions(gate, VersionRecord("phi-2", 5, train))
    oid5 = observation_id(h[4])
    assert late.refused == [oid5] and oid5 not in late.recorded and oid5 in late.repredict
    # phi-1 (made at cycle 2) predicted cycle 4 before it arrived: admitted as recorded
    honest = plan_gate_predictions(
        gate, VersionRecord("phi-1", 2, frozenset(observation_id(p) for p in h[:2]))
    )
    assert list(honest.recorded) == [observation_id(h[3])] and honest.refused == []
    assert honest.repredict == [oid5]  # phi-1 never predicted cycle 5: re-predicted, not trained on


def test_a_window_overlapping_the_training_data_fails_the_disjointness_assertion():
    h = _history()
    _, gate = prequential_split(h, 5, 0.3)
    leaked = frozenset(observation_id(p) for p in h[:4])  # cycle 4 is in the window and was trained on
    with pytest.raises(SplitOverlap, match=observation_id(h[3])):
        plan_gate_predictions(gate, VersionRecord("phi-2", 5, leaked))


def _run(path, settings, n=None):
    with Run.create(path, {"x": 1}, exist_ok=True) as run:
        loop = Loop.open(make_test_double_spec(), run, settings, seed=0)
        loop.run(n)
    return [
        (e.kind, e.cycle, e.payload)
        for e in effective_events(Run.open(path))
        if e.kind != "cycle_attempt_discarded"
    ]


PREQ = ProtocolSettings(
    max_rounds=5,
    gate_data="prequential",
    gate_window=2,
    adaptation={"enabled": True, "min_examples": 3},
    reliability={"min_predictions": 3},
)


def test_a_loop_with_prequential_gates_trains_on_every_observation_after_judging_with_it(tmp_path):
    recs = _run(tmp_path / "a", PREQ)
    obs = [r[2]["pair"] for r in recs if r[0] == "observation"]
    assert obs and {o["split"] for o in obs} == {"prequential"}
    proposed = [(c, p) for kind, c, p in recs if kind == "predictor_proposed"]
    gates = [(c, p) for kind, c, p in recs if kind == "gate" and p["gate"] == "predictor"]
    assert proposed and len(gates) == len(proposed)
    ids = {(o["task_id"], o["cycle"]): observation_id(PairRecord.from_json(o)) for o in obs}
    for (c, p), (_, g) in zip(proposed, gates, strict=True):
        window = set(g["gate_data"]["window"])
        assert window and window.isdisjoint(p["trained_on"])
        # the window is the last two cycles; everything before the cut-off trains the candidate
        assert {i for (t, cy), i in ids.items() if cy <= c - 2} <= set(p["trained_on"])
        assert all(int(w.split(":")[1]) > c - 2 for w in window)
        assert g["gate_data"]["refused"] == {p["from"]: [], p["to"]: []}
        # the candidate never predicted online: it re-predicts the whole window
        assert g["gate_data"]["repredicted"][p["to"]] == len(window)
    # the incumbent is judged by predictions it recorded before the observations arrived
    assert any(sum(g["gate_data"]["recorded"].values()) > 0 for _, g in gates)
    # resuming mid-run rebuilds the versions' training data and gives identical records
    _run(tmp_path / "b", PREQ, n=2)
    assert _run(tmp_path / "b", PREQ) == recs


def test_prequential_is_off_by_default_and_dumps_as_before():
    s = ProtocolSettings()
    assert s.gate_data == "tasks" and "gate_window" not in s.model_dump(mode="json")
    with pytest.raises(ValueError, match="gate_window applies to gate_data: prequential only"):
        ProtocolSettings(gate_window=3)
    with pytest.raises(ValueError, match="prequential supports predictor updates only"):
        ProtocolSettings(gate_data="prequential", policy_update={"enabled": True})
