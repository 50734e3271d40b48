"""The coder's own ranking as the selection (method ``coder_prior``; no world model).

The :class:`~rsi_workbench.domains.code_repair.coder.MutationCoder` draws its candidates weighted by
its own preference (suspiciousness² × operator prior × the operator's site weight; two edits: the
product), recorded as each candidate's ``meta['weight']``. :class:`CoderPriorPredictor` turns that
weight into the protocol's prediction so that ``utility_argmax`` executes the coder's top-weighted
candidate first (ties: proposal order): ``p_all_pass`` (and ``pass_fraction``) is a candidate's
share w / Σw of the proposal's weights. That share is a preference, not a probability of passing;
the method never adapts, so nothing is learnt from it, and its reliability events only describe it.
A candidate without a weight (a model coder's sample) has weight 0.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from rsi_workbench.protocol.spec import PairRecord, Prediction

VERSION = "coder_prior-v1"


def candidate_weight(action: Any) -> float:
    """The coder's weight of a candidate (``meta['weight']``), 0 when it carries none."""
    meta = getattr(action, "meta", None) or {}
    return max(0.0, float(meta.get("weight", 0.0) or 0.0))


class CoderPriorPredictor:
    """φ of ``coder_prior``: each candidate's share of the proposal's coder weights (module doc)."""

    version = VERSION

    def predict(self, task_id: str, state: Any, actions: Sequence[Any]) -> list[Prediction]:
        w = [candidate_weight(a) for a in actions]
        total = sum(w)
        share = [x / total if total > 0 else 1.0 / max(len(w), 1) for x in w]
        return [
            Prediction(
                utility_terms={"p_all_pass": s, "pass_fraction": s},
                version=self.version,
                probs=[],
                extra={"coder_weight": x},
            )
            for s, x in zip(share, w, strict=True)
        ]

    def predict_many(self, items: Sequence[tuple[str, Any, Sequence[Any]]]) -> list[list[Prediction]]:
        return [self.predict(t, s, acts) for t, s, acts in items]

    def adapt(self, records: Sequence[PairRecord], *, seed: int) -> CoderPriorPredictor:
        return self  # the coder's ranking is fixed (the method never enables adaptation)

    def adapt_cost(self, n_records: int) -> float:
        return 0.0

    def to_bytes(self) -> bytes:
        return json.dumps({"kind": "coder_prior", "version": self.version}).encode()

    def load_bytes(self, data: bytes) -> CoderPriorPredictor:
        return CoderPriorPredictor()


__all__ = ["CoderPriorPredictor", "candidate_weight"]
