"""Independent chat requests in flight together, recorded exactly as if made one after another.

A role that has several model requests at one decision point whose inputs are all fixed (e.g. the
blinded comparisons of one critique stage) opens a :class:`ChatFlight` over them. The flight sends
the requests that will need the model to the backend at once, bounded by ``concurrency`` and by what
the backend takes in flight (:func:`in_flight_limit`); the caller then **takes** the answers in
request order, at the points where the sequential code called ``chat``. Each take is an ordinary
``RecordedLLM.chat`` call: the recorder assigns the same ordinal, replays or charges, checks the
budgets, consults the call cache, appends the same ``model_call`` / ``model_replay`` event and raises
the same error as it would have sequentially; only the backend's answer was computed ahead, and is
handed over by a prefetching proxy instead of being asked for then. So the records are exactly those
of the sequential execution (same events, same order, same payloads apart from measured latency),
whatever order the backend's threads finished in, and a caller may append its own events between
takes.

What is sent ahead: the requests the run has not recorded (a resumed run replays its recorded ones
without calling the model), not answered by the cross-run cache, within the ``agent_calls`` budget
left, and not under ``replay: true``. A backend that generates one request at a time (the local
transformers model; any backend that does not say otherwise) gets nothing ahead: each take calls it
then, as before. An answer computed ahead and never taken (the caller stopped early, a budget or an
error ended the sequence) is dropped unrecorded; a server may have done that work for nothing.

Conditions for exactness: the backend's answer to a request does not depend on when it is asked
(true of a server with seeded sampling, of greedy decoding, of the test doubles), and between takes
the caller makes no other request on the same model whose answer it feeds into a later request of
the flight (then the requests were not independent).
"""

from __future__ import annotations

import json
import threading
from collections import Counter, deque
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from rsi_workbench.budget import AGENT_CALLS
from rsi_workbench.models.interface import (
    JSON_SCHEMA,
    ChatResult,
    MessageLike,
    Sampling,
    message_dict,
    request_key,
)


@dataclass(frozen=True)
class ChatRequest:
    """One chat request: the messages and how they are sampled (``LLM.chat``'s keyword arguments)."""

    messages: Sequence[MessageLike]
    sampling: Sampling = Sampling()

    def kwargs(self) -> dict[str, Any]:
        """The keyword arguments of ``chat`` (:meth:`Sampling.kwargs`)."""
        return self.sampling.kwargs()


def in_flight_limit(backend: Any) -> int:
    """How many single requests ``backend`` takes at once: its declared ``max_concurrent_requests``, an
    OpenAI-compatible server's ``concurrency``, else 1 (a local model generates one at a time, and
    batching different requests into one ``generate`` would change its samples)."""
    declared = getattr(backend, "max_concurrent_requests", None)
    if declared is not None:
        return max(1, int(declared))
    from rsi_workbench.models.http import OpenAILM

    if isinstance(backend, OpenAILM):
        return max(1, int(backend.cfg.concurrency))
    return 1


def _canon(messages: Sequence[MessageLike], kw: Mapping[str, Any]) -> str:
    """A request's identity for handing a precomputed answer over (messages and parameters)."""
    return json.dumps({"messages": [message_dict(m) for m in messages], **kw}, sort_keys=True, default=str)


