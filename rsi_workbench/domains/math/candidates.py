"""The ``dreaming_diverse`` arm's candidate set: the fixed policy families beside π0 and its mutations.

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

from rsi_workbench.config import config_error
from rsi_workbench.replay.dreaming import ParamMutationProposer
from rsi_workbench.replay.policies import ExplorationPolicy, PortfolioParams, baseline
from rsi_workbench.replay.sandboxed import PolicyProgram

#: the label of π0's candidate, and of any other parameter revision
PI0, MUTATION = "pi0", "mutation"
#: the arm whose online run is π0's (the portfolio policy with the ``policy:`` parameters)
PI0_ARM = "portfolio"


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


def check_candidates(config: Any, source: str) -> None:
    """Preflight of ``dreaming:`` and ``fidelity:``: the ``dreaming_diverse`` arm needs a
    ``dreaming.candidates`` block with at least one family or mutation; every family must resolve
    (a built-in name or ``package.module:Name``), once, and not be π0's ``portfolio``;
    ``fidelity.arm`` must be the run's ``dreaming_diverse`` arm and every family needs an online arm. Errors name the file and the field."""
    arms = list(config.arms)
    block = config.dreaming
    if "dreaming_diverse" in arms and block is None:
        raise config_error(
            source,
            "dreaming",
            "arm dreaming_diverse needs a `dreaming: {candidates: {families: [...], mutations: N}}` block",
        )
    if block is not None:
        cs = block.candidates
        if not cs.families and not cs.mutations:
            raise config_error(
                source, "dreaming.candidates", "no family and no mutation: nothing to choose from"
            )
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
        if "dreaming_diverse" not in arms:
            raise config_error(source, "dreaming", "set but no arm uses it: add dreaming_diverse to `arms`")
    fid = config.fidelity
    if fid is not None:
        if fid.arm not in arms:
            raise config_error(source, "fidelity.arm", f"{fid.arm!r} is not one of the run's arms {arms}")
        if fid.arm != "dreaming_diverse":
            raise config_error(
                source,
                "fidelity.arm",
                "only dreaming_diverse replays the fixed families, whose online runs fidelity compares",
            )
        if fid.budget is not None and fid.budget > config.calls:
            raise config_error(source, "fidelity.budget", f"{fid.budget} is above `calls` ({config.calls})")
        families = [online_arm(f) for f in (config.dreaming.candidates.families if config.dreaming else [])]
        missing = [f for f in families if f not in arms]
        if missing:
            raise config_error(
                source, "fidelity", f"families {missing} have no online arm: add them to `arms`"
            )


__all__ = [
    "MUTATION",
    "PI0",
    "PI0_ARM",
    "DiverseProposer",
    "check_candidates",
    "current_source",
    "label_of",
    "online_arm",
]
