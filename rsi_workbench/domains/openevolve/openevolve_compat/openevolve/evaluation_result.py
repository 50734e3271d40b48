"""A compatible ``EvaluationResult`` (the shape OpenEvolve's evaluators return): ``metrics`` (name to
number) and ``artifacts`` (name to str or bytes: logs, failure details). RSI Workbench's own small
implementation of the documented interface, for evaluators run in its sandbox without OpenEvolve
installed; a real ``openevolve`` package, where importable, is used instead.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class EvaluationResult:
    """An evaluation's metrics and artifacts (OpenEvolve's ``openevolve.evaluation_result``)."""

    metrics: dict[str, Any]
    artifacts: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, metrics: dict[str, Any]) -> EvaluationResult:
        """A result holding ``metrics`` and no artifacts (a plain ``evaluate`` dict)."""
        return cls(metrics=dict(metrics))

    def to_dict(self) -> dict[str, Any]:
        """The metrics (what a dict-returning evaluator would have returned)."""
        return dict(self.metrics)

    def has_artifacts(self) -> bool:
        """Whether any artifact is attached."""
        return bool(self.artifacts)

    def get_artifact_keys(self) -> list[str]:
        """The artifact names."""
        return list(self.artifacts)

    def get_artifact_size(self, key: str) -> int:
        """The size of one artifact in bytes (str artifacts as UTF-8)."""
        value = self.artifacts.get(key)
        if value is None:
            return 0
        if isinstance(value, bytes):
            return len(value)
        return len(str(value).encode("utf-8"))

    def get_total_artifact_size(self) -> int:
        """The size of every artifact together, in bytes."""
        return sum(self.get_artifact_size(k) for k in self.artifacts)
