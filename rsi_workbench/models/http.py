"""The ``openai`` backend: any OpenAI-compatible server (vLLM, Ollama, llama.cpp, ``transformers
serve``, a hosted API) through ``httpx``.

The key is read from the environment variable named by ``api_key_env`` and lives only in the
client's headers; ``base_url`` appears only redacted (:func:`redact_url`) in identities, errors and
events. Requests are bounded by ``concurrency``; 429, 5xx and connection errors are retried
``max_retries`` times with exponential backoff and jitter; any other 4xx fails at once naming the
server, the model and what the server said. After ``breaker_failures`` calls in a row fail every
retry, the circuit breaker opens and later calls raise :class:`CircuitOpen` without a request, so a
run stops cleanly (and resumes later from its recorded calls) instead of burning its budget.
``n`` is really ``n``: when the server returns fewer choices than asked (Ollama ignores ``n``), the
missing samples are requested one at a time with declared seeds, :func:`fill_seeds` (sample ``j``
of a request seeded ``s`` is asked with seed ``s + j``), and the answer's ``meta["n_filled"]``
(recorded in the call's event) says how many were returned, how many filled and with which seeds.

``chat(..., json_schema=SCHEMA)`` sends ``response_format: {"type": "json_schema", "json_schema":
{"name", "schema", "strict": true}}`` (what vLLM, llama.cpp's server, Ollama's OpenAI endpoint and
the OpenAI API accept). A server that refuses the field answers 4xx: the error names the server,
the model and what it said, and says to turn constrained decoding off; a server that silently
ignores it returns plain text, which callers validate anyway (``rsi-workbench models probe``
reports whether the server accepted the field, not whether it honours it; ``transformers serve``
5.24 accepts it and ignores it).
"""

from __future__ import annotations

import os
import random
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from rsi_workbench.models.config import ModelConfig, redact_url
from rsi_workbench.models.interface import (
    BatchedChat,
    ChatResult,
    MessageLike,
    ModelError,
    Sampling,
    Unsupported,
    check_json_schema,
    message_dict,
)


class ModelRequestError(ModelError):
    """The server refused the request (a 4xx other than 429); not retried."""


class ModelUnavailable(ModelError):
    """The server kept failing (429/5xx/connection) through every retry."""


class CircuitOpen(ModelUnavailable):
    """Too many calls in a row failed: no further request is sent."""


