"""The training loop learns (over-fit), Adapt trains exactly the declared subset, calibration."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from rsi_workbench.world.data import make_batch
from rsi_workbench.world.metrics import nll
from rsi_workbench.world.model import OutcomeWorldModel, WorldModelConfig
from rsi_workbench.world.train import (
    TrainConfig,
    adapt,
    fit_temperature,
    predict_batch,
    row_probs,
    train,
)
from rsi_workbench.world.verifier import StaticVerifier

FAST = dict(lr_backbone=3e-3, lr_opf=3e-3, lr_readout=1e-2, progress=False)


def _texts():
    programs = [f"def f(x):\n    return x {op} {k}\n" for op, k in [("+", 1), ("-", 2), ("*", 3), ("//", 4)]]
    states, actions, contexts, outcomes, status = [], [], [], [], []
    for i, prog in enumerate(programs):
        for j, test in enumerate(["assert f(1) == 2", "assert f(3) == 4"]):
            states.append(f"Program:\n{prog}")
            actions.append(f"--- a\n+++ b\n@@ -2 +2 @@\n-    return x\n+    return x + {i}{j}")
            contexts.append(f"Public test: {test}")
            s = (i + j) % 5
            status.append(s)
            outcomes.append(f"status {['AC', 'WA', 'TLE', 'RE', 'CE'][s]} runtime 0.0{i}")
    return states, actions, contexts, outcomes, status


def test_tiny_encoder_overfits_a_handful_of_transitions(tiny_backbone):
    states, actions, contexts, outcomes, status = _texts()
    f = tiny_backbone.features
    batch = make_batch(
        f(states),
        f(actions),
        f(contexts),
        status,
        runtime_s=np.linspace(0.01, 0.08, 8),
        group=[0, 1] * 4,
        outcome=f(outcomes),
    )
    small = dict(dim=64, n_factors=4, rank=16, factor_hidden=32, readout_hidden=32)
    m = OutcomeWorldModel(WorldModelConfig(input_dim=tiny_backbone.hidden_size, **small))
    rep = train(m, batch, TrainConfig(epochs=80, batch_size=8, **FAST))
    first, last = rep.history[0]["ce"], rep.history[-1]["ce"]
    assert last < first / 10, (first, last)
    pred = predict_batch(m, batch)
    assert (pred.status_probs.argmax(1) == np.array(status)).all()
    assert m.version.startswith("world_model-")
    assert np.isfinite(rep.last("prediction")) and rep.last("orthogonality") < 0.1


def test_adapt_trains_exactly_the_declared_subset(random_batch):
    b = random_batch(n=32, h=16)
    m = OutcomeWorldModel(WorldModelConfig(input_dim=16))
    train(m, b, TrainConfig(epochs=1, progress=False))
    before = {k: v.clone() for k, v in m.state_dict().items()}
    new, rep = adapt(m, b, trainable=("readout",), config=TrainConfig(epochs=2, **FAST))
    assert rep.trainable == ("readout",)
    roles = m.roles()
    changed = {k for k, v in new.state_dict().items() if not torch.equal(v, before[k])}
    readout = {n for n, r in roles.items() if r == "readout"}
    assert changed and changed <= readout | {k for k in before if k.startswith("core.target_encoder")}
    assert all(torch.equal(v, before[k]) for k, v in m.state_dict().items())  # original untouched
    assert new.version != m.version
    new2, rep2 = adapt(m, b, trainable=("opf", "readout"), config=TrainConfig(epochs=1, **FAST))
    assert rep2.trainable == ("opf", "readout")
    with pytest.raises(ValueError, match="not in"):
        adapt(m, b, trainable=("decoder",))


def test_static_verifier_is_never_adapted(random_batch):
    b = random_batch(n=16, h=16)
    v = StaticVerifier(WorldModelConfig(input_dim=16))
    rep = train(v, b, TrainConfig(epochs=2, progress=False))
    assert set(rep.history[-1]) == {"ce", "total"}  # cross-entropy only: no latent prediction
    with pytest.raises(ValueError, match="never adapted"):
        adapt(v, b)


def test_fit_temperature_is_clamped_and_does_not_hurt_nll(random_batch):
    b = random_batch(n=64, h=16, seed=1)
    m = OutcomeWorldModel(WorldModelConfig(input_dim=16))
    train(m, b, TrainConfig(epochs=30, **FAST))
    gate = random_batch(n=64, h=16, seed=2)
    before = nll(row_probs(predict_batch(m, gate), gate), gate.status.numpy())
    t = fit_temperature(m, gate)
    assert 0.2 <= t <= 5.0
    after = nll(row_probs(predict_batch(m, gate), gate), gate.status.numpy())
    assert after <= before + 1e-6


def test_non_finite_gradients_raise(random_batch):
    b = random_batch(n=8, h=16, with_outcome=False)
    b.state[0, 0] = float("nan")
    m = OutcomeWorldModel(WorldModelConfig(input_dim=16))
    with pytest.raises(RuntimeError, match="non-finite"):
        train(m, b, TrainConfig(epochs=1, progress=False))
