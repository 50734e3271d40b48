"""The ``dreaming_diverse`` arm's candidate set (``dreaming:``): fixed policy families beside π0 and mutations.

Each dreaming round replays, on every tree so far: candidate 0 (the deployed policy, which wins
ties), π0 (the ``policy:`` parameters, unless it is candidate 0), every family named in
``dreaming.candidates.families`` (unless it is candidate 0) and ``mutations`` revisions of the last
deployed portfolio parameters (:class:`~rsi_workbench.replay.dreaming.ParamMutationProposer`).
Every candidate carries a *label* — the family's name, ``pi0`` or ``mutation`` — recorded on its
``replay_scored`` event and on ``policy_deployed``, so the report can say which candidate won each
round and compare each family's replay score with its online result (:mod:`.fidelity`).
"""

from __future__ import annotations

import random
from typing import Any

from pydantic import Field

from rsi_workbench.config import StrictModel, config_error
from rsi_workbench.replay.dreaming import ParamMutationProposer
from rsi_workbench.replay.policies import ExplorationPolicy, PortfolioParams, baseline
from rsi_workbench.replay.sandboxed import PolicyProgram

#: the label of π0's candidate, and of any other parameter revision
PI0, MUTATION = "pi0", "mutation"
#: the arm whose online run is π0's (the portfolio policy with the ``policy:`` parameters)
PI0_ARM = "portfolio"


class CandidateSet(StrictModel):
    """The ``dreaming_diverse`` arm's candidates each round: the deployed policy (candidate 0), π0
    (the ``policy:`` parameters), each fixed family by name, and ``mutations`` revisions of the last
    deployed portfolio parameters."""

    families: list[str] = Field(
        default_factory=list,
        description="fixed policy families (independent_roots, greedy_deepest_best, breadth_first, "
        "portfolio, or package.module:Name)",
    )
    mutations: int = Field(default=7, ge=0, le=255, description="parameter mutations of the portfolio π")
    pi0: bool = Field(default=True, description="keep π0 (the `policy:` parameters) a candidate every round")


class DreamingSettings(StrictModel):
    """The ``dreaming:`` block: what the ``dreaming_diverse`` arm may deploy."""

    candidates: CandidateSet = Field(default_factory=CandidateSet)


def label_of(cand: Any, pi0: PortfolioParams) -> str:
    """A candidate's label: a built policy's name (its family), ``pi0``, ``mutation`` or ``program``."""
    if isinstance(cand, PortfolioParams):
        return PI0 if cand == pi0 else MUTATION
    if isinstance(cand, PolicyProgram):
        return "program"
    return str(getattr(cand, "name", type(cand).__name__))


def online_arm(label: str) -> str:
    """The fixed arm whose online run stands for a candidate label (π0's is ``portfolio``)."""
    return PI0_ARM if label == PI0 else label


class DiverseProposer:
    """Proposes π0, the fixed families and parameter mutations (see the module docstring).

    ``base`` is the last deployed portfolio parameters (what is mutated while a family is deployed);
    ``exclude`` the label of candidate 0, which is not proposed again.
    """

    def __init__(
        self,
        families: list[str],
        mutations: int,
        pi0: PortfolioParams,
        *,
        base: PortfolioParams,
        exclude: str,
        keep_pi0: bool = True,
    ):
        self.families, self.mutations, self.pi0 = list(families), mutations, pi0
        self.base, self.exclude, self.keep_pi0 = base, exclude, keep_pi0

    def size(self) -> int:
        """How many candidates this proposer offers at most (besides candidate 0)."""
        return int(self.keep_pi0) + len(self.families) + self.mutations

    def propose(self, context: Any, k: int, rng: random.Random) -> list[Any]:
        """π0, the families (built policies) and mutations of ``base``, at most ``k``."""
        _current, history = context
        out: list[Any] = []
        if self.keep_pi0 and self.exclude != PI0:
            out.append(self.pi0)
        out += [baseline(f) for f in self.families if f != self.exclude]
        if self.mutations:
            muts = ParamMutationProposer().propose((self.base, history), self.mutations, rng)
            out += [m for m in muts if m != self.pi0 or not self.keep_pi0]
        return out[:k]


def current_source(family: str | None, program: Any, params: PortfolioParams) -> Any:
    """Candidate 0 as a policy source: the deployed family (built), program or parameters."""
    if family is not None:
        policy: ExplorationPolicy = baseline(family)
        return policy
    return program or params


def check_candidate_set(block: DreamingSettings, source: str) -> None:
    """Preflight of a ``dreaming:`` block: at least one family or mutation; every family resolves
    (a built-in name or ``package.module:Name``), is named once and is not π0's ``portfolio``.
    Errors name the file and the field."""
    cs = block.candidates
    if not cs.families and not cs.mutations:
        raise config_error(source, "dreaming.candidates", "no family and no mutation: nothing to choose from")
    seen: set[str] = set()
    for i, name in enumerate(cs.families):
        field = f"dreaming.candidates.families[{i}]"
        if name in seen:
            raise config_error(source, field, f"{name!r} is named twice")
        seen.add(name)
        if name == PI0_ARM:
            raise config_error(
                source, field, "portfolio with the `policy:` parameters is π0: set `pi0: true` instead"
            )
        try:
            baseline(name)
        except ValueError as e:
            raise config_error(source, field, str(e)) from None


__all__ = [
    "MUTATION",
    "PI0",
    "PI0_ARM",
    "CandidateSet",
    "DiverseProposer",
    "DreamingSettings",
    "check_candidate_set",
    "current_source",
    "label_of",
    "online_arm",
]