class OpenAILM(BatchedChat):
    """An OpenAI-compatible chat server behind the :class:`~rsi_workbench.models.interface.LLM` interface."""

    capabilities = frozenset({"chat", "complete", "json_schema"})

    def __init__(
        self,
        cfg: ModelConfig,
        *,
        backoff_s: float = 0.5,
        max_backoff_s: float = 30.0,
        breaker_failures: int = 3,
        sleep: Callable[[float], None] = time.sleep,
        transport: Any = None,
    ):
        import httpx

        if cfg.backend != "openai" or not cfg.base_url:
            raise ValueError("OpenAILM needs a config with backend 'openai' and a base_url")
        self.cfg = cfg
        self.name = cfg.name
        self.server = redact_url(cfg.base_url)
        self.identity = f"openai:{self.server}"
        headers = {}
        base = cfg.base_url
        if cfg.api_key_env:
            key = os.environ.get(cfg.api_key_env)
            if not key:
                raise ModelError(
                    f"the API key variable {cfg.api_key_env} is not set (model {cfg.name!r} at {self.server}); "
                    "export it before the run"
                )
            headers["Authorization"] = f"Bearer {key}"
            base = _without_userinfo(base)  # the key wins over user:password in the URL
        self._client = httpx.Client(
            base_url=base.rstrip("/") + "/",
            timeout=cfg.timeout_s,
            headers=headers,
            transport=transport,
            limits=httpx.Limits(max_connections=cfg.concurrency, max_keepalive_connections=cfg.concurrency),
        )
        self._slots = threading.BoundedSemaphore(cfg.concurrency)
        self._pool = ThreadPoolExecutor(cfg.concurrency, thread_name_prefix="openai-lm")
        self.backoff_s, self.max_backoff_s, self.breaker_failures = backoff_s, max_backoff_s, breaker_failures
        self._sleep, self._rng = sleep, random.Random()
        self._lock = threading.Lock()
        self._failures_in_a_row = 0
        self.requests = 0  # HTTP requests sent (retries included)

    # -- HTTP with retries and the breaker ---------------------------------------------------------
    def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        import httpx

        last = ""
        for attempt in range(self.cfg.max_retries + 1):
            with self._lock:
                if self._failures_in_a_row >= self.breaker_failures:
                    raise CircuitOpen(
                        f"circuit breaker open: {self.server} (model {self.name!r}) failed "
                        f"{self._failures_in_a_row} calls in a row; no request sent. The run stops here "
                        "and can be resumed when the server is back"
                    )
                self.requests += 1
            retry_after = None
            try:
                with self._slots:
                    r = self._client.post(path, json=body)
            except httpx.TransportError as e:
                last = f"connection error ({type(e).__name__})"
            else:
                if r.status_code < 400:
                    with self._lock:
                        self._failures_in_a_row = 0
                    out: dict[str, Any] = r.json()
                    return out
                said = _server_message(r)
                if r.status_code != 429 and r.status_code < 500:
                    raise ModelRequestError(
                        f"{self.server} refused model {self.name!r}: HTTP {r.status_code}: {said}"
                    ) from None
                last = f"HTTP {r.status_code}: {said}"
                retry_after = _retry_after(r)
            if attempt < self.cfg.max_retries:
                self._sleep(self._backoff(attempt, retry_after))
        with self._lock:
            self._failures_in_a_row += 1
        raise ModelUnavailable(
            f"{self.server} (model {self.name!r}) failed {self.cfg.max_retries + 1} attempts; last: {last}"
        )

    def _backoff(self, attempt: int, retry_after: float | None) -> float:
        """Exponential backoff with equal jitter (half fixed, half random), at least Retry-After."""
        d = min(self.max_backoff_s, self.backoff_s * 2**attempt)
        d = d / 2 + self._rng.uniform(0, d / 2)
        return min(self.max_backoff_s, max(d, retry_after or 0.0))

    # -- the LLM interface (keyword entry points: BatchedChat) -------------------------------------
    def _chat_batch(
        self, conversations: Sequence[Sequence[MessageLike]], sampling: Sampling
    ) -> list[ChatResult]:
        """One request per conversation, ``concurrency`` at a time (its own threads: ``self._pool``
        only ever runs single requests, so a chat waiting on emulated samples cannot starve it)."""
        if len(conversations) == 1:
            return [self._chat_one(conversations[0], sampling)]
        with ThreadPoolExecutor(self.cfg.concurrency, thread_name_prefix="openai-lm-batch") as pool:
            return list(pool.map(lambda c: self._chat_one(c, sampling), conversations))

    def _chat_one(self, messages: Sequence[MessageLike], sampling: Sampling) -> ChatResult:
        body: dict[str, Any] = {
            "model": self.name,
            "messages": [message_dict(m) for m in messages],
            "temperature": sampling.temperature,
            "top_p": sampling.top_p,
            "max_tokens": sampling.max_tokens,
            "stream": False,
        }
        body.update(_counts(sampling))
        if sampling.json_schema is None:
            return self._sample("chat/completions", body, sampling)
        body["response_format"] = response_format(sampling.json_schema)
        try:
            return self._sample("chat/completions", body, sampling)
        except ModelRequestError as e:
            raise ModelRequestError(
                f"{e} (the request asked for schema-constrained output, response_format json_schema; "
                "a server without it needs the role's `constrained: false`)"
            ) from None

    def _complete(self, prompt: str, sampling: Sampling) -> ChatResult:
        """Plain completion through ``/completions`` (a server without it answers 404: a clear 4xx error)."""
        body: dict[str, Any] = {"model": self.name, "prompt": prompt, "stream": False}
        body.update(temperature=sampling.temperature, top_p=sampling.top_p, max_tokens=sampling.max_tokens)
        body.update(_counts(sampling))
        return self._sample("completions", body, sampling)

    def _sample(self, path: str, body: dict[str, Any], sampling: Sampling) -> ChatResult:
        n, seed = sampling.n, sampling.seed
        t0 = time.perf_counter()
        first = self._post(path, body)
        parts = [first]
        returned = len(first.get("choices") or [])
        fill = fill_seeds(seed, returned, n)
        if fill:  # the server ignored n (Ollama does): one request per missing sample, declared seeds
            one = {k: v for k, v in body.items() if k not in ("n", "seed")}
            extra = [{**one, **({"seed": s} if s is not None else {})} for s in fill]
            parts += list(self._pool.map(lambda b: self._post(path, b), extra))
        texts, reasons, completion, prompt = [], [], 0, 0
        for p in parts:
            for c in p.get("choices") or []:
                text = c["text"] if "text" in c else (c.get("message") or {}).get("content")
                texts.append(str(text or ""))
                reasons.append(str(c.get("finish_reason") or "stop"))
            usage = p.get("usage") or {}
            completion += int(usage.get("completion_tokens") or 0)
            prompt = prompt or int(usage.get("prompt_tokens") or 0)
        if len(texts) < n:
            raise ModelError(f"{self.server} (model {self.name!r}) returned {len(texts)} choices, {n} asked")
        meta: dict[str, Any] = {"requests": len(parts)}
        if fill:
            meta["n_filled"] = {"returned": returned, "filled": len(fill), "seeds": fill}
        return ChatResult(
            texts=texts[:n],
            finish_reasons=reasons[:n],
            prompt_tokens=prompt,
            completion_tokens=completion,
            latency_s=time.perf_counter() - t0,
            backend=self.identity,
            model=str(first.get("model") or self.name),
            meta=meta,
        )

    def score(self, prompt: str, continuations: Sequence[str], *, end: bool = False) -> list[float]:
        raise Unsupported(
            f"{self.server} (model {self.name!r}): the openai backend does not score continuations "
            "(OpenAI-compatible servers differ in prompt log-probabilities); use backend 'transformers'"
        )

    def close(self) -> None:
        self._pool.shutdown(wait=False)
        self._client.close()