class _Prefetched:
    """The backend behind a recorder during a flight: a ``chat`` whose answer was computed ahead
    is handed over (or its error raised); everything else goes to the real backend."""

    def __init__(self, inner: Any):
        self._inner = inner
        self._ahead: dict[str, deque[Future[ChatResult]]] = {}
        self._lock = threading.Lock()

    def put(self, canon: str, fut: Future[ChatResult]) -> None:
        with self._lock:
            self._ahead.setdefault(canon, deque()).append(fut)

    def drop(self) -> None:
        with self._lock:
            for q in self._ahead.values():
                for f in q:
                    f.cancel()
            self._ahead.clear()

    def chat(self, messages: Sequence[MessageLike], **kw: Any) -> ChatResult:
        with self._lock:
            q = self._ahead.get(_canon(messages, kw))
            fut = q.popleft() if q else None
        if fut is None:
            return self._inner.chat(messages, **kw)  # type: ignore[no-any-return]
        return fut.result()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class ChatFlight:
    """``requests`` to ``llm``, the ones that need the model sent ahead (module doc); :meth:`take`
    answers them in order. Use as a context manager (or call :meth:`close`)."""

    def __init__(self, llm: Any, requests: Sequence[ChatRequest], *, concurrency: int = 1):
        self.llm = llm
        self.requests = list(requests)
        self.sent_ahead = 0  # requests sent to the backend before their take
        self._next = 0
        self._pool: ThreadPoolExecutor | None = None
        self._proxy: _Prefetched | None = None
        self._raw: dict[int, Future[ChatResult]] = {}  # a backend without a recorder: answers by index
        if concurrency > 1 and len(self.requests) > 1:
            self._start(int(concurrency))

    # -- sending ahead ---------------------------------------------------------------------------
    def _start(self, concurrency: int) -> None:
        from rsi_workbench.models.record import RecordedLLM

        if not isinstance(self.llm, RecordedLLM):  # nothing is recorded: answers by index
            limit = min(concurrency, in_flight_limit(self.llm))
            if limit > 1:
                self._pool = ThreadPoolExecutor(limit, thread_name_prefix="chat-flight")
                for i, r in enumerate(self.requests):
                    self._raw[i] = self._pool.submit(self.llm.chat, r.messages, **r.kwargs())
                self.sent_ahead = len(self._raw)
            return
        todo = self._needing_model(self.llm)
        if not todo:
            return
        try:
            inner = self.llm.backend  # loads it, as the first live take would
        except Exception:  # noqa: BLE001 - the take that needs it raises it, in sequence
            return
        limit = min(concurrency, in_flight_limit(inner), len(todo))
        if limit <= 1:
            return
        proxy = _Prefetched(inner)
        self._pool = ThreadPoolExecutor(limit, thread_name_prefix="chat-flight")
        for i in todo:
            r = self.requests[i]
            proxy.put(_canon(r.messages, r.kwargs()), self._pool.submit(inner.chat, r.messages, **r.kwargs()))
        self.sent_ahead = len(todo)
        with self.llm._lock:
            self.llm._backend = proxy
        self._proxy = proxy

    def _needing_model(self, llm: Any) -> list[int]:
        """Indices of the requests the recorder will send to its backend, as far as can be seen now:
        not recorded, not cached, within the ``agent_calls`` left, constrained only where it can."""
        if llm.replay:
            return []
        led = llm.ledger
        room = float("inf")
        if led is not None and AGENT_CALLS in led.initial:
            room = led.remaining(AGENT_CALLS)
        cache = getattr(llm, "cache", None)
        seen: Counter[str] = Counter()
        out: list[int] = []
        for i, r in enumerate(self.requests):
            if r.sampling.json_schema is not None and JSON_SCHEMA not in llm.capabilities:
                break  # refused at its take; nothing after it is asked
            try:
                body = r.sampling.key_body(messages=[message_dict(m) for m in r.messages])
            except ValueError:
                break  # raised at its take
            key = request_key("chat", llm.identity, llm.model, body, r.sampling.seed)
            ordinal = llm._seen[key] + seen[key]
            seen[key] += 1
            if (key, ordinal) in llm._records:
                continue
            if cache is not None and cache.contains(key, ordinal):  # a hit: its take reads it
                continue  # (only looked at here: a read would count a hit or miss in the cache's stats)
            if len(out) >= room:
                break
            out.append(i)
        return out

    # -- taking ----------------------------------------------------------------------------------
    def take(self) -> ChatResult:
        """The next request's answer, recorded now (exactly as ``llm.chat`` would record it)."""
        i = self._next
        if i >= len(self.requests):
            raise IndexError(f"all {len(self.requests)} requests of the flight were taken")
        self._next += 1
        r = self.requests[i]
        if i in self._raw:
            return self._raw.pop(i).result()
        res: ChatResult = self.llm.chat(r.messages, **r.kwargs())
        return res

    def __iter__(self) -> Iterator[ChatResult]:
        while self._next < len(self.requests):
            yield self.take()

    def close(self) -> None:
        """Drop what was not taken and give the recorder its backend back."""
        if self._proxy is not None:
            self._proxy.drop()
            with self.llm._lock:
                if self.llm._backend is self._proxy:
                    self.llm._backend = self._proxy._inner
            self._proxy = None
        for f in self._raw.values():
            f.cancel()
        self._raw.clear()
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None

    def __enter__(self) -> ChatFlight:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def chat_many(llm: Any, requests: Sequence[ChatRequest], *, concurrency: int = 1) -> list[ChatResult]:
    """Every request's answer, in order, the ones needing the model in flight together (at most
    ``concurrency``); records exactly as ``[llm.chat(...) for each]`` (module doc)."""
    with ChatFlight(llm, requests, concurrency=concurrency) as flight:
        return list(flight)
