"""Per-arm settings of a reactions campaign (the ``reactions`` experiment's ``methods:``): a method
with its own parameters.

``methods:`` lists plain method names (``predictor_utility``, ``gp_ei``, ...: the experiment-wide
settings apply, as they always did) or arms::

    methods:
      - {name: prior_protocol_l0, kind: predictor_utility, prior: {from: campaigns, share: any},
         lambda: 0, adaptation: true}
      - {name: gp_ei_prior, kind: gp_ei, prior: {from: campaigns, share: any}}

An arm's ``name`` is what runs, records and reports call it; ``kind`` is the method it runs;
``lambda`` overrides ``uncertainty_penalty`` (eq. 7) for that arm; ``adaptation: false`` runs the
protocol with adaptation off (the prior, or φ0, selects every guided round); ``prior`` is a transfer
prior (:class:`~rsi_workbench.domains.reactions.prior.PriorSpec`): the deep ensemble's φ0 for a
protocol arm, the GP's mean function for ``gp_ei`` and for a protocol arm of a ``_gp`` kind (the
prior-mean GP: adaptation is a Bayesian update on top of the prior).

Two more protocol-arm settings (the GP factorial, ``configs/reactions/factorial.yaml``):
``updates: every_observation`` refits the predictor every cycle without gating it (prequential data
with a one-cycle gate window, gates that always pass and a reliability bar no predictor meets:
each refit sees every observation but the latest; the default ``gated`` is the configured
protocol); ``decision: expected_improvement`` ranks candidates by expected improvement over the
best observed yield from the predictor's (mean, σ̂) instead of eq. 7 — an acquisition rule, reported
apart from eq. 7 (:mod:`rsi_workbench.domains.reactions.acquisition`). ``gates: oracle`` (under a
declared ``corruption``) has the gates read the true yields
(:func:`~rsi_workbench.domains.reactions.corruption.oracle_gate_parts`).
"""

from __future__ import annotations

from typing import Literal

import pandas as pd
from pydantic import ConfigDict, Field, model_validator

from rsi_workbench.config import StrictModel
from rsi_workbench.domains.reactions.prior import PriorSpec

Method = Literal[
    "predictor_utility",
    "predictor_information",
    "predictor_utility_gp",
    "predictor_information_gp",
    "predictor_utility_embed",
    "predictor_information_embed",
    "gp_ei",
    "random",
]
#: the methods run through the protocol loop; ``_gp``: with the GP predictor (:class:`GPPredictor`,
#: the GP-EI baseline's model family and ``bo`` fit settings) instead of the deep ensemble; ``_embed``:
#: with the ensemble over learned condition embeddings (:class:`EmbeddingPredictor`, ``embed`` settings)
PREDICTOR_METHODS = (
    "predictor_utility",
    "predictor_information",
    "predictor_utility_gp",
    "predictor_information_gp",
    "predictor_utility_embed",
    "predictor_information_embed",
)
#: the kinds a transfer prior applies to: the deep ensemble under the protocol (its φ0), the GP under
#: the protocol and GP-EI (the prior as the GP's mean function; under the protocol: the prior-mean GP
#: of :mod:`rsi_workbench.domains.reactions.prior_gp`, ``prior_gp`` settings)
PRIOR_KINDS = (
    "predictor_utility",
    "predictor_information",
    "predictor_utility_gp",
    "predictor_information_gp",
    "gp_ei",
)


class MethodSpec(StrictModel):
    """One arm: a method kind with its own λ, adaptation switch and transfer prior."""

    model_config = ConfigDict(
        extra="forbid", frozen=True, validate_default=True, populate_by_name=True, serialize_by_alias=True
    )

    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_.+-]+$", description="the arm's name in records")
    kind: Method
    prior: PriorSpec | None = Field(
        default=None, description="transfer prior (deep ensemble, GP or GP-EI kinds)"
    )
    lambda_: float | None = Field(
        default=None,
        ge=0.0,
        alias="lambda",
        description="λ of eq. 7 for this arm (unset: uncertainty_penalty)",
    )
    adaptation: bool = Field(default=True, description="protocol arms: false = the prior selects throughout")
    updates: Literal["gated", "every_observation"] = Field(
        default="gated",
        exclude_if=lambda v: v == "gated",  # arms without it dump as before it existed
        description="protocol arms: gated (the configured protocol) or refit every cycle, ungated",
    )
    decision: Literal["eq7", "expected_improvement"] = Field(
        default="eq7",
        exclude_if=lambda v: v == "eq7",
        description="predictor_utility arms: eq. 7 utility ranking or expected improvement (acquisition)",
    )

    gates: Literal["observed", "oracle"] = Field(
        default="observed",
        exclude_if=lambda v: v == "observed",
        description="gated protocol arms: oracle = the gates read the uncorrupted yields (sensitivity "
        "pilot under a declared corruption; never the predictor's training data)",
    )

    @model_validator(mode="after")
    def _check(self) -> MethodSpec:
        if self.prior is not None and self.kind not in PRIOR_KINDS:
            raise ValueError(
                f"arm {self.name!r}: a prior applies to kinds {list(PRIOR_KINDS)}, not {self.kind!r}"
            )
        if self.kind not in PREDICTOR_METHODS and (self.lambda_ is not None or not self.adaptation):
            raise ValueError(f"arm {self.name!r}: lambda and adaptation apply to protocol kinds only")
        if self.lambda_ is not None and not self.kind.startswith("predictor_utility"):
            raise ValueError(f"arm {self.name!r}: lambda (eq. 7) applies to predictor_utility kinds only")
        if self.kind not in PREDICTOR_METHODS and self.updates != "gated":
            raise ValueError(f"arm {self.name!r}: updates applies to protocol kinds only")
        if self.decision == "expected_improvement":
            if not self.kind.startswith("predictor_utility"):
                raise ValueError(
                    f"arm {self.name!r}: decision: expected_improvement applies to predictor_utility kinds only"
                )
            if self.lambda_ is not None:
                raise ValueError(
                    f"arm {self.name!r}: lambda is eq. 7's; decision: expected_improvement takes none"
                )
        if self.gates == "oracle" and (
            self.kind not in PREDICTOR_METHODS or self.updates != "gated" or not self.adaptation
        ):
            raise ValueError(
                f"arm {self.name!r}: gates: oracle applies to gated protocol arms with adaptation only"
            )
        if self.updates == "every_observation" and not self.adaptation:
            raise ValueError(f"arm {self.name!r}: updates: every_observation needs adaptation: true")
        return self


def arm_of(entry: str | MethodSpec) -> MethodSpec:
    """A plain method name as an arm with the experiment-wide settings."""
    return entry if isinstance(entry, MethodSpec) else MethodSpec(name=entry, kind=entry)  # type: ignore[arg-type]


def is_protocol(entry: str | MethodSpec) -> bool:
    """Whether an arm runs through the protocol loop (a predictor method)."""
    return arm_of(entry).kind in PREDICTOR_METHODS


def protocol_rows(frame: pd.DataFrame) -> pd.Series:
    """Which rows of a runs frame are protocol runs (by their arm's kind, ``arm_kind``; runs of plain
    methods: by method)."""
    kind = frame["arm_kind"].fillna(frame["method"]) if "arm_kind" in frame.columns else frame["method"]
    return kind.isin(PREDICTOR_METHODS)
