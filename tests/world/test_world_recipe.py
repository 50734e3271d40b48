"""The paper's training recipe: the listwise KL over candidate pools, staged training, and that the
defaults leave training exactly as it was (byte-identical weights)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from rsi_workbench.world.losses import listwise_kl, listwise_pools
from rsi_workbench.world.model import OutcomeWorldModel, WorldModelConfig
from rsi_workbench.world.train import (
    STAGE_NAMES,
    Stage,
    TrainConfig,
    compute_loss,
    paper_stages,
    train,
    train_staged,
)


def _kl(obs, pred, tau=0.1):
    """KL(softmax(obs/tau) || softmax(pred/tau)) written out term by term."""
    zp = sum(math.exp(u / tau) for u in obs)
    zq = sum(math.exp(u / tau) for u in pred)
    p = [math.exp(u / tau) / zp for u in obs]
    q = [math.exp(u / tau) / zq for u in pred]
    return sum(pi * math.log(pi / qi) for pi, qi in zip(p, q))


def test_listwise_kl_on_a_hand_built_pool_equals_the_hand_computed_value():
    # pool 0: two candidates; pool 1: tied (skipped); pool 2: singleton (skipped); pool 3: three
    obs = torch.tensor([1.25, 0.25, 0.5, 0.5, 1.0, 1.25, 0.125, 0.0])
    pred = torch.tensor([0.6, 0.4, 0.9, 0.1, 0.5, 0.3, 0.5, 0.1])
    group = torch.tensor([0, 0, 1, 1, 2, 3, 3, 3])
    # pool 0 by hand: p = (1/(1+e^-10), e^-10/(1+e^-10)), q = (1/(1+e^-2), e^-2/(1+e^-2))
    p1, q1 = 1 / (1 + math.exp(-10)), 1 / (1 + math.exp(-2))
    kl0 = p1 * math.log(p1 / q1) + (1 - p1) * math.log((1 - p1) / (1 - q1))
    assert kl0 == pytest.approx(_kl([1.25, 0.25], [0.6, 0.4]), rel=1e-12)
    assert kl0 == pytest.approx(0.126519, abs=1e-6)
    expected = (kl0 + _kl([1.25, 0.125, 0.0], [0.3, 0.5, 0.1])) / 2
    loss, counts = listwise_kl(pred, obs, group, tau=0.1, pool_size=None)
    assert float(loss) == pytest.approx(expected, rel=1e-5)
    assert counts == {"pools": 2, "singleton": 1, "size": 0, "tied": 1}
    # the paper's pools are exactly four candidates: every pool here is then skipped (and counted)
    loss4, counts4 = listwise_kl(pred, obs, group, tau=0.1, pool_size=4)
    assert float(loss4) == 0.0 and counts4["pools"] == 0 and counts4["size"] == 3
    # a perfect prediction gives zero loss
    assert float(listwise_kl(obs, obs, group, pool_size=None)[0]) == pytest.approx(0.0, abs=1e-7)
    pools, _ = listwise_pools(group, obs, None)
    assert [p.tolist() for p in pools] == [[0, 1], [5, 6, 7]]


def test_listwise_term_enters_the_loss_only_when_switched_on(random_batch):
    torch.manual_seed(0)
    b = random_batch(n=32, h=16)
    m = OutcomeWorldModel(WorldModelConfig(input_dim=16, dim=32, n_factors=2, rank=8))
    _, off = compute_loss(m, b, TrainConfig())
    assert "listwise" not in off
    on_cfg = TrainConfig(listwise_weight=0.5, listwise_pool_size=None)
    # suite rows are 0, 4, 8, ... each in its own group: no pool of >= 2 -> zero listwise term
    _, on = compute_loss(m, b, on_cfg)
    assert on["listwise"] == 0.0 and on["listwise_pools"] == 0.0
    b.group[b.is_suite] = torch.arange(int(b.is_suite.sum())) // 2  # pools of two suite rows
    b.status[b.is_suite] = torch.tensor([0, 1] * 4)  # one passing candidate per pool: contrast
    _, on = compute_loss(m, b, on_cfg)
    assert on["listwise"] > 0 and on["listwise_pools"] == 4.0
    _, plain = compute_loss(m, b, TrainConfig())
    assert on["total"] == pytest.approx(plain["total"] + 0.5 * on["listwise"], rel=1e-6)


def _legacy_train(model, data, cfg):
    """The training loop as it was before the recipe options (copied), for the identity check."""
    from rsi_workbench.world.data import group_batches
    from rsi_workbench.world.losses import outcome_losses
    from rsi_workbench.world.train import param_groups

    torch.manual_seed(cfg.seed)
    rng = np.random.default_rng(cfg.seed)
    groups = param_groups(model, cfg)
    opt = torch.optim.AdamW(groups, weight_decay=cfg.weight_decay)
    params = [p for g in groups for p in g["params"]]
    model.train()
    for _ in range(cfg.epochs):
        for idx in group_batches(data.group.numpy(), cfg.batch_size, rng):
            batch = data.subset(idx)
            out = model(batch.state, batch.action, batch.context, batch.outcome)
            parts = outcome_losses(out, batch, ranking_margin=cfg.ranking_margin)
            total = (
                parts["ce"] + cfg.runtime_weight * parts["runtime"] + cfg.ranking_weight * parts["ranking"]
            )
            rep = model.core.representation_loss(out["z"], out["z_hat"], out["u_hat"], out["target"])
            total = total + cfg.representation_weight * rep["representation"]
            opt.zero_grad(set_to_none=True)
            total.backward()
            torch.nn.utils.clip_grad_norm_(params, cfg.grad_clip, error_if_nonfinite=True)
            opt.step()
            model.core.ema_update()
    model.eval()


def test_defaults_leave_training_byte_identical(random_batch):
    b = random_batch(n=48, h=16, seed=3)
    cfg = TrainConfig(epochs=3, batch_size=16, progress=False, device="cpu", seed=5)
    assert cfg.listwise_weight == 0.0 and cfg.staged is False
    wcfg = WorldModelConfig(input_dim=16, dim=32, n_factors=2, rank=8, factor_hidden=16, readout_hidden=16)
    torch.manual_seed(1)
    new = OutcomeWorldModel(wcfg)
    torch.manual_seed(1)
    old = OutcomeWorldModel(wcfg)
    report = train(new, b, cfg)
    _legacy_train(old, b, cfg)
    sd_new, sd_old = new.state_dict(), old.state_dict()
    assert sd_new.keys() == sd_old.keys()
    for k in sd_new:
        assert sd_new[k].numpy().tobytes() == sd_old[k].numpy().tobytes(), k
    assert set(report.history[-1]) == {
        "ce",
        "runtime",
        "ranking",
        "prediction",
        "orthogonality",
        "factor_activity",
        "encoder_variance",
        "representation",
        "total",
    }
    assert report.stages == []


def test_staged_training_runs_its_stages_in_order(random_batch):
    b = random_batch(n=64, h=16, seed=1)
    b.group[b.is_suite] = 100 + torch.arange(16) // 2  # suite rows in pools of two candidates ...
    b.status[b.is_suite] = torch.tensor([0, 1] * 4 + [1, 1] * 4)  # ... four of them with contrast
    b.pass_fraction[b.is_suite] = torch.where(b.status[b.is_suite] == 0, 1.0, 0.5)
    core = np.arange(64) < 40  # rows 40.. stand for the expanded states
    stages = paper_stages(b, epochs=8, core=core)
    assert [(s.name, s.part) for s in stages] == [
        ("initial", "joint"),
        ("semantic", "heads"),
        ("semantic", "joint"),
        ("expanded", "joint"),
        ("incumbent", "joint"),
    ]
    suite = b.is_suite.numpy()
    assert not suite[stages[0].rows].any() and core[stages[0].rows].all()
    assert core[stages[1].rows].all() and len(stages[3].rows) == 64
    assert suite[stages[4].rows].all() and len(stages[4].rows) == 8
    torch.manual_seed(0)
    m = OutcomeWorldModel(WorldModelConfig(input_dim=16, dim=32, n_factors=2, rank=8))
    events = []
    cfg = TrainConfig(epochs=8, batch_size=16, progress=False, device="cpu", staged=True)
    rep = train(m, b, cfg, stages=stages, log=lambda kind, payload: events.append((kind, payload)))
    assert [e["stage"] for _, e in events] == ["initial", "semantic", "semantic", "expanded", "incumbent"]
    assert {k for k, _ in events} == {"world_stage"} and rep.stages == [e for _, e in events]
    heads = rep.stages[1]
    assert heads["part"] == "heads" and heads["trainable"] == ["readout"]
    assert rep.stages[2]["trainable"] == ["backbone", "opf", "readout"]
    assert rep.steps == sum(e["steps"] for e in rep.stages) and m.version.startswith("world_model-")
    roles = m.roles()
    assert all(
        p.requires_grad == (roles.get(n, "temperature") != "temperature") for n, p in m.named_parameters()
    )
    assert list(STAGE_NAMES) == list(dict.fromkeys(e["stage"] for e in rep.stages))


def test_heads_part_trains_only_the_readout(random_batch):
    b = random_batch(n=32, h=16)
    torch.manual_seed(0)
    m = OutcomeWorldModel(WorldModelConfig(input_dim=16, dim=32, n_factors=2, rank=8))
    before = {n: p.detach().clone() for n, p in m.named_parameters()}
    train_staged(m, b, [Stage("semantic", "heads", None, 2)], TrainConfig(progress=False, device="cpu"))
    roles = m.roles()
    changed = {n for n, p in m.named_parameters() if n in roles and not torch.equal(before[n], p.detach())}
    assert changed and all(roles[n] == "readout" for n in changed)  # (the EMA target is no role's)


def test_stages_out_of_order_are_refused(random_batch):
    b = random_batch(n=16, h=16)
    m = OutcomeWorldModel(WorldModelConfig(input_dim=16, dim=32, n_factors=2, rank=8))
    with pytest.raises(ValueError, match="out of order"):
        train_staged(m, b, [Stage("expanded"), Stage("initial")], TrainConfig(progress=False))
    with pytest.raises(ValueError, match="unknown stage"):
        train_staged(m, b, [Stage("warmup")], TrainConfig(progress=False))
