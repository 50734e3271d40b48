"""The ``dreaming_writer`` arm's policy-development agent: a recorded language model writing policy code.

``writer:`` in the dreaming config sets the model (offline default: SmolLM2-135M-Instruct), its
sampling, and the sandbox clocks a written policy gets (per call = per replay round, per tree = one
session). The model's calls are ``model_call`` events of the arm's own sub-run, so a resumed arm
answers them from its records. Written programs are stored as artifacts of that sub-run; each
candidate's failure (kind, reason, tree, round) goes into its ``replay_scored`` event, and a deployed
program that fails in a real round hands the rest of that tree to the portfolio fallback
(``policy_failed_online`` event).
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from pydantic import Field

from rsi_workbench.config import StrictModel
from rsi_workbench.models import LLM, ModelConfig, load_backend, open_model
from rsi_workbench.records import Run
from rsi_workbench.replay.policy_writer import PolicyWriter
from rsi_workbench.replay.sandboxed import PolicyFailure, PolicyProgram, policy_isolation
from rsi_workbench.sandbox import Limits

if TYPE_CHECKING:
    import pandas as pd


class WriterSettings(StrictModel):
    """The policy writer of the ``dreaming_writer`` arm (``writer:``)."""

    model: ModelConfig = Field(default_factory=ModelConfig, description="the model block")
    temperature: float = Field(default=0.8, ge=0.0, description="sampling temperature of the programs")
    max_tokens: int = Field(default=400, ge=16, le=8192, description="tokens per written program")
    max_trees: int = Field(default=8, ge=1, le=100, description="trees of π0's replay record in the prompt")
    call_wall_s: float = Field(default=2.0, gt=0, description="sandbox wall clock per replay round")
    tree_budget_s: float = Field(default=30.0, gt=0, description="sandbox wall clock per tree (one session)")
    cpu_s: int = Field(default=10, ge=1, le=600, description="CPU seconds per tree (one session)")

    def limits(self) -> Limits:
        return Limits(
            cpu_soft_s=self.cpu_s,
            cpu_hard_s=self.cpu_s + 1,
            address_space_bytes=512 << 20,
            wall_s=self.call_wall_s,
            session_wall_s=self.tree_budget_s,
        )


_BACKENDS: dict[str, LLM] = {}


def load_writer_backend(cfg: ModelConfig) -> LLM:
    """The backend behind the writer, loaded once per process and config (the arms and seeds of an
    experiment share it); the seam a test replaces with a scripted model double."""
    key = cfg.model_dump_json()
    if key not in _BACKENDS:
        _BACKENDS[key] = load_backend(cfg)
    return _BACKENDS[key]


def open_writer(settings: WriterSettings, run: Run) -> PolicyWriter:
    """The policy writer on the ``model:`` block, its calls recorded in (and replayed from) ``run``.

    Its programs run only in the sandbox, so the plan is obtained first (the choke point:
    ``required`` refuses a weaker one with :class:`~rsi_workbench.sandbox.SandboxUnavailable` before
    any model call) and recorded as a ``sandbox_isolation`` event of ``run``."""
    policy_isolation().record_in(run)
    llm = open_model(
        settings.model, run, None, role="policy_writer", load=lambda: load_writer_backend(settings.model)
    )
    return PolicyWriter(
        llm, temperature=settings.temperature, max_tokens=settings.max_tokens, max_trees=settings.max_trees
    )


def candidate_payload(run: Run, cand: Any, failure: PolicyFailure | None) -> dict[str, Any]:
    """What a ``replay_scored`` event records of one candidate: its parameters (the portfolio
    family) or its program (an artifact), and its failure, if any."""
    program = None
    if isinstance(cand, PolicyProgram):
        program = run.artifacts.put(cand.source.encode(), name=f"{cand.name}.py", media_type="text/x-python")
    return {
        "params": cand.model_dump() if hasattr(cand, "model_dump") else None,
        "program": program,
        "origin": getattr(cand, "origin", "") or "params",
        "failure": None if failure is None else failure.to_json(),
    }


def load_program(run: Run, sha: str | None) -> PolicyProgram | None:
    """A deployed program back from its artifact (``None`` when parameters were deployed)."""
    if not sha:
        return None
    return PolicyProgram(run.artifacts.get(sha).decode(), name=f"program-{sha[:8]}", origin="model")


def written_policy_lines(scored: pd.DataFrame, online: pd.DataFrame) -> list[str]:
    """Per arm: proposals (candidates after π0), how many were programs, how many failed and why
    (failure kinds), programs deployed, and deployed programs that failed in a real round."""
    if not len(scored) or "origin" not in scored.columns:
        return []
    lines = ["", "proposed policies: failed candidates by kind (never deployed), deployed programs"]
    lines.append(f"{'arm':<16} {'proposed':>8} {'programs':>8} {'failed':>6} {'deployed':>8}  failure kinds")
    import pandas as pd

    cols = ("failure.kind", "failure.reason", "failure.tree", "failure.round")
    scored = scored.assign(**{c: None for c in cols if c not in scored.columns})
    kind = pd.Series(scored["failure.kind"], index=scored.index)
    failed = scored[kind.notna()]
    for arm, df in scored[scored["candidate"] > 0].groupby("arm"):
        kinds = Counter(str(k) for k in kind[df.index].dropna())
        progs = int((df["origin"] == "model").sum())
        dep = int((df["deployed"].astype(bool) & (df["origin"] == "model")).sum())
        what = ", ".join(f"{k} {n}" for k, n in kinds.most_common()) or "-"
        lines.append(f"{arm!s:<16} {len(df):>8} {progs:>8} {sum(kinds.values()):>6} {dep:>8}  {what}")
    if len(online):
        lines.append(f"deployed programs that failed in a real round (fallback took over): {len(online)}")
    for _, f in failed.drop_duplicates("failure.kind").head(4).iterrows():
        where = "loading" if f["failure.tree"] != f["failure.tree"] else f"tree {int(f['failure.tree'])}"
        where += "" if f["failure.round"] != f["failure.round"] else f", round {int(f['failure.round'])}"
        lines.append(f"  e.g. {f['failure.kind']} ({where}): {str(f['failure.reason'])[:110]}")
    return lines


__all__ = [
    "WriterSettings",
    "candidate_payload",
    "load_program",
    "load_writer_backend",
    "open_writer",
    "written_policy_lines",
]
