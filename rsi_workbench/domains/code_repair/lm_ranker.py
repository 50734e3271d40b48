"""The LM-likelihood ranker of code-repair candidates.

Δ log p of a candidate is ``log p(candidate | prompt) - log p(kept | prompt)`` under the task prompt
(:func:`lm_prompt`), from any ``model:`` block through the backend's ``score_with_tokens`` /
``score`` (``models/local.py``'s :func:`~rsi_workbench.models.local.score_continuations`: the prompt
encoded once, its KV cache rewound after each continuation). A backend without scoring (an
OpenAI-compatible server: this client does not score over HTTP) is refused before any call by
:func:`rsi_workbench.models.probe.require`, whose message says what the server's probe found.

:class:`ReadoutPredictor` is eq. 4's P(pass) readout on [Δ log p, length-normalised Δ, operator
type, line suspiciousness] (``use_lm=True``) or on the last two only (``features_readout``): a
standardised L2 logistic regression (a logistic on a log-likelihood feature is Platt scaling, so
its probabilities are calibrated on the data it was fitted on). It is a protocol ``Predictor``
(``predict``/``adapt``/``adapt_cost``/``to_bytes``) with the batched ``predict_many`` of
:mod:`rsi_workbench.protocol.batching`, so reliability (eq. 10) and adaptation (eq. 12) apply to it.
"""

from __future__ import annotations

import hashlib
import json
import math
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rsi_workbench.domains.code_repair import OPERATORS
from rsi_workbench.protocol.spec import PairRecord, Prediction

FEATURES_LM = ("delta_logp", "delta_logp_per_token")
FEATURES_BASE = ("suspiciousness", "multi_edit", *(f"op_{op}" for op in OPERATORS))


def lm_prompt(task: Any) -> str:
    """The text a program is scored after: the task's prompt (for HumanEvalFix its signature and
    docstring), then a line announcing a correct implementation."""
    head = str(getattr(task, "prompt", "") or "").strip()
    return (f"{head}\n\n" if head else "") + "# A correct Python implementation:\n"


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:24]


class LMScorer:
    """log p(program | prompt) and the program's token count, through a model backend, cached per
    (model identity, prompt, program) in memory and optionally in a JSONL file (resumable scoring);
    a scorer from :meth:`from_config` loads its model only when a score is missing.
    ``tokens_read`` / ``seconds``: what live scoring cost (for tokens/s)."""

    def __init__(self, llm: Any, identity: str, cache_path: str | Path | None = None, *, load: Any = None):
        self.llm, self.identity, self._load = llm, identity, load  # load: builds llm on the first miss
        self.cache_path = Path(cache_path) if cache_path is not None else None
        self.cache: dict[str, list[float]] = {}
        self.tokens_read, self.seconds, self.calls = 0, 0.0, 0
        self._lock = threading.Lock()
        if self.cache_path is not None and self.cache_path.exists():
            for line in self.cache_path.read_text().splitlines():
                try:
                    row = json.loads(line)
                except json.JSONDecodeError:
                    continue  # a torn last line
                self.cache[str(row["key"])] = [float(row["logp"]), float(row["tokens"])]

    def seed_from(self, path: str | Path) -> int:
        """Take the scores of another cache file (read only; e.g. a pools directory's) for the keys
        this cache lacks; returns how many were taken. A key covers the model identity, so a file
        written under another model contributes nothing this scorer asks for."""
        n = 0
        for line in Path(path).read_text().splitlines():
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                continue  # a torn last line
            if str(row["key"]) not in self.cache:
                self.cache[str(row["key"])] = [float(row["logp"]), float(row["tokens"])]
                n += 1
        self.seeded = getattr(self, "seeded", 0) + n
        return n

    @classmethod
    def from_config(
        cls, cfg: Any, cache_path: str | Path | None = None, *, where: str = "--model"
    ) -> LMScorer:
        """A scorer for a ``model:`` block; refuses (``Unsupported``) a backend that cannot score."""
        from rsi_workbench.models import identity_of, load_backend
        from rsi_workbench.models.probe import require

        require(cfg, {"score"}, where=where)
        return cls(None, identity_of(cfg), cache_path, load=lambda: load_backend(cfg))

    def _count(self, text: str) -> int:
        tok = getattr(self.llm, "tokenizer", None)
        if tok is not None:
            return max(1, len(tok(text, add_special_tokens=False)["input_ids"]))
        return max(1, len(text.split()))

    def score(self, prompt: str, programs: Sequence[str]) -> list[tuple[float, int]]:
        """(log p, tokens) of each program after ``prompt`` (one backend call for the missing ones)."""
        keys = [_sha(f"{self.identity}\0{prompt}\0{p}") for p in programs]
        todo = list(dict.fromkeys(p for p, k in zip(programs, keys, strict=True) if k not in self.cache))
        if todo:
            if self.llm is None:  # loaded only when a score is missing from the cache
                self.llm = self._load()
            t0 = time.perf_counter()
            if hasattr(self.llm, "score_with_tokens"):
                scores, read = self.llm.score_with_tokens(prompt, todo)
            else:
                scores = self.llm.score(prompt, todo)
                read = self._count(prompt) + sum(self._count(p) for p in todo)
            rows = []
            with self._lock:
                self.seconds += time.perf_counter() - t0
                self.tokens_read += int(read)
                self.calls += 1
                for p, s in zip(todo, scores, strict=True):
                    k = _sha(f"{self.identity}\0{prompt}\0{p}")
                    self.cache[k] = [float(s), float(self._count(p))]
                    rows.append({"key": k, "logp": float(s), "tokens": self._count(p)})
                if self.cache_path is not None:
                    with open(self.cache_path, "a") as f:
                        f.write("".join(json.dumps(r) + "\n" for r in rows))
        return [(self.cache[k][0], int(self.cache[k][1])) for k in keys]

    def throughput(self) -> str:
        """One line: live scoring calls, tokens read, seconds, tokens/s (cached answers cost none)."""
        if not self.calls:
            return "scoring: every score came from the cache (no live call)"
        rate = self.tokens_read / self.seconds if self.seconds > 0 else math.nan
        return (
            f"scoring: {self.calls} call(s), {self.tokens_read} tokens read in {self.seconds:.1f} s "
            f"({rate:.1f} tok/s; cached scores not counted)"
        )


