"""Which ``Coder`` proposes the repairs of a code-repair experiment: the ``coder:`` config block.

``kind: mutation`` (the default, and what every config without the block runs) is the built-in
SBFL + mutation coder; ``llm`` is :class:`~rsi_workbench.domains.code_repair.llm_coder.LLMCoder`
on the ``model:`` block (the offline default, a local checkpoint on a GPU, or an OpenAI-compatible
server); ``hybrid`` fills ``k`` from the model first, then with mutants.

The model's calls of one seed are recorded in one run, ``<out>/coder/seed<s>/``, shared by the
methods of that seed: each (method, seed) run opens its own recorder on it, so a request that an
earlier method already made (the same prompt, sampling parameters and seed, the same ordinal) is
answered from the records. Every method asks the first round's prompts with the same seeds (its
propose rng depends only on (seed, cycle, task)), so the coder's first answers are generated once
and replayed to the other methods; prompts differ only after selections differ.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from rsi_workbench.config import StrictModel
from rsi_workbench.models.config import ModelConfig


class CoderSettings(StrictModel):
    """The proposer θ_0 of a code-repair experiment (``coder:``)."""

    kind: Literal["mutation", "llm", "hybrid"] = Field(
        default="mutation",
        description="mutation (SBFL + AST mutants) | llm | hybrid (llm first, then mutants)",
    )
    model: ModelConfig = Field(default_factory=ModelConfig, description="the model block (llm, hybrid)")
    temperature: float = Field(default=0.8, ge=0.0)
    top_p: float = Field(default=0.95, gt=0.0, le=1.0)
    max_tokens: int = Field(default=256, ge=1)
    sample_cap: int | None = Field(default=None, ge=1, description="samples per round at most; null = 2k")
    batched: bool = Field(default=True, description="one call asks for all missing samples (n > 1)")
    stop: list[str] = Field(
        default_factory=lambda: ["\n```\n"], description="stop strings (default: the closing code fence)"
    )


def uses_model(settings: CoderSettings | None) -> bool:
    return settings is not None and settings.kind != "mutation"


def coder_run_path(out: Path, seed: int) -> Path:
    """The run holding the coder's model calls for one seed (shared by that seed's methods)."""
    return Path(out) / "coder" / f"seed{seed}"


def open_llm_coder(
    settings: CoderSettings, out: Path, seed: int, backend: Any = None, *, load: Any = None
) -> Any:
    """An ``LLMCoder`` whose model calls are recorded in (and replayed from) the seed's coder run;
    ``backend``: an already-built ``agents.LLM`` (a test double, a benchmark's model) instead of
    the ``model:`` block's; ``load``: the block's backend loaded once and shared by several coders
    (:func:`rsi_workbench.models.shared_loaders`, e.g. by the methods of a seed in one Ray task)."""
    from rsi_workbench.domains.code_repair.llm_coder import LLMCoder
    from rsi_workbench.models import RecordedLLM, open_model
    from rsi_workbench.records import Run

    path = coder_run_path(out, seed)
    # how calls are made, not what
    how = {"model": {"replay", "timeout_s", "concurrency", "max_retries", "cache"}}
    cfg = {"coder": settings.model_dump(mode="json", exclude=how), "seed": seed}
    run = Run.create(path, cfg, kind="code_repair_coder", exist_ok=True, seed=seed)
    if backend is not None:
        llm = RecordedLLM.wrap(backend, run=run, replay=settings.model.replay, role="coder")
    else:
        llm = open_model(settings.model, run, None, role="coder", load=load)
    return LLMCoder(
        llm,
        temperature=settings.temperature,
        top_p=settings.top_p,
        max_tokens=settings.max_tokens,
        sample_cap=settings.sample_cap,
        batched=settings.batched,
        stop=tuple(settings.stop),
        prompt_run=run,
    )


def close_coder(spec: Any) -> None:
    """Close the coder run a run's model coder recorded into (nothing for the mutation coder)."""
    llm = getattr(spec.policy, "llm", None)
    run = getattr(llm, "prompt_run", None)
    if run is not None:
        run.close()
