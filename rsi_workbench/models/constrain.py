"""Schema-constrained decoding for the local (``transformers``) backend, through ``llguidance``.

``chat(..., json_schema=SCHEMA)`` on :class:`~rsi_workbench.models.local.TransformersLM` masks, at
every generation step, each row's logits to the tokens that keep its text a prefix of some JSON
document valid under ``SCHEMA``; once the document is complete only the end token is allowed. The
JSON is written compactly (``", "`` and ``": "`` separators, no other whitespace), so a small
model cannot spend its budget on whitespace. What it cannot guarantee: an answer cut by
``max_tokens`` is an unfinished document (finish reason ``length``), and schema keywords llguidance
does not implement (e.g. ``propertyNames``) are refused when the schema is compiled (a
``ValueError`` naming them), never silently ignored. Callers still validate what they parse.

``llguidance`` (MIT, a Rust extension with no Python dependencies) is in the ``models`` extra;
without it the local backend lacks the ``json_schema`` capability.
"""

from __future__ import annotations

import importlib.util
import json
import time
from collections.abc import Mapping, Sequence
from typing import Any

ENGINE = "llguidance"
# compact JSON: whitespace only after the separators (llguidance's JSON compile options)
JSON_OPTIONS: dict[str, Any] = {"whitespace_flexible": False, "item_separator": ", ", "key_separator": ": "}


def available() -> bool:
    """True when llguidance (and hence schema-constrained local decoding) is installed."""
    return importlib.util.find_spec(ENGINE) is not None


class SchemaConstraint:
    """One model's llguidance tokenizer (built once: ~1 s for a 49k vocabulary) and its compiled
    grammars (one per distinct schema)."""

    def __init__(self, tokenizer: Any, vocab_size: int, eos: Sequence[int]):
        import llguidance.hf

        try:
            self.lltok = llguidance.hf.from_tokenizer(tokenizer, n_vocab=vocab_size, eos_token=list(eos))
        except ValueError as e:
            raise ValueError(f"schema-constrained decoding needs a fast (tokenizers) tokenizer: {e}") from e
        self.vocab_size, self.eos = vocab_size, frozenset(eos)
        self._grammars: dict[str, str] = {}

    def grammar(self, schema: Mapping[str, Any]) -> str:
        """The compiled grammar of ``schema``; a schema llguidance cannot compile is a ValueError."""
        from llguidance import LLMatcher

        key = json.dumps(schema, separators=(",", ":"))  # property order kept: it is the order written
        if key not in self._grammars:
            grammar = LLMatcher.grammar_from_json_schema(key, overrides=JSON_OPTIONS)  # type: ignore[arg-type]
            is_error, messages = LLMatcher.validate_grammar_with_warnings(grammar, self.lltok)
            if is_error:
                raise ValueError(
                    f"json_schema cannot be compiled for constrained decoding: {'; '.join(messages)}"
                )
            self._grammars[key] = grammar
        return self._grammars[key]

    def processor(self, schema: Mapping[str, Any]) -> Any:
        """A fresh logits processor for one ``generate`` call under ``schema``."""
        return _processor_class()(self, self.grammar(schema))


_PROCESSOR: Any = None


def _processor_class() -> Any:
    """The logits processor class (defined on first use: it subclasses transformers' LogitsProcessor)."""
    global _PROCESSOR
    if _PROCESSOR is not None:
        return _PROCESSOR
    import numpy as np
    import torch
    from llguidance import LLMatcher
    from transformers import LogitsProcessor

    class JsonSchemaLogitsProcessor(LogitsProcessor):  # type: ignore[misc]
        """Masks every row of a ``generate`` batch (conversations x samples) with its own matcher.

        A row that has produced an end token is left alone (``generate`` pads it); a row whose
        matcher fails (a token the grammar refuses, e.g. the padding after a stop string) is left
        unconstrained from then on and its error kept in ``errors``."""

        def __init__(self, constraint: SchemaConstraint, grammar: str):
            self.c, self.grammar = constraint, grammar
            self.matchers: list[Any] = []
            self.free: list[bool] = []  # row finished or failed: no further masking
            self.errors: list[str] = []
            self.seconds = 0.0  # time spent matching and masking (the constraint's own cost)
            self.prompt_len: int | None = None
            self.eos_ids: list[int] = sorted(constraint.eos)

        def __call__(self, input_ids: Any, scores: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return self._mask(input_ids, scores)
            finally:
                self.seconds += time.perf_counter() - t0

        def _mask(self, input_ids: Any, scores: Any) -> Any:
            rows = int(input_ids.shape[0])
            if self.prompt_len is None:
                self.prompt_len = int(input_ids.shape[1])
                self.matchers = [LLMatcher(self.c.lltok, self.grammar) for _ in range(rows)]
                self.free = [False] * rows
            else:
                last = input_ids[:, -1].tolist()
                for i, m in enumerate(self.matchers):
                    if self.free[i]:
                        continue
                    tok = int(last[i])
                    if tok in self.c.eos:
                        self.free[i] = True
                    elif not m.consume_token(tok):
                        self.free[i] = True
                        self.errors.append(f"row {i}: {m.get_error()[:200]}")
            width = int(scores.shape[-1])
            self.eos_ids = [e for e in self.eos_ids if 0 <= e < width]
            for i, m in enumerate(self.matchers):
                if self.free[i]:
                    continue
                allow = np.frombuffer(m.compute_logit_bias(), dtype=np.uint8)
                mask = np.zeros(width, dtype=bool)
                k = min(width, allow.shape[0])
                mask[:k] = allow[:k] > 0
                if not m.is_accepting():  # an end token only once the document is complete (a
                    mask[self.eos_ids] = False  # model's end id may also be an ordinary text token)
                if not mask.any():  # cannot happen with a valid grammar; never mask a row to nothing
                    self.free[i] = True
                    self.errors.append(f"row {i}: no token allowed")
                    continue
                scores[i] = scores[i].masked_fill(torch.from_numpy(~mask).to(scores.device), float("-inf"))
            return scores

    _PROCESSOR = JsonSchemaLogitsProcessor
    return _PROCESSOR
