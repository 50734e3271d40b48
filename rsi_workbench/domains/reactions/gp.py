"""A Gaussian-process yield model p(y | conditions): the GP-EI baseline's model family as a predictor.

BoTorch ``SingleTaskGP`` in float64 with BoTorch's default ARD kernel and priors and standardised
outcomes, fitted by ``fit_gpytorch_mll`` with the same fixed number of Adam steps as the baseline
(:class:`~rsi_workbench.domains.reactions.baselines.BOConfig`); a refit warm-starts the
hyperparameters from the previous fit when ``warm_start`` is set. The readout is the Gaussian
posterior predictive of an *observation* (mean, sd with the fitted noise), the calibrated quantity
a proper score (Gaussian NLL) compares with a measured yield. Before any fit the model is a
declared prior N(prior_mean, prior_sd²) for every condition.
"""

from __future__ import annotations

import io
from typing import Any

import numpy as np

from rsi_workbench.domains.reactions.baselines import BOConfig, fit_gp


class GPYieldModel:
    """One GP over a fixed encoded pool: ``fit`` on (pool index, yield) pairs, ``predict`` by index."""

    def __init__(
        self,
        features: np.ndarray,
        seed: int,
        config: BOConfig | None = None,
        *,
        prior_mean: float = 50.0,
        prior_sd: float = 50.0,
    ) -> None:
        self.features = features
        self.seed = int(seed)
        self.config = config or BOConfig()
        self.prior = (float(prior_mean), float(prior_sd))
        self.fits = 0
        self.train_index: list[int] = []
        self.train_y: list[float] = []
        self._hyper: dict[str, Any] | None = None  # the fitted model's state dict
        self._gp: Any = None

    def _model(self, idx: list[int], y: list[float]) -> Any:
        import torch
        from botorch.models import SingleTaskGP
        from botorch.models.transforms import Standardize

        x = torch.as_tensor(self.features[np.asarray(idx)], dtype=torch.float64)
        yt = torch.as_tensor(np.asarray(y, dtype=float), dtype=torch.float64)[:, None]
        return SingleTaskGP(x, yt, outcome_transform=Standardize(m=1))

    def fit(self, idx: list[int], y: list[float]) -> GPYieldModel:
        """A new model fitted on ``(idx, y)`` (hyperparameters warm-started per ``config``); self unchanged."""
        import torch

        if len(idx) < 2:
            raise ValueError(f"a GP fit needs at least 2 observations, got {len(idx)}")
        out = GPYieldModel(
            self.features, self.seed, self.config, prior_mean=self.prior[0], prior_sd=self.prior[1]
        )
        out.fits = self.fits + 1
        out.train_index, out.train_y = [int(i) for i in idx], [float(v) for v in y]
        torch.manual_seed(self.seed * 1009 + len(idx))
        gp = out._model(out.train_index, out.train_y)
        if self._hyper is not None and self.config.warm_start:
            gp.covar_module.load_state_dict(_sub(self._hyper, "covar_module."))
            gp.likelihood.load_state_dict(_sub(self._hyper, "likelihood."))
        fit_gp(gp, self.config)
        gp.eval()
        out._gp, out._hyper = gp, {k: v.detach().clone() for k, v in gp.state_dict().items()}
        return out

    def predict(self, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Posterior predictive (mean, sd) of a measured yield at pool rows ``idx`` (the prior if unfitted)."""
        idx = np.asarray(idx, dtype=int)
        if self._gp is None:
            return np.full(len(idx), self.prior[0]), np.full(len(idx), self.prior[1])
        import torch

        x = torch.as_tensor(self.features[idx], dtype=torch.float64)
        with torch.no_grad():
            post = self._gp.posterior(x, observation_noise=True)
            mean = post.mean[..., 0].numpy()
            sd = post.variance[..., 0].clamp_min(1e-12).sqrt().numpy()
        return mean.astype(float), sd.astype(float)

    # -- persistence: the training data and the fitted state rebuild the identical posterior ------
    def to_bytes(self) -> bytes:
        import torch

        buf = io.BytesIO()
        torch.save(
            {
                "seed": self.seed,
                "fits": self.fits,
                "config": self.config.model_dump(),
                "prior": list(self.prior),
                "train_index": self.train_index,
                "train_y": self.train_y,
                "state": self._hyper,
            },
            buf,
        )
        return buf.getvalue()

    @classmethod
    def from_bytes(cls, data: bytes, features: np.ndarray) -> GPYieldModel:
        import torch

        st = torch.load(io.BytesIO(data), weights_only=True)
        m = cls(
            features,
            int(st["seed"]),
            BOConfig.model_validate(st["config"]),
            prior_mean=float(st["prior"][0]),
            prior_sd=float(st["prior"][1]),
        )
        m.fits = int(st["fits"])
        m.train_index, m.train_y = [int(i) for i in st["train_index"]], [float(v) for v in st["train_y"]]
        if st["state"] is not None:
            gp = m._model(m.train_index, m.train_y)
            gp.load_state_dict(st["state"])
            gp.eval()
            m._gp, m._hyper = gp, st["state"]
        return m


def _sub(state: dict[str, Any], prefix: str) -> dict[str, Any]:
    return {k[len(prefix) :]: v for k, v in state.items() if k.startswith(prefix)}
