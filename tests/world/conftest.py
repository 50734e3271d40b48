"""Shared fixtures for world-model tests: the seeded ``tiny`` backbone and a small synthetic batch."""

from __future__ import annotations

import numpy as np
import pytest


@pytest.fixture(autouse=True)
def one_torch_thread():
    """The world tests use tiny models: one thread avoids OpenMP thrash on the shared 2-core machine."""
    import torch

    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


@pytest.fixture(scope="session")
def tiny_backbone():
    from rsi_workbench.world.encoders import load_backbone

    return load_backbone("tiny", device="cpu", seed=0)


@pytest.fixture
def random_batch():
    """Factory for a synthetic feature batch with groups, suite rows and outcomes."""
    return _random_batch


def _random_batch(n: int = 32, h: int = 16, seed: int = 0, with_outcome: bool = True):
    from rsi_workbench.world.data import make_batch

    rng = np.random.default_rng(seed)
    return make_batch(
        rng.normal(size=(n, h)),
        rng.normal(size=(n, h)),
        rng.normal(size=(n, h)),
        rng.integers(0, 5, n),
        runtime_s=rng.random(n),
        is_suite=np.arange(n) % 4 == 0,
        pass_fraction=rng.random(n),
        group=np.arange(n) // 4,
        outcome=rng.normal(size=(n, h)) if with_outcome else None,
    )
