"""Expected improvement as a protocol arm's decision rule (``decision: expected_improvement``).

Under the protocol every candidate reaches the selection rule as a
:class:`~rsi_workbench.protocol.selection.ScoredCandidate` whose ``utility`` is the predicted yield
(eq. 7 with λ = 0) and whose ``uncertainty`` is the predictor's σ̂. :class:`ExpectedImprovement`
ranks them by log EI over the best yield observed so far in the run — the acquisition GP-EI uses
(BoTorch's ``_log_ei_helper``), on the protocol predictor's readout. It is an *acquisition* rule
(``kind: acquisition``), so records and reports keep it apart from eq. 7 utility ranking, as the paper
asks. The incumbent is read through a callable the experiment binds to the run's own observations.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Literal

from rsi_workbench.protocol.selection import ScoredCandidate


class ExpectedImprovement:
    """Highest expected improvement E[max(y − y*, 0)] first, y ~ N(utility, uncertainty²), y* = the
    best observed yield (``incumbent()``); ties broken by proposal order."""

    name = "expected_improvement"
    kind: Literal["utility", "random", "acquisition"] = "acquisition"

    def __init__(self, incumbent: Callable[[], float] | None = None) -> None:
        self.incumbent = incumbent

    def rank(self, candidates: Sequence[ScoredCandidate], rng: random.Random) -> list[int]:
        """The candidates' indices, best log EI first."""
        import torch
        from botorch.acquisition.analytic import _log_ei_helper

        if self.incumbent is None:
            raise ValueError("expected_improvement: no incumbent bound (the best observed yield so far)")
        if any(c.utility is None or c.uncertainty is None for c in candidates):
            raise ValueError(
                "expected_improvement needs a predicted yield and σ̂ for every feasible candidate"
            )
        if not candidates:
            return []
        mean = torch.tensor([float(c.utility) for c in candidates], dtype=torch.float64)  # type: ignore[arg-type]
        sd = torch.tensor([float(c.uncertainty) for c in candidates], dtype=torch.float64).clamp_min(1e-9)  # type: ignore[arg-type]
        log_ei = (_log_ei_helper((mean - float(self.incumbent())) / sd) + sd.log()).tolist()
        order = sorted(range(len(candidates)), key=lambda j: (-log_ei[j], candidates[j].index))
        return [candidates[j].index for j in order]