def candidate_features(
    meta: Mapping[str, Any], lp: tuple[float, int] | None, kept: tuple[float, int] | None
) -> dict[str, float]:
    """The readout's features of one candidate: its edit's operators and top suspiciousness, and
    (when scored) Δ log p and the per-token Δ against the kept program."""
    ops = list(meta.get("operators") or str(meta.get("operator", "")).split("+"))
    susp = [float(s) for s in meta.get("suspiciousness", [])] or [0.0]
    out = {"suspiciousness": max(susp), "multi_edit": float(len(ops) > 1)}
    out.update({f"op_{op}": float(op in ops) for op in OPERATORS})
    if lp is not None and kept is not None:
        out["delta_logp"] = lp[0] - kept[0]
        out["delta_logp_per_token"] = lp[0] / lp[1] - kept[0] / kept[1]
    return out


def fit_readout(
    rows: Sequence[Mapping[str, float]], labels: Sequence[float], names: Sequence[str]
) -> dict[str, Any]:
    """A standardised L2 logistic regression of ``labels`` (0/1) on the named features; with one
    class only, the Laplace-smoothed base rate (no slope)."""
    import numpy as np

    x = np.array([[float(r.get(k, 0.0)) for k in names] for r in rows], dtype=float).reshape(
        len(rows), len(names)
    )
    y = np.array([float(v) >= 0.5 for v in labels], dtype=int)
    base = (y.sum() + 0.5) / (len(y) + 1.0)
    if len(set(y.tolist())) < 2:
        return {
            "names": list(names),
            "coef": [0.0] * len(names),
            "intercept": math.log(base / (1 - base)),
            "mean": [0.0] * len(names),
            "scale": [1.0] * len(names),
            "n": len(y),
        }
    from sklearn.linear_model import LogisticRegression

    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale[scale < 1e-9] = 1.0
    lr = LogisticRegression(C=1.0, max_iter=1000).fit((x - mean) / scale, y)
    return {
        "names": list(names),
        "coef": lr.coef_[0].tolist(),
        "intercept": float(lr.intercept_[0]),
        "mean": mean.tolist(),
        "scale": scale.tolist(),
        "n": len(y),
    }


def apply_readout(weights: Mapping[str, Any], rows: Sequence[Mapping[str, float]]) -> list[float]:
    """P(pass) of each feature row under fitted readout weights."""
    out = []
    for r in rows:
        z = float(weights["intercept"])
        for k, c, m, s in zip(
            weights["names"], weights["coef"], weights["mean"], weights["scale"], strict=True
        ):
            z += c * (float(r.get(k, 0.0)) - m) / s
        out.append(1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, z)))))
    return out


