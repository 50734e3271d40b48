"""Language models behind one interface, every call recorded, replayable and charged to a budget.

- :class:`LLM` (also ``agents.LLM``): ``chat(messages, n, temperature, top_p, max_tokens, stop, seed,
  json_schema=None) -> ChatResult`` (``json_schema``: schema-constrained decoding where the
  backend has the ``json_schema`` capability) and, where the backend can, ``score(prompt, continuations, end=False) -> [log p]``.
- :class:`Sampling`: those sampling settings as one frozen object, the one the backends, the
  recorder and the replay and cache keys take (``llm.chat(messages, **sampling.kwargs())``).
- :class:`ModelConfig`: the ``model:`` block (``backend: transformers|openai``, ``name``, ...).
- :func:`open_model`: a config (plus a run and its budget ledger) -> a :class:`RecordedLLM`.
- Backends: :class:`~rsi_workbench.models.local.TransformersLM` (checkpoint directory or GGUF,
  batched, seeded, scoring) and :class:`~rsi_workbench.models.http.OpenAILM` (OpenAI-compatible HTTP).
  torch/transformers and httpx are imported only when a backend is built.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping

from rsi_workbench.budget import BudgetLedger
from rsi_workbench.models.cache import CallCache
from rsi_workbench.models.config import ModelConfig, ModelPrice, redact_url
from rsi_workbench.models.interface import (
    LLM,
    ChatResult,
    Message,
    ModelError,
    ReplayMissing,
    Sampling,
    Unsupported,
    as_message,
    message_dict,
)
from rsi_workbench.models.record import RecordedLLM
from rsi_workbench.records.run import Run


def identity_of(cfg: ModelConfig) -> str:
    """The backend identity of a config, without loading the model (part of every replay key)."""
    if cfg.backend == "openai":
        return f"openai:{redact_url(cfg.base_url or '')}"
    from rsi_workbench.models.local import local_identity

    return local_identity(cfg.name, cfg.adapter, batch_across_tasks=cfg.batch_across_tasks)


def capabilities_of(cfg: ModelConfig) -> frozenset[str]:
    """What a config's backend can do, statically: ``chat`` and ``complete`` (an openai server
    without ``/completions`` answers the first call with a clear 4xx error, unless
    :func:`rsi_workbench.models.probe.require` refused it at start), ``score`` on transformers only
    (callers that need scoring, like ``ModelLead``, refuse a model without it before any call), and
    ``json_schema`` (schema-constrained chat): transformers with llguidance installed, and openai
    (sent as ``response_format``; a server refusing it answers with a clear 4xx error)."""
    if cfg.backend == "transformers":
        from rsi_workbench.models import constrain

        return frozenset(
            {"chat", "complete", "score"} | ({"json_schema"} if constrain.available() else set())
        )
    return frozenset({"chat", "complete", "json_schema"})


def load_backend(cfg: ModelConfig) -> LLM:
    """The backend of a config, loaded now (no recording: wrap it with :func:`open_model`)."""
    if cfg.backend == "openai":
        from rsi_workbench.models.http import OpenAILM

        return OpenAILM(cfg)
    from rsi_workbench.models.local import TransformersLM

    return TransformersLM.load(cfg)


def shared_loaders(configs: Mapping[str, ModelConfig]) -> dict[str, Callable[[], LLM]]:
    """One lazily loaded backend per distinct model config (replay flags aside), shared by the
    keys (e.g. agent roles) that name the same model: pass each as ``load=`` to :func:`open_model`."""
    loaded: dict[str, LLM] = {}
    lock = threading.Lock()

    def loader(cfg: ModelConfig) -> Callable[[], LLM]:
        key = cfg.model_copy(update={"replay": False, "replay_from": None, "cache": False}).model_dump_json()

        def load() -> LLM:
            with lock:
                if key not in loaded:
                    loaded[key] = load_backend(cfg)
                return loaded[key]

        return load

    return {name: loader(cfg) for name, cfg in configs.items()}


def open_model(
    cfg: ModelConfig,
    run: Run | None = None,
    ledger: BudgetLedger | None = None,
    *,
    role: str = "",
    load: Callable[[], LLM] | None = None,
) -> RecordedLLM:
    """A recorded model for ``cfg``: calls go to the run's events and are charged to ``ledger``;
    the backend loads on the first live call (``load``, e.g. one backend shared by several roles;
    default: :func:`load_backend`), so a fully recorded (or ``replay: true``) run never loads it.
    ``replay_from`` runs' records answer too; ``cache: true`` adds the cross-run call cache
    (:class:`~rsi_workbench.models.cache.CallCache`). A missing API key variable fails here, before any call."""
    if cfg.backend == "openai" and cfg.api_key_env and not cfg.replay:
        import os

        if not os.environ.get(cfg.api_key_env):
            raise ModelError(
                f"the API key variable {cfg.api_key_env} is not set (model {cfg.name!r} at "
                f"{redact_url(cfg.base_url or '')}); export it before the run"
            )
    sources = [Run.open(cfg.replay_from)] if cfg.replay_from else []
    return RecordedLLM(
        load or (lambda: load_backend(cfg)),
        identity=identity_of(cfg),
        model=cfg.name,
        run=run,
        replay=cfg.replay,
        ledger=ledger,
        role=role,
        capabilities=capabilities_of(cfg),
        sources=sources,
        cache=CallCache() if cfg.cache else None,
        price=cfg.price,
    )


__all__ = [
    "LLM",
    "ChatResult",
    "Message",
    "ModelConfig",
    "ModelPrice",
    "ModelError",
    "RecordedLLM",
    "ReplayMissing",
    "Sampling",
    "Unsupported",
    "as_message",
    "capabilities_of",
    "identity_of",
    "load_backend",
    "message_dict",
    "open_model",
    "redact_url",
    "shared_loaders",
]
