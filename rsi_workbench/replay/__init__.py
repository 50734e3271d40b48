"""Dream-RSI: discovery trees, the replay simulator, exploration policies and the dreaming loop.

Recorded exploration histories (discovery trees) are replayed offline to score alternative
exploration policies at near-zero cost; the best replay score is deployed for the next online
round, with the unchanged policy π0 always a candidate (monotonic non-regression).
"""

from __future__ import annotations

from rsi_workbench.replay.policies import (
    BASELINES,
    BreadthFirst,
    ExplorationPolicy,
    GreedyDeepestBest,
    IndependentRoots,
    PortfolioParams,
    PortfolioPolicy,
    baseline,
)
from rsi_workbench.replay.simulator import (
    IllegalBatch,
    LegalSet,
    PolicyScore,
    ReplaySimulator,
    ReplayTrace,
    TreeView,
    check_batch,
    mean_value,
    rank_key,
    replay,
    replay_objective,
    rescore,
    score_policy,
)
from rsi_workbench.replay.tree import ROOT, DiscoveryTree, Node, TreeError

__all__ = [
    "BASELINES",
    "ROOT",
    "BreadthFirst",
    "DiscoveryTree",
    "ExplorationPolicy",
    "GreedyDeepestBest",
    "IllegalBatch",
    "IndependentRoots",
    "Node",
    "PolicyScore",
    "PortfolioParams",
    "PortfolioPolicy",
    "ReplaySimulator",
    "LegalSet",
    "ReplayTrace",
    "TreeError",
    "TreeView",
    "baseline",
    "check_batch",
    "mean_value",
    "rank_key",
    "replay",
    "replay_objective",
    "rescore",
    "score_policy",
]
