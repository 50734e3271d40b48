"""Shapes, the OPF orthogonality penalty, the EMA target (no gradient) and readout invariants."""

from __future__ import annotations

import numpy as np
import torch

from rsi_workbench.world.model import (
    N_STATUS,
    OrthogonalFactorProjection,
    OutcomeWorldModel,
    WorldModelConfig,
)
from rsi_workbench.world.train import TrainConfig, compute_loss, param_groups
from rsi_workbench.world.verifier import StaticVerifier


def test_shapes_and_predictions(random_batch):
    b = random_batch(n=12, h=16)
    m = OutcomeWorldModel(WorldModelConfig(input_dim=16))
    out = m(b.state, b.action, b.context, b.outcome)
    assert out["z"].shape == out["z_hat"].shape == out["target"].shape == (12, 256)
    assert out["u_hat"].shape == (12, 4, 64)
    assert out["status_logits"].shape == out["suite_logits"].shape == (12, N_STATUS)
    assert out["runtime"].shape == out["pass_logit"].shape == (12,)
    p = m.predict(b.state, b.action, b.context)
    assert p.status_probs.shape == (12, 5) and np.allclose(p.status_probs.sum(1), 1, atol=1e-5)
    assert (p.runtime_s >= 0).all()
    assert np.allclose(p.utility, p.p_all_pass + 0.25 * p.pass_fraction, atol=1e-6)
    assert p.component_version == m.version


def test_suite_readout_extends_the_readout():
    """Paper: suite head = the readout with one new zeroed channel; the first six rows are copied."""
    m = OutcomeWorldModel(WorldModelConfig(input_dim=8))
    a, s = m.readout[-1], m.suite_readout[-1]
    assert torch.equal(s.weight[:6], a.weight) and torch.equal(s.bias[:6], a.bias)
    assert not s.weight[6].any() and not s.bias[6].any()


def test_opf_orthogonality_penalty():
    opf = OrthogonalFactorProjection(dim=256, n_factors=4, rank=64)
    assert float(opf.orthogonality_penalty().detach()) < 1e-8  # orthogonal init
    z = torch.randn(5, 256)
    assert torch.allclose(opf.combine(opf.split(z)), z, atol=1e-4)  # K*R == D: lossless
    with torch.no_grad():
        opf.basis[:, 64:128] = opf.basis[:, :64]  # two factors share a subspace
    assert float(opf.orthogonality_penalty().detach()) > 0.1
    small = OrthogonalFactorProjection(dim=32, n_factors=2, rank=8)
    assert small.split(torch.randn(3, 32)).shape == (3, 2, 8)


def test_ema_target_gets_no_gradient_and_tracks_online(random_batch):
    b = random_batch(n=16, h=16)
    m = OutcomeWorldModel(WorldModelConfig(input_dim=16))
    loss, parts = compute_loss(m, b, TrainConfig())
    assert parts["prediction"] > 0
    loss.backward()
    assert all(p.grad is None for p in m.core.target_encoder.parameters())
    assert all(not p.requires_grad for p in m.core.target_encoder.parameters())
    assert m.core.encoder.linear.weight.grad is not None
    with torch.no_grad():
        m.core.encoder.linear.weight.add_(1.0)
    before = m.core.target_encoder.linear.weight.clone()
    online = m.core.encoder.linear.weight.clone()
    m.core.ema_update()
    after = m.core.target_encoder.linear.weight
    assert torch.allclose(after, 0.996 * before + 0.004 * online, atol=1e-6)


def test_param_groups_use_paper_rates_and_exclude_temperature():
    m = OutcomeWorldModel(WorldModelConfig(input_dim=16))
    groups = {g["role"]: g for g in param_groups(m, TrainConfig())}
    assert {r: g["lr"] for r, g in groups.items()} == {"backbone": 5e-6, "opf": 1e-5, "readout": 1e-4}
    grouped = {id(p) for g in groups.values() for p in g["params"]}
    assert id(m.log_temperature) not in grouped
    assert not any(id(p) in grouped for p in m.core.target_encoder.parameters())


def test_static_verifier_is_capacity_matched():
    cfg = WorldModelConfig(input_dim=384)
    m, v = OutcomeWorldModel(cfg), StaticVerifier(cfg)
    wm = sum(p.numel() for n, p in m.named_parameters() if m.roles().get(n) in ("opf", "readout"))
    vm = sum(p.numel() for n, p in v.named_parameters() if v.roles().get(n) == "readout")
    assert abs(wm - vm) / wm < 0.02
    assert not any("opf" in n or "target" in n for n, _ in v.named_parameters())