class ReadoutPredictor:
    """P(all tests pass) of a candidate from the LM readout (``use_lm``) or the features readout
    (module doc); ``tasks`` maps task ids to tasks (for the prompt), ``scorer`` an :class:`LMScorer`
    (needed with ``use_lm``); ``train``: the (features, label) rows the weights were fitted on, kept
    so :meth:`adapt` refits on them plus the new records."""

    def __init__(
        self,
        tasks: Mapping[str, Any],
        scorer: LMScorer | None,
        weights: Mapping[str, Any],
        *,
        use_lm: bool = True,
        train: Sequence[tuple[Mapping[str, float], float]] = (),
    ):
        self.tasks, self.scorer, self.use_lm = tasks, scorer, use_lm
        self.weights = dict(weights)
        self.train = list(train)
        blob = json.dumps(self.weights, sort_keys=True)
        self.version = f"{'lm' if use_lm else 'features'}_readout-{_sha(blob)[:10]}"

    @staticmethod
    def names(use_lm: bool) -> tuple[str, ...]:
        return (*FEATURES_LM, *FEATURES_BASE) if use_lm else FEATURES_BASE

    @classmethod
    def fit(
        cls,
        tasks: Mapping[str, Any],
        scorer: LMScorer | None,
        train: Sequence[tuple[Mapping[str, float], float]],
        *,
        use_lm: bool = True,
    ) -> ReadoutPredictor:
        """A readout fitted on ``train`` (feature rows from :meth:`features`, 0/1 labels)."""
        w = fit_readout([r for r, _ in train], [y for _, y in train], cls.names(use_lm))
        return cls(tasks, scorer, w, use_lm=use_lm, train=train)

    def features(
        self, task_id: str, kept: str, programs: Sequence[str], metas: Sequence[Mapping[str, Any]]
    ) -> list[dict[str, float]]:
        """Feature rows of candidate programs of one state (one scoring call with the kept program)."""
        if not self.use_lm:
            return [candidate_features(m, None, None) for m in metas]
        if self.scorer is None:  # weights alone (e.g. a cross-fitted fold) score feature rows only
            raise ValueError("the LM readout predicts with a scorer (a model that can score continuations)")
        scored = self.scorer.score(lm_prompt(self.tasks[task_id]), [kept, *programs])
        return [candidate_features(m, s, scored[0]) for m, s in zip(metas, scored[1:], strict=True)]

    def _predictions(self, rows: Sequence[Mapping[str, float]]) -> list[Prediction]:
        ps = apply_readout(self.weights, rows)
        return [
            Prediction(
                utility_terms={"p_all_pass": p},
                version=self.version,
                probs=[],
                extra={k: r[k] for k in FEATURES_LM if k in r},
            )
            for p, r in zip(ps, rows, strict=True)
        ]

    def predict(self, task_id: str, state: Any, actions: Sequence[Any]) -> list[Prediction]:
        """φ(s, a): P(pass) of each candidate action (``.program``, ``.meta``) of a state (``.program``)."""
        if not actions:
            return []
        rows = self.features(task_id, state.program, [a.program for a in actions], [a.meta for a in actions])
        return self._predictions(rows)

    def predict_many(self, items: Sequence[tuple[str, Any, Sequence[Any]]]) -> list[list[Prediction]]:
        """``predict`` for several tasks' candidates at once: every item's LM scoring first (one
        prompt-cached pass per state), then one readout over all rows; records nothing."""
        feats = [
            self.features(t, s.program, [a.program for a in acts], [a.meta for a in acts])
            for t, s, acts in items
        ]
        flat = self._predictions([r for rows in feats for r in rows])
        out, i = [], 0
        for rows in feats:
            out.append(flat[i : i + len(rows)])
            i += len(rows)
        return out

    def adapt(self, records: Sequence[PairRecord], *, seed: int) -> ReadoutPredictor:
        """φ' of eq. 12: refit on the training rows plus the records' executed candidates (label:
        the observation's ``p_all_pass``); deterministic (``seed`` unused: the fit has no randomness)."""
        new = []
        for r in records:
            act = r.action
            row = self.features(
                r.task_id, str(r.state["program"]), [str(act["program"])], [act.get("meta", {})]
            )[0]
            new.append((row, float(r.observation.utility_terms.get("p_all_pass", 0.0))))
        return ReadoutPredictor.fit(self.tasks, self.scorer, [*self.train, *new], use_lm=self.use_lm)

    def adapt_cost(self, n_records: int) -> float:
        """ĉ_adapt: one scoring pass per record (the logistic refit is negligible beside it)."""
        return float(n_records) if self.use_lm else 0.0

    def to_bytes(self) -> bytes:
        return json.dumps(
            {"use_lm": self.use_lm, "weights": self.weights, "version": self.version}, sort_keys=True
        ).encode()

    @classmethod
    def from_bytes(
        cls, data: bytes, tasks: Mapping[str, Any], scorer: LMScorer | None = None
    ) -> ReadoutPredictor:
        """The readout saved by :meth:`to_bytes` (its training rows are not saved: adapt refits on
        the records given then)."""
        d = json.loads(data)
        return cls(tasks, scorer, d["weights"], use_lm=bool(d["use_lm"]))


__all__ = [
    "FEATURES_BASE",
    "FEATURES_LM",
    "LMScorer",
    "ReadoutPredictor",
    "apply_readout",
    "candidate_features",
    "fit_readout",
    "lm_prompt",
]
