"""The path stored ``reactions`` records name as the ``decision: expected_improvement`` rule; the rule
is :class:`rsi_workbench.domains.reactions.acquisition.ExpectedImprovement`."""

from rsi_workbench.domains.reactions.acquisition import ExpectedImprovement

__all__ = ["ExpectedImprovement"]
