"""Which repair tasks a run uses (``tasks:`` of a config): a task file or HumanEvalFix, filtered."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from rsi_workbench.config import InputPath, StrictModel


class TaskSource(StrictModel):
    """Which repair tasks: a JSONL file in the task format (README), or HumanEvalFix when ``path`` is null."""

    path: InputPath | None = Field(
        default=None, description="task file (JSONL; relative: to the config file); null = HumanEvalFix"
    )
    ids: list[str] = Field(default_factory=list, description="only these task ids (empty = all)")
    limit: int | None = Field(default=None, ge=1, description="first N tasks after `ids` filtering")
    allow_failing_reference: bool = Field(
        default=False,
        description="run a task file some of whose references fail their own tests (reported apart)",
    )


def load_tasks(src: TaskSource) -> list[Any]:
    """Load the task batch named by the config (any file in the task format runs unchanged)."""
    from rsi_workbench.domains.code_repair import load_humanevalfix, load_task_file

    tasks = load_task_file(src.path) if src.path else load_humanevalfix()
    if src.ids:
        known = {t.task_id: t for t in tasks}
        missing = [i for i in src.ids if i not in known]
        if missing:
            raise ValueError(
                f"tasks.ids: unknown task ids {missing[:5]} (source: {src.path or 'HumanEvalFix'})"
            )
        tasks = [known[i] for i in src.ids]
    if src.limit is not None:
        tasks = tasks[: src.limit]
    return tasks


__all__ = ["TaskSource", "load_tasks"]