def _counts(sampling: Sampling) -> dict[str, Any]:
    """The request body's ``n``, ``stop`` and ``seed``, each only when it says something."""
    out: dict[str, Any] = {}
    if sampling.n > 1:
        out["n"] = sampling.n
    if sampling.stop:
        out["stop"] = list(sampling.stop)
    if sampling.seed is not None:
        out["seed"] = sampling.seed
    return out


def fill_seeds(seed: int | None, returned: int, n: int) -> list[int | None]:
    """The seeds of the samples a server did not return: sample ordinal ``j`` (0-based within the
    request's pool; ``returned <= j < n``) is asked with seed ``seed + j`` (kept in 31 bits), so the
    pool is the same whatever the server did with ``n``; an unseeded request fills unseeded."""
    return [None if seed is None else (seed + j) % 2**31 for j in range(max(returned, 0), n)]


def response_format(json_schema: Mapping[str, Any]) -> dict[str, Any]:
    """The OpenAI ``response_format`` of a JSON Schema; its name is the schema's ``title`` (cut to
    the 64 characters ``[a-zA-Z0-9_-]`` OpenAI allows) or ``response``."""
    schema = check_json_schema(json_schema)
    name = re.sub(r"[^a-zA-Z0-9_-]", "_", str(schema.get("title") or "response"))[:64]
    return {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": True}}


def _without_userinfo(url: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[-1]))


def _server_message(r: Any) -> str:
    try:
        obj = r.json()
    except ValueError:
        return r.text[:500]
    if isinstance(obj, dict):
        err = obj.get("error")
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])[:500]
        if err:
            return str(err)[:500]
        if obj.get("detail"):
            return str(obj["detail"])[:500]
    return str(obj)[:500]


def _retry_after(r: Any) -> float | None:
    try:
        return float(r.headers.get("retry-after", ""))
    except ValueError:
        return None
