"""An ensemble over learned condition embeddings: a yield model p(y | conditions) whose inputs are
one learned vector per factor level instead of a one-hot or descriptor encoding.

Each categorical factor f (ligand, base, solvent, ...) gets a table of ``embed_dim``-dimensional
embeddings, one row per level; a condition is the concatenation of its levels' embeddings and its
numeric factors (scaled to [0, 1] as in :func:`~rsi_workbench.domains.reactions.grid.encode_conditions`),
read by a one-hidden-layer tanh network. ``members`` such networks (tables included) start from
different seeded initialisations and are trained together as one batched model, each by Gaussian
NLL with its own learned homoscedastic noise σ_m (floored at ``noise_floor``). The readout is
Gaussian: mean = member average, variance = member spread (epistemic) + mean σ_m² (aleatoric).
A fit from scratch runs ``fit_steps``; later fits warm-start from the current weights
(``adapt_steps``), as the deep ensemble does. Before any fit the model is its untrained
initialisation read on a declared prior scale N(prior_mean, prior_sd²).
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import Any

import numpy as np
from pydantic import Field

from rsi_workbench.config import StrictModel
from rsi_workbench.domains.reactions.grid import ConditionGrid


class EmbedConfig(StrictModel):
    """Size and training schedule of the condition-embedding ensemble."""

    members: int = Field(default=5, ge=2)
    embed_dim: int = Field(default=4, ge=1, description="dimension of each factor level's embedding")
    hidden: int = Field(default=16, ge=1)
    fit_steps: int = Field(default=200, ge=1, description="Adam steps of a fit from scratch")
    adapt_steps: int = Field(default=50, ge=1, description="Adam steps of a warm-started refit")
    lr: float = Field(default=0.02, gt=0)
    weight_decay: float = Field(default=1e-3, ge=0, description="on weights and embeddings (not the noise)")
    noise_floor: float = Field(
        default=0.5,
        gt=0,
        description="min σ_m, in units of the observed yield std (with ≤ 40 observations the nets "
        "interpolate them and a learned σ_m collapses; 0.5 keeps unseen conditions' |z| near 1.2–1.7)",
    )


@dataclass(frozen=True)
class CodedConditions:
    """A pool as level codes: ``codes[i, f]`` is condition i's level of categorical factor f."""

    codes: np.ndarray  # (n, C) int64
    numeric: np.ndarray  # (n, Q) float64 in [0, 1]
    levels: tuple[int, ...]  # number of levels of each categorical factor

    @property
    def n(self) -> int:
        return len(self.codes)


def code_conditions(grid: ConditionGrid) -> CodedConditions:
    """Level codes of every categorical factor (in ``grid.levels`` order) and scaled numeric factors."""
    codes: list[np.ndarray] = []
    numeric: list[np.ndarray] = []
    levels: list[int] = []
    for f in grid.spec.factors:
        v = grid.conditions[f.column]
        if f.kind == "numeric":
            x = v.to_numpy(dtype=np.float64)
            span = x.max() - x.min()
            numeric.append((x - x.min()) / span if span > 0 else np.zeros_like(x))
        else:
            lv = grid.levels[f.column]
            pos = {level: i for i, level in enumerate(lv)}
            codes.append(np.array([pos[s] for s in v.astype(str)], dtype=np.int64))
            levels.append(len(lv))
    n = grid.n
    return CodedConditions(
        codes=np.stack(codes, axis=1) if codes else np.zeros((n, 0), dtype=np.int64),
        numeric=np.stack(numeric, axis=1) if numeric else np.zeros((n, 0)),
        levels=tuple(levels),
    )


