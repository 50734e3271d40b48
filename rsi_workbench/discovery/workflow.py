"""The harness ψ: a versioned workflow configuration the campaign runs under (paper eq. 10–11).

Role parameters, the critique schedule and the operation budget live here, so harness replay
(``discovery/harness.py``) can propose edited versions and a campaign can be run with any of them.
"""

from __future__ import annotations

import hashlib
import json

from pydantic import Field

from rsi_workbench.config import StrictModel


class RoleParams(StrictModel):
    """Parameters of the built-in roles (what a harness edit may tune)."""

    max_children: int = Field(
        default=3, ge=1, description="Lead: revisions of one version before it is left alone"
    )
    stale_after: int = Field(
        default=2,
        ge=1,
        description="Lead: consecutive duplicate/insufficient labels that make a direction stale",
    )
    unavailable_rate: float = Field(
        default=0.2, ge=0.0, le=1.0, description="Generation: chance a restart asks for data the domain lacks"
    )
    explore_rate: float = Field(
        default=0.1, ge=0.0, le=1.0, description="Lead: chance of a restart in the least-explored direction"
    )


class CritiqueSchedule(StrictModel):
    """Blinded critique: how many pairwise comparisons per new version, and the tie margin."""

    comparisons_per_version: int = Field(default=3, ge=0)
    tie_margin: float = Field(default=0.25, ge=0.0, description="|Δ weighted profile| below this is a tie")


class OperationBudget(StrictModel):
    """Maximum share of a campaign's episodes each operation may take (1.0 = unlimited)."""

    evolve: float = Field(default=1.0, ge=0.0, le=1.0)
    repair: float = Field(default=1.0, ge=0.0, le=1.0)
    crossover: float = Field(default=0.4, ge=0.0, le=1.0)
    restart: float = Field(default=0.4, ge=0.0, le=1.0)

    def allows(self, operation: str, used: int, n_episodes: int) -> bool:
        """Whether one more ``operation`` keeps its share of ``n_episodes`` within budget."""
        cap = float(getattr(self, operation))
        return cap >= 1.0 or used + 1 <= max(1, int(cap * n_episodes))


class Harness(StrictModel):
    """ψ: a versioned workflow configuration (role parameters, critique schedule, operation budget)."""

    version: str = "builtin-v1"
    roles: RoleParams = RoleParams()
    critique: CritiqueSchedule = CritiqueSchedule()
    operations: OperationBudget = OperationBudget()
    progress_margin: float = Field(
        default=0.2, ge=0.0, description="Progress: weighted-profile gain counted as substantive"
    )

    def digest(self) -> str:
        """A short content hash, recorded with every episode so replay knows which ψ produced it."""
        blob = json.dumps(self.model_dump(mode="json"), sort_keys=True).encode()
        return hashlib.sha256(blob).hexdigest()[:12]
