"""Record and replay: every model call is a ``model_call`` event, answered from the run when recorded.

The replay key of a request is (call kind, backend identity, model, messages or prompt, sampling
parameters, seed, and the JSON Schema of a schema-constrained chat) plus the **ordinal** of that
identical request within the run, so sampled calls replay in order and a constrained request is never
answered by an unconstrained recording (or the reverse). The request and the response are content-addressed artifacts of the run; the
event carries their sha256, the token counts, latency and finish reasons. A resumed run answers
its recorded requests without calling the model (each answer a ``model_replay`` event when the run
is writable); with ``replay=True`` a request that has no record
raises :class:`ReplayMissing` naming it (never a silent call). Budgets ``model_tokens`` (tokens in +
out), ``agent_calls`` (one per request) and ``usd`` (the call's price from the model block's
``price``: :meth:`~rsi_workbench.models.config.ModelPrice.cost`; each event then carries
``cost_usd``) are charged for live calls only. With a cross-run cache
(:class:`~rsi_workbench.models.cache.CallCache`, ``cache: true``) a request the run has not recorded
is looked up there before the backend: a hit is a ``model_call`` event like a live one (same
request and response artifacts) with ``cached: true``, charged exactly as the live call was.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import Any

from rsi_workbench.budget import AGENT_CALLS, MODEL_TOKENS, USD, BudgetExceeded, BudgetLedger, Hold
from rsi_workbench.models.cache import CallCache
from rsi_workbench.models.config import ModelPrice
from rsi_workbench.models.interface import (
    JSON_SCHEMA,
    LLM,
    BatchedChat,
    ChatResult,
    MessageLike,
    ReplayMissing,
    Sampling,
    Unsupported,
    message_dict,
    request_key,
)
from rsi_workbench.models.prompts import PromptTemplate, record_prompt
from rsi_workbench.records.run import Run

EVENT_KIND = "model_call"
REPLAY_KIND = "model_replay"  # a recorded call answered again (no model call, no charge)


class RecordedLLM(BatchedChat):
    """Wraps a backend (loaded lazily by ``load``) so that its calls are recorded, replayed and charged.

    ``identity``/``model`` name the backend for replay keys without loading it, so a fully recorded
    run replays without ever loading the model.
    """

    def __init__(
        self,
        load: Callable[[], LLM],
        *,
        identity: str,
        model: str,
        run: Run | None = None,
        replay: bool = False,
        ledger: BudgetLedger | None = None,
        role: str = "",
        capabilities: frozenset[str] = frozenset({"chat", "complete", "score"}),
        sources: Sequence[Run] = (),
        cache: CallCache | None = None,
        price: ModelPrice | None = None,
    ):
        if price is None and ledger is not None and USD in ledger.initial:
            raise ValueError(f"a {USD!r} budget needs the model's price (model block: price)")
        self.price = price  # per 1k input / output tokens: each live call's cost_usd, charged to usd
        self.capabilities = capabilities
        self.cache = cache  # the cross-run call cache (``cache: true``): hits charged like live calls
        self.cached_calls = 0
        self._load = load
        self._backend: LLM | None = None
        self.identity, self.model, self.run, self.replay, self.ledger, self.role = (
            identity,
            model,
            run,
            replay,
            ledger,
            role,
        )
        self._lock = threading.RLock()
        self._seen: Counter[str] = Counter()
        self._records: dict[tuple[str, int], dict[str, Any]] = {}
        self._desc: dict[str, str] = {}
        self._prompts: set[str] = set()
        self.live_calls = 0
        self.replayed_calls = 0
        self._holder: dict[tuple[str, int], Run] = {}  # the run whose artifacts hold each record
        for holder in [*sources, *([run] if run is not None else [])]:  # ``sources``: finished runs
            for ev in holder.events(EVENT_KIND):  # whose records answer too; the run's own win
                self._records[(ev.payload["key"], int(ev.payload["ordinal"]))] = ev.payload
                self._holder[(ev.payload["key"], int(ev.payload["ordinal"]))] = holder

    @classmethod
    def wrap(cls, backend: LLM, **kwargs: Any) -> RecordedLLM:
        """Record an already-built backend (its ``identity`` and ``name`` attributes name it)."""
        ident = str(getattr(backend, "identity", type(backend).__name__))
        kwargs.setdefault(
            "capabilities", getattr(backend, "capabilities", frozenset({"chat", "complete", "score"}))
        )
        return cls(lambda: backend, identity=ident, model=str(getattr(backend, "name", "")), **kwargs)

    @property
    def backend(self) -> LLM:
        with self._lock:
            if self._backend is None:
                self._backend = self._load()
            return self._backend

    # -- the LLM interface (keyword entry points: BatchedChat) -------------------------------------
    def _chat_batch(
        self, conversations: Sequence[Sequence[MessageLike]], sampling: Sampling
    ) -> list[ChatResult]:
        """One request per conversation; recorded ones are replayed, the rest go to the backend
        together (batched where the backend batches). ``json_schema`` (schema-constrained decoding)
        is part of the request body, hence of the replay key; a backend without the ``json_schema``
        capability is refused (:class:`Unsupported`) before a live call."""
        bodies = [sampling.key_body(messages=[message_dict(m) for m in c]) for c in conversations]
        with self._lock:
            slots = [self._slot("chat", b, sampling.seed) for b in bodies]
        out: list[ChatResult | None] = [self._replayed(s) for s in slots]
        todo = [i for i, r in enumerate(out) if r is None]
        if not todo:
            return [r for r in out if r is not None]
        with self._live(len(todo), sampling.n * sampling.max_tokens) as held:
            return self._chat_live(conversations, bodies, slots, out, todo, held, sampling)

    def _chat_live(
        self,
        conversations: Sequence[Sequence[MessageLike]],
        bodies: list[dict[str, Any]],
        slots: list[tuple[str, int, str, int | None]],
        out: list[ChatResult | None],
        todo: list[int],
        held: _Held,
        sampling: Sampling,
    ) -> list[ChatResult]:
        """The requests ``todo`` of :meth:`chat_batch` that no record answers: the cross-run cache's,
        then the backend's, each recorded and charged (through ``held``) in request order."""
        hits = self._cached(slots, todo)
        ask = [i for i in todo if i not in hits]
        live: list[ChatResult] = []
        wall = 0.0
        if ask:
            if sampling.json_schema is not None and JSON_SCHEMA not in self.capabilities:
                raise Unsupported(
                    f"{self.identity} (model {self.model!r}) has no schema-constrained decoding (json_schema)"
                )
            kw = sampling.kwargs()  # a backend is any LLM: it takes the keyword arguments
            be = self.backend
            t0 = time.perf_counter()
            batch = getattr(be, "chat_batch", None)
            if batch is not None and len(ask) > 1:
                live = batch([conversations[i] for i in ask], **kw)
            else:
                live = [be.chat(conversations[i], **kw) for i in ask]
            wall = time.perf_counter() - t0
        answers = {**hits, **dict(zip(ask, live, strict=True))}
        for i in todo:  # recorded in request order, whether the cache or the backend answered
            res = answers[i]
            self._record(
                "chat",
                slots[i],
                bodies[i],
                res.to_dict(),
                res.total_tokens,
                res,
                wall,
                cached=i in hits,
                held=held,
            )
            if i not in hits:
                self._to_cache(slots[i], res.to_dict())
            out[i] = res
        return [r for r in out if r is not None]

    def _complete(self, prompt: str, sampling: Sampling) -> ChatResult:
        """Plain completion of a raw prompt, where the backend has ``complete`` in its capabilities."""
        body = sampling.key_body(prompt=prompt)
        with self._lock:
            slot = self._slot("complete", body, sampling.seed)
        rec = self._replayed(slot)
        if rec is not None:
            return rec
        with self._live(1, sampling.n * sampling.max_tokens) as held:
            hit = self._cached([slot], [0]).get(0)
            if hit is not None:
                self._record(
                    "complete", slot, body, hit.to_dict(), hit.total_tokens, hit, 0.0, cached=True, held=held
                )
                return hit
            fn = getattr(self.backend, "complete", None)
            if fn is None or "complete" not in self.capabilities:
                raise Unsupported(f"{self.identity} (model {self.model!r}) has no plain completion")
            t0 = time.perf_counter()
            res: ChatResult = fn(prompt, **sampling.kwargs())
            self._record(
                "complete",
                slot,
                body,
                res.to_dict(),
                res.total_tokens,
                res,
                time.perf_counter() - t0,
                held=held,
            )
            self._to_cache(slot, res.to_dict())
            return res

    def score(self, prompt: str, continuations: Sequence[str], *, end: bool = False) -> list[float]:
        body = {"prompt": prompt, "continuations": list(continuations), "end": end}
        with self._lock:
            slot = self._slot("score", body, None)
        rec = self._replayed(slot)
        if rec is not None:
            return list(rec.meta["scores"])
        with self._live(1, 0) as held:
            hit = self._cached([slot], [0]).get(0)
            if hit is not None:
                self._record(
                    "score", slot, body, hit.to_dict(), hit.total_tokens, hit, 0.0, cached=True, held=held
                )
                return list(hit.meta["scores"])
            be = self.backend
            t0 = time.perf_counter()
            with_tokens = getattr(be, "score_with_tokens", None)
            if with_tokens is not None:
                scores, tokens = with_tokens(prompt, continuations, end=end)
            else:
                scores, tokens = be.score(prompt, continuations, end=end), 0
            latency = time.perf_counter() - t0
            res = ChatResult(
                [], [], tokens, 0, latency, self.identity, self.model, meta={"scores": list(scores)}
            )
            self._record("score", slot, body, res.to_dict(), tokens, res, latency, held=held)
            self._to_cache(slot, res.to_dict())
            return list(scores)

    def use_prompt(self, template: PromptTemplate) -> None:
        """Version a prompt template into the run (once per distinct text)."""
        if self.run is not None and template.sha256 not in self._prompts:
            with self._lock:
                record_prompt(self.run, template)
                self._prompts.add(template.sha256)

    # -- records -----------------------------------------------------------------------------------
    def _slot(self, kind: str, body: dict[str, Any], seed: int | None) -> tuple[str, int, str, int | None]:
        key = request_key(kind, self.identity, self.model, body, seed)
        if "messages" in body:
            last = body["messages"][-1]["content"] if body["messages"] else ""
            self._desc[key] = f"last message {last[:120]!r}" + (
                ", constrained by a json_schema" if "json_schema" in body else ""
            )
        elif kind == "complete":
            self._desc[key] = f"prompt ending {body['prompt'][-120:]!r}"
        else:
            self._desc[key] = (
                f"prompt ending {body['prompt'][-120:]!r}, {len(body['continuations'])} continuations"
            )
        ordinal = self._seen[key]
        self._seen[key] += 1
        return key, ordinal, kind, seed

    def _replayed(self, slot: tuple[str, int, str, int | None]) -> ChatResult | None:
        key, ordinal, kind, seed = slot
        rec = self._records.get((key, ordinal))
        if rec is None:
            if self.replay:
                raise ReplayMissing(
                    f"replay: no recorded answer for {kind} request {key[:12]} #{ordinal} "
                    f"(backend {self.identity}, model {self.model!r}, seed {seed}, role {self.role or '-'}): "
                    f"{self._desc.get(key, '')}"
                )
            return None
        holder = self._holder.get((key, ordinal))
        if holder is None:  # recorded in this process without a run: cannot happen
            return None
        data = holder.artifacts.get_json(rec["response"])
        with self._lock:
            self.replayed_calls += 1
            if self.run is not None and self.run.log is not None:  # a writable run notes the replay
                if holder is not self.run:  # answered by a source run: its artifacts come along
                    for sha in (rec["request"], rec["response"]):
                        self.run.artifacts.put(holder.artifacts.get(sha), name=f"model-replayed-{key[:12]}")
                self.run.append(REPLAY_KIND, self._replay_payload(rec, kind, key, ordinal))
        return ChatResult(**{**data, "replayed": True})

    def _replay_payload(self, rec: dict[str, Any], kind: str, key: str, ordinal: int) -> dict[str, Any]:
        """A ``model_replay`` event: which recorded call answered (its artifacts and token counts,
        charged nothing), asked by which role."""
        fields = ("request", "response", "prompt_tokens", "completion_tokens", "finish_reasons")
        return {
            "call": kind,
            "key": key,
            "ordinal": ordinal,
            "role": self.role,
            "backend": self.identity,
            "model": self.model,
            **{f: rec.get(f) for f in fields},
        }

    def _cached(
        self, slots: Sequence[tuple[str, int, str, int | None]], todo: list[int]
    ) -> dict[int, ChatResult]:
        """What the cross-run cache holds of the requests ``todo`` (by index); the caller records
        each as a ``model_call`` event with ``cached: true``, charged like a live call."""
        if self.cache is None:
            return {}
        hits = {}
        for i in todo:
            data = self.cache.get(slots[i][0], slots[i][1])
            if data is not None:
                hits[i] = ChatResult(**{**data, "replayed": False})
        return hits

    def _to_cache(self, slot: tuple[str, int, str, int | None], response: dict[str, Any]) -> None:
        if self.cache is not None:
            self.cache.put(slot[0], slot[1], slot[2], response)

    @contextmanager
    def _live(self, calls: int, tokens_each: int) -> Iterator[_Held]:
        """Hold the budgets ``calls`` live calls may spend while they are in flight: one
        ``agent_calls`` each, and up to ``tokens_each`` completion tokens each of ``model_tokens``
        (a call starts while any of that is free: one call may use more than is left, and is
        charged what is left). Calls from other threads see only what no call in flight holds, so
        calls made together never spend more than the budget."""
        led = self.ledger
        if led is None:
            yield _Held(None, None, 0.0)
            return
        with ExitStack() as stack:
            c = t = u = None
            usd_each = 0.0
            if AGENT_CALLS in led.initial:
                if not led.can_spend(AGENT_CALLS, calls):
                    raise BudgetExceeded(
                        f"budget {AGENT_CALLS!r}: {calls} model call(s) exceed the remaining {led.remaining(AGENT_CALLS)}"
                    )
                c = stack.enter_context(led.hold(AGENT_CALLS, calls))
            if MODEL_TOKENS in led.initial:
                if led.remaining(MODEL_TOKENS) <= 0:
                    raise BudgetExceeded(f"budget {MODEL_TOKENS!r} is spent: no model call is made")
                t = stack.enter_context(led.hold(MODEL_TOKENS, float(calls * tokens_each), need=1e-9))
            if USD in led.initial and self.price is not None:
                if led.remaining(USD) <= 0:
                    raise BudgetExceeded(f"budget {USD!r} is spent: no model call is made")
                usd_each = self.price.cost(0, tokens_each)  # the completion's most; the prompt's is unknown
                u = stack.enter_context(led.hold(USD, calls * usd_each, need=1e-12))
            yield _Held(c, t, float(tokens_each), u, usd_each)

    def _record(
        self,
        kind: str,
        slot: tuple[str, int, str, int | None],
        body: dict[str, Any],
        response: dict[str, Any],
        tokens: int,
        res: ChatResult,
        wall: float,
        *,
        cached: bool = False,
        held: _Held | None = None,
    ) -> None:
        key, ordinal, _, seed = slot
        with self._lock:
            if cached:
                self.cached_calls += 1
            else:
                self.live_calls += 1
            if self.run is not None:
                arts = self.run.artifacts
                req_sha = arts.put_json(body, name=f"model-request-{key[:12]}", kind="model_request")
                resp_sha = arts.put_json(response, name=f"model-response-{key[:12]}", kind="model_response")
                payload = {
                    "call": kind,
                    "key": key,
                    "ordinal": ordinal,
                    "role": self.role,
                    "backend": self.identity,
                    "model": self.model,
                    "params": body.get("params", {}),
                    "seed": seed,
                    "request": req_sha,
                    "response": resp_sha,
                    "prompt_tokens": res.prompt_tokens,
                    "completion_tokens": res.completion_tokens,
                    "finish_reasons": res.finish_reasons,
                    "latency_s": res.latency_s,
                    "truncated_tokens": res.truncated_tokens,
                }
                if "json_schema" in body:  # only then: other events stay as they were
                    payload["json_schema"] = True
                if res.meta.get("n_filled"):  # the server ignored n: the samples filled, their seeds
                    payload["n_filled"] = res.meta["n_filled"]
                if cached:  # answered by the cross-run cache (charged as a live call)
                    payload["cached"] = True
                if self.price is not None:  # only then: other events stay as they were
                    payload["cost_usd"] = self.price.cost(res.prompt_tokens, res.completion_tokens)
                self.run.append(EVENT_KIND, payload)
                self._records[(key, ordinal)] = payload
                self._holder[(key, ordinal)] = self.run
            led = self.ledger
            if led is not None:
                calls_held = held.calls if held is not None else None
                tokens_held = held.tokens if held is not None else None
                if AGENT_CALLS in led.initial:
                    if calls_held is not None:
                        calls_held.spend(1, reason=f"model {kind}", key=key[:12])
                    else:
                        led.spend(AGENT_CALLS, 1, reason=f"model {kind}", key=key[:12])
                if MODEL_TOKENS in led.initial:
                    rem = led.remaining(MODEL_TOKENS)
                    kw: dict[str, Any] = dict(key=key[:12], tokens=tokens, exhausted=tokens > rem)
                    if tokens_held is not None and held is not None:
                        tokens_held.spend(
                            min(float(tokens), rem), release=held.tokens_each, reason=f"model {kind}", **kw
                        )
                    else:
                        led.spend(MODEL_TOKENS, min(float(tokens), rem), reason=f"model {kind}", **kw)
                if USD in led.initial and self.price is not None:
                    cost = self.price.cost(res.prompt_tokens, res.completion_tokens)
                    rem = led.remaining(USD)  # the call that crosses the budget is charged what is left
                    kw = dict(key=key[:12], cost_usd=cost, exhausted=cost > rem)
                    usd_held = held.usd if held is not None else None
                    if usd_held is not None and held is not None:
                        usd_held.spend(min(cost, rem), release=held.usd_each, reason=f"model {kind}", **kw)
                    else:
                        led.spend(USD, min(cost, rem), reason=f"model {kind}", **kw)


@dataclass
class _Held:
    """The budget holds of live calls in flight (:meth:`RecordedLLM._live`)."""

    calls: Hold | None
    tokens: Hold | None
    tokens_each: float
    usd: Hold | None = None
    usd_each: float = 0.0