class EmbeddingEnsemble:
    """One seeded ensemble of embedding networks over a fixed coded pool; ``fit`` returns a new model."""

    def __init__(
        self,
        pool: CodedConditions,
        seed: int,
        config: EmbedConfig | None = None,
        *,
        prior_mean: float = 50.0,
        prior_sd: float = 50.0,
    ) -> None:
        self.pool = pool
        self.seed = int(seed)
        self.config = config or EmbedConfig()
        self.prior = (float(prior_mean), float(prior_sd))
        self.fits = 0
        self.y_mean, self.y_std = self.prior
        self.params: list[Any] = self._init()

    # -- the network, batched over members --------------------------------------------------------
    def _init(self) -> list[Any]:
        """[table per categorical factor (M, L_f, d)..., w1, b1, w2, b2, log σ (M,)] for version ``fits``."""
        import torch

        g = torch.Generator().manual_seed(self.seed * 1_000_003 + self.fits)
        c, m = self.config, self.config.members
        tables = [
            torch.randn(m, n_lv, c.embed_dim, generator=g, dtype=torch.float64) for n_lv in self.pool.levels
        ]
        d_in = c.embed_dim * len(self.pool.levels) + self.pool.numeric.shape[1]

        def lin(i: int, o: int) -> list[Any]:
            w = (torch.rand(m, i, o, generator=g, dtype=torch.float64) * 2 - 1) / np.sqrt(i)
            return [w, torch.zeros(m, 1, o, dtype=torch.float64)]

        return [*tables, *lin(d_in, c.hidden), *lin(c.hidden, 1), torch.zeros(m, dtype=torch.float64)]

    def _forward(self, params: list[Any], idx: np.ndarray) -> tuple[Any, Any]:
        """Member means (M, n) and noise sds (M,), in standardised units, at pool rows ``idx``."""
        import torch

        n_cat = len(self.pool.levels)
        tables, (w1, b1, w2, b2, log_sd) = params[:n_cat], params[n_cat:]
        codes = torch.as_tensor(self.pool.codes[idx])
        parts = [t[:, codes[:, f]] for f, t in enumerate(tables)]  # each (M, n, d)
        num = torch.as_tensor(self.pool.numeric[idx], dtype=torch.float64)
        parts.append(num[None].expand(self.config.members, -1, -1))
        h = torch.tanh(torch.cat(parts, dim=-1) @ w1 + b1)
        mu = (h @ w2 + b2).squeeze(-1)
        return mu, log_sd.exp().clamp_min(self.config.noise_floor)

    # -- fit / predict ----------------------------------------------------------------------------
    def fit(self, idx: list[int], y: list[float]) -> EmbeddingEnsemble:
        """A new model trained on ``(idx, y)``: from scratch the first time, then warm-started; self unchanged."""
        import torch

        if not idx:
            raise ValueError("an embedding-ensemble fit needs at least 1 observation")
        out = EmbeddingEnsemble(
            self.pool, self.seed, self.config, prior_mean=self.prior[0], prior_sd=self.prior[1]
        )
        out.fits = self.fits + 1
        ya = np.asarray(y, dtype=float)
        sd = float(ya.std())
        out.y_mean, out.y_std = float(ya.mean()), sd if sd > 1e-9 else 1.0
        fresh = self.fits == 0
        params = out._init() if fresh else [p.detach().clone() for p in self.params]
        for p in params:
            p.requires_grad_(True)
        c = self.config
        opt = torch.optim.Adam(
            [
                {"params": params[:-1], "weight_decay": c.weight_decay},
                {"params": params[-1:], "weight_decay": 0.0},
            ],
            lr=c.lr,
        )
        rows = np.asarray(idx, dtype=int)
        yt = torch.as_tensor((ya - out.y_mean) / out.y_std, dtype=torch.float64)[None]
        for _ in range(c.fit_steps if fresh else c.adapt_steps):
            opt.zero_grad()
            mu, sd_m = out._forward(params, rows)
            nll = 0.5 * ((yt - mu) / sd_m[:, None]) ** 2 + sd_m.log()[:, None]
            nll.mean(dim=-1).sum().backward()
            opt.step()
        out.params = [p.detach() for p in params]
        return out

    def predict(self, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Predictive (mean, sd) of a measured yield at pool rows ``idx``: member spread + mean noise."""
        import torch

        with torch.no_grad():
            mu, sd_m = self._forward(self.params, np.asarray(idx, dtype=int))
            var = mu.var(dim=0, unbiased=False) + (sd_m**2).mean()
        mean = mu.mean(dim=0).numpy() * self.y_std + self.y_mean
        return mean.astype(float), (var.sqrt().numpy() * self.y_std).astype(float)

    # -- persistence: the weights, standardisation and version counter rebuild the same model -------
    def to_bytes(self) -> bytes:
        import torch

        buf = io.BytesIO()
        torch.save(
            {
                "seed": self.seed,
                "fits": self.fits,
                "config": self.config.model_dump(),
                "prior": list(self.prior),
                "y": [self.y_mean, self.y_std],
                "params": self.params,
            },
            buf,
        )
        return buf.getvalue()

    @classmethod
    def from_bytes(cls, data: bytes, pool: CodedConditions) -> EmbeddingEnsemble:
        import torch

        st = torch.load(io.BytesIO(data), weights_only=True)
        m = cls(
            pool,
            int(st["seed"]),
            EmbedConfig.model_validate(st["config"]),
            prior_mean=float(st["prior"][0]),
            prior_sd=float(st["prior"][1]),
        )
        m.fits = int(st["fits"])
        m.y_mean, m.y_std = float(st["y"][0]), float(st["y"][1])
        m.params = list(st["params"])
        return m
