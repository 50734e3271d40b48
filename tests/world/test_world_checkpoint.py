"""Checkpoints are sha256 artifacts and a reload must reproduce the probe scores, or the save fails."""

from __future__ import annotations

import pytest
import torch

from rsi_workbench.records import ArtifactCorrupted, ArtifactStore
from rsi_workbench.world import checkpoint as ckpt
from rsi_workbench.world.model import OutcomeWorldModel, WorldModelConfig
from rsi_workbench.world.train import TrainConfig, fit_temperature, predict_batch, train
from rsi_workbench.world.verifier import StaticVerifier


@pytest.mark.slow
def test_save_reload_reproduces_scores(tmp_path, random_batch):
    b = random_batch(n=24, h=16)
    store = ArtifactStore(tmp_path / "artifacts")
    for model in (
        OutcomeWorldModel(WorldModelConfig(input_dim=16)),
        StaticVerifier(WorldModelConfig(input_dim=16)),
    ):
        train(model, b, TrainConfig(epochs=2, progress=False))
        fit_temperature(model, b)
        sha = ckpt.save_checkpoint(model, store, b)
        assert store.meta(sha)["kind"] == "world_checkpoint"
        back = ckpt.load_checkpoint(store, sha)
        assert type(back) is type(model) and back.version == model.version
        p, q = predict_batch(model, b), predict_batch(back, b)
        assert (p.utility == q.utility).all() and (p.status_probs == q.status_probs).all()
        assert float(back.log_temperature) == float(model.log_temperature)


def test_save_fails_when_reload_differs(tmp_path, random_batch, monkeypatch):
    b = random_batch(n=8, h=16)
    model = OutcomeWorldModel(WorldModelConfig(input_dim=16))
    store = ArtifactStore(tmp_path / "artifacts")
    real = ckpt.load_checkpoint_bytes

    def drifting(data, build=None):  # test double: a reload that perturbs one readout weight
        m = real(data, build)
        with torch.no_grad():
            m.readout[-1].bias.add_(1e-3)
        return m

    monkeypatch.setattr(ckpt, "load_checkpoint_bytes", drifting)
    with pytest.raises(ckpt.CheckpointMismatch, match="nothing was stored"):
        ckpt.save_checkpoint(model, store, b)
    assert store.list() == []


def test_corrupted_checkpoint_fails_loudly(tmp_path, random_batch):
    b = random_batch(n=8, h=16)
    store = ArtifactStore(tmp_path / "artifacts")
    sha = ckpt.save_checkpoint(OutcomeWorldModel(WorldModelConfig(input_dim=16)), store, b)
    path = store.path(sha)
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(ArtifactCorrupted):
        ckpt.load_checkpoint(store, sha)
