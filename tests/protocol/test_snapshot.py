"""Cycle snapshots as a chain: full artifacts now and then, deltas in between, old full-snapshot runs still load."""

from __future__ import annotations

import json
import random

import pytest
from protocol_double_run import SETTINGS
from protocol_doubles import make_test_double_spec

from rsi_workbench.protocol import snapshot
from rsi_workbench.protocol.loop import Loop, effective_events
from rsi_workbench.protocol.snapshot import apply_delta, json_delta, restore
from rsi_workbench.records import Run


def _random_json(rng: random.Random, depth: int = 0):
    r = rng.random()
    if depth > 3 or r < 0.3:
        return rng.choice([rng.randint(-3, 3), rng.random(), "s" + str(rng.randint(0, 3)), None, True])
    if r < 0.65:
        return [_random_json(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    return {f"k{rng.randint(0, 5)}": _random_json(rng, depth + 1) for _ in range(rng.randint(0, 4))}


def _mutate(rng: random.Random, v):
    if isinstance(v, list) and rng.random() < 0.5:
        return [*v, _random_json(rng)]  # an append: stored as the tail only
    if isinstance(v, dict) and v and rng.random() < 0.7:
        out = dict(v)
        key = rng.choice(sorted(out))
        if rng.random() < 0.2:
            del out[key]
        else:
            out[key] = _mutate(rng, out[key])
        return out
    return _random_json(rng)


def test_apply_delta_inverts_json_delta():
    rng = random.Random(0)
    for _ in range(500):
        old = _random_json(rng)
        new = _mutate(rng, old)
        d = json_delta(old, new)
        assert apply_delta(old, d) == new
        assert (d is None) == (json.dumps(old, sort_keys=True) == json.dumps(new, sort_keys=True))
    # an int that becomes a float is a change, not an equality
    assert apply_delta({"a": 1}, json_delta({"a": 1}, {"a": 1.0})) == {"a": 1.0}
    assert type(apply_delta({"a": 1}, json_delta({"a": 1}, {"a": 1.0}))["a"]) is float


def test_a_growing_history_is_stored_as_its_appended_tail():
    old = {"cycle": 3, "states": {"t": {"observed": [[1, 2.5], [7, 9.0]]}}, "done": {}}
    new = {"cycle": 4, "states": {"t": {"observed": [[1, 2.5], [7, 9.0], [4, 80.25]]}}, "done": {}}
    d = json_delta(old, new)
    assert d == {
        "dict": {
            "cycle": {"set": 4},
            "states": {"dict": {"t": {"dict": {"observed": {"extend": [[4, 80.25]]}}}}},
        }
    }
    assert apply_delta(old, d) == new


def _run(path, n=None, **spec_kw):
    run = Run.create(path, {"test_double": True}, kind="test_double", exist_ok=True)
    with run:
        loop = Loop.open(make_test_double_spec(**spec_kw), run, SETTINGS, seed=0)
        loop.run(n)
    return path


def _finished(path):
    return [e for e in effective_events(Run.open(path)) if e.kind == "cycle_finished"]


def _without_snapshots(path):
    out = []
    for e in effective_events(Run.open(path)):
        p = dict(e.payload)
        if e.kind == "cycle_finished":
            p.pop("snapshot", None)
            p.pop("snapshot_delta", None)
        out.append((e.kind, e.cycle, p))
    return out


def test_old_full_snapshot_runs_load_and_the_chain_restores_the_same_state(tmp_path, monkeypatch):
    # the old format: every cycle a full snapshot artifact, referenced as {"snapshot": sha}
    monkeypatch.setattr(snapshot, "FULL_EVERY", 1)
    old = _run(tmp_path / "old")
    old_fin = _finished(old)
    assert all(set(e.payload) == {"snapshot", "report"} for e in old_fin)
    monkeypatch.undo()
    new = _run(tmp_path / "new")
    new_fin = _finished(new)
    assert "snapshot" in new_fin[0].payload
    assert any("snapshot_delta" in e.payload for e in new_fin[1:])
    # the same run either way, apart from how its snapshots are stored
    assert _without_snapshots(old) == _without_snapshots(new)
    arts_old, arts_new = Run.open(old).artifacts, Run.open(new).artifacts
    for k in range(1, len(new_fin) + 1):
        full = arts_old.get_json(old_fin[k - 1].payload["snapshot"])
        assert restore(arts_old, old_fin[:k])[0] == full  # old format: the last full artifact
        assert restore(arts_new, new_fin[:k])[0] == full  # chain: full artifact plus deltas
    assert len(arts_new.list()) < len(arts_old.list())


@pytest.mark.parametrize("full_every", [1, 2, 32])
def test_resuming_a_chain_continues_it_exactly(tmp_path, monkeypatch, full_every):
    """A run stopped after cycle 1 or 2 and resumed records what an uninterrupted run records,
    snapshot references included; an old-format start (full_every=1) is continued as a chain."""
    straight = _run(tmp_path / "straight")
    for n in (1, 2):
        p = tmp_path / f"resumed{n}"
        monkeypatch.setattr(snapshot, "FULL_EVERY", full_every)
        _run(p, n)
        monkeypatch.undo()
        _run(p)
        if full_every == 32:
            assert [(e.cycle, e.payload) for e in _finished(p)] == [
                (e.cycle, e.payload) for e in _finished(straight)
            ]
        assert _without_snapshots(p) == _without_snapshots(straight)
        fin = _finished(p)
        final = restore(Run.open(p).artifacts, fin)[0]
        assert final == restore(Run.open(straight).artifacts, _finished(straight))[0]


def test_a_broken_chain_fails_loudly(tmp_path):
    p = _run(tmp_path / "r")
    fin = _finished(p)
    assert len(fin) >= 3 and "snapshot_delta" in fin[2].payload
    with pytest.raises(ValueError, match="snapshot chain broken"):
        restore(Run.open(p).artifacts, [fin[0], fin[2]])
