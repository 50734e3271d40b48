"""Backbone features cached on disk, content-addressed, shared by every run on this machine.

One file per backbone fingerprint (for an LM backbone: model identity + pooling + layer + window +
dtype), holding vectors keyed by the sha256 of the text: ``$RSI_WORKBENCH_FEATURES/<fingerprint>.npz``
(default ``~/.cache/rsi_workbench/features``). Saving merges with what another process wrote in the
meantime (under a file lock) and replaces the file atomically, so a crash never leaves half a cache.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from rsi_workbench.world.encoders import FeatureCache, text_sha

FEATURES_ENV = "RSI_WORKBENCH_FEATURES"


def features_dir() -> Path:
    env = os.environ.get(FEATURES_ENV)
    return Path(env) if env else Path.home() / ".cache" / "rsi_workbench" / "features"


class DiskFeatures:
    """``texts -> [N, H]`` features of one backbone, computed once (batched) and kept on disk."""

    SAVE_EVERY = 256

    def __init__(self, backbone: Any, root: str | Path | None = None, progress: bool = False):
        self.backbone = backbone
        self.path = Path(root or features_dir()) / f"{backbone.fingerprint}.npz"
        self.progress = progress
        self.cache = self._read() or FeatureCache(backbone.fingerprint, backbone.hidden_size)
        self.computed = 0  # texts encoded by this process (not found on disk)

    def _read(self) -> FeatureCache | None:
        if not self.path.exists():
            return None
        c = FeatureCache.from_bytes(self.path.read_bytes())
        if c.fingerprint != self.backbone.fingerprint:
            raise ValueError(f"{self.path}: cache of {c.fingerprint}, not {self.backbone.fingerprint}")
        return c

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if text_sha(t) not in self.cache.vectors]
        missing.sort(key=len)  # similar lengths share a batch: less padding
        for s in range(0, len(missing), self.SAVE_EVERY):  # saved as it goes: an interrupted run resumes
            part = missing[s : s + self.SAVE_EVERY]
            self.cache.featurize(self.backbone, part, progress=self.progress)
            self.computed += len(part)
            self.save()
        return self.cache.lookup([text_sha(t) for t in texts])

    def save(self) -> None:
        from filelock import FileLock

        self.path.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(str(self.path) + ".lock"):
            other = self._read()
            if other is not None:
                for k, v in other.vectors.items():
                    self.cache.vectors.setdefault(k, v)
            tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
            tmp.write_bytes(self.cache.to_bytes())
            os.replace(tmp, self.path)
