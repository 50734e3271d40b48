"""Batched prediction across tasks: one call of φ_k for every task of a cycle.

A predictor may offer ``predict_many(items)``, items = a sequence of ``(task_id, state, actions)``,
returning one list of :class:`~rsi_workbench.protocol.spec.Prediction` per item, equal to
``[predictor.predict(t, s, a) for t, s, a in items]`` (e.g. one forward pass over every task's
candidates instead of one per task). It must not append events: the loop writes each task's
records in task order around it, and raises if a batched call recorded any. A predictor without
it is called per item (:func:`predict_items`), each item's events kept with its task.

This is the one batched interface of the protocol (the code-repair world model and ranker use it
too): ``BatchPredictor``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from rsi_workbench.protocol.spec import Prediction
from rsi_workbench.records.ordered import Deferred, deferring

PredictItem = tuple[str, Any, Sequence[Any]]  # (task_id, state, actions)


@runtime_checkable
class BatchPredictor(Protocol):
    """A predictor that predicts several tasks' candidates in one call (module doc)."""

    def predict_many(self, items: Sequence[PredictItem]) -> list[list[Prediction]]: ...


def predict_items(
    predictor: Any, items: Sequence[PredictItem]
) -> tuple[list[list[Prediction]], list[Deferred]]:
    """Predictions for every item (``predict_many`` when the predictor has it, else ``predict`` per
    item) and, per item, the events its prediction appended (held, for the caller to write in task
    order; empty for a batched call, which may append none)."""
    many = getattr(predictor, "predict_many", None)
    if many is not None:
        held = Deferred()
        with deferring(held):
            out = list(many(list(items)))
        if held.entries:
            raise RuntimeError(
                f"{type(predictor).__name__}.predict_many appended {len(held.entries)} event(s); a batched "
                "prediction must not record (the loop could not keep the sequential order of the records)"
            )
        if len(out) != len(items):
            raise ValueError(
                f"{type(predictor).__name__}.predict_many returned {len(out)} results for {len(items)} items"
            )
        for (t, _, acts), got in zip(items, out, strict=True):
            if len(got) != len(acts):
                raise ValueError(
                    f"{type(predictor).__name__}.predict_many gave {len(got)} predictions for "
                    f"{len(acts)} candidates of task {t!r}"
                )
        return [list(p) for p in out], [Deferred() for _ in items]
    preds: list[list[Prediction]] = []
    bufs: list[Deferred] = []
    for t, state, acts in items:
        buf = Deferred()
        with deferring(buf):
            preds.append(list(predictor.predict(t, state, list(acts))))
        bufs.append(buf)
    return preds, bufs
