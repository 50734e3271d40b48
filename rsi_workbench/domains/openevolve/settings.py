"""An OpenEvolve task directory's settings block (``task: {kind: openevolve, dir: PATH}``)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from rsi_workbench.config import InputPath, StrictModel
from rsi_workbench.domains.openevolve.task import OpenEvolveTask, load_task


class OpenEvolveTaskConfig(StrictModel):
    """An OpenEvolve task directory used unchanged (``initial_program.py`` with an evolve block,
    ``evaluator.py``, optional ``config.yaml``); see docs/extending-dreaming.md."""

    kind: Literal["openevolve"]
    dir: InputPath = Field(description="the task directory (relative to the config file)")
    timeout: float | None = Field(
        default=None, gt=0, le=86400, description="seconds per evaluator stage (default: config.yaml's)"
    )

    def make(self) -> OpenEvolveTask:
        """The task directory, loaded (links refused, private copy: :func:`.task.load_task`)."""
        return load_task(self.dir, timeout=self.timeout)


__all__ = ["OpenEvolveTaskConfig"]
