"""Model-backed Critique and Progress: the judging roles written by a language model.

Both read a prompt template (``discovery/prompts/critique_ask.txt``, ``progress_ask.txt``) and answer
in a one-line format that is parsed and validated against the record types: a blinded Critique's
``preference: a|b|tie|abstain`` becomes a :class:`~rsi_workbench.discovery.records.CritiquePreference`,
a Progress ``label: ...`` a :class:`~rsi_workbench.discovery.records.ProgressLabel`. A reply that
does not parse, or a label the evidence cannot carry (a ``necessary_repair`` that is no repair, a
gain claimed without executed evidence), is a failed turn and writes no record. The Critique still
sees only the blinded dossiers (the episode checks them before any role sees them). These roles
are never trained on (``credit.NEVER_SUPERVISED``) and never driven by the fine-tuned theta+.
"""

from __future__ import annotations

import json
import re
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, get_args

from rsi_workbench.agents import LLM, Message, Preference
from rsi_workbench.discovery.records import ProgressLabelName
from rsi_workbench.discovery.roles import SYSTEM
from rsi_workbench.models.interface import Sampling
from rsi_workbench.models.parallel import ChatFlight, ChatRequest
from rsi_workbench.models.prompts import load_prompt

CRITIQUE_ASK = load_prompt("rsi_workbench.discovery", "critique_ask")
PROGRESS_ASK = load_prompt("rsi_workbench.discovery", "progress_ask")
PREFERENCES: tuple[str, ...] = get_args(Preference)
LABELS: tuple[str, ...] = get_args(ProgressLabelName)
_PREF = re.compile(r"preference\s*[:=]\s*\**\s*(a|b|tie|abstain)\b", re.IGNORECASE)
_LABEL = re.compile(r"label\s*[:=]\s*\**\s*([a-z_]+)", re.IGNORECASE)
_REASONS = re.compile(r"reasons?\s*[:=]\s*(.+)", re.IGNORECASE)


class InvalidJudgement(ValueError):
    """A judging reply that does not parse or that the recorded evidence cannot carry."""


def parse_preference(text: str) -> Preference:
    """The ``preference: a|b|tie|abstain`` of a reply; a reply naming two different preferences
    (e.g. one echoing the answer format, ``preference: a, preference: b``) decides nothing."""
    found = {m.group(1).lower() for m in _PREF.finditer(text)}
    if not found:
        raise InvalidJudgement(f"no 'preference: a|b|tie|abstain' line in {text[:80]!r}")
    if len(found) > 1:
        raise InvalidJudgement(f"ambiguous: the reply names {sorted(found)}")
    return found.pop()  # type: ignore[return-value]


def parse_progress(text: str, *, operation: str, executed: bool) -> tuple[str, list[str]]:
    """``label: ...`` (one of the four) and ``reasons: ...``, checked against the revision's facts."""
    m = _LABEL.search(text)
    if m is None:
        raise InvalidJudgement(f"no 'label: ...' line in {text[:80]!r}")
    label = m.group(1).lower()
    if label not in LABELS:
        raise InvalidJudgement(f"label {label!r} is not one of {list(LABELS)}")
    if label == "necessary_repair" and operation != "repair":
        raise InvalidJudgement(f"necessary_repair for a {operation}, which is not a repair")
    if label in ("substantive_progress", "necessary_repair") and not executed:
        raise InvalidJudgement(f"{label} without executed evidence")
    r = _REASONS.search(text)
    return label, [r.group(1).strip()] if r else []


def _seed(text: str) -> int:
    return zlib.crc32(text.encode()) & 0x7FFFFFFF


def _versioned(llm: LLM, template: Any) -> None:
    use_prompt = getattr(llm, "use_prompt", None)
    if use_prompt is not None:  # a recorded model versions the template into its run
        use_prompt(template)


@dataclass
class LLMCritique:
    """A blinded Critique (an ``agents.Judge``) backed by any ``agents.LLM``.

    :meth:`judge_blinded` returns ``(preference or None, reply)``: None for a reply that does not
    parse (the episode records a failed turn and no preference). :meth:`compare` is the plain
    ``Judge`` form (an invalid reply abstains, which makes no rating update).
    """

    llm: LLM
    name: str = "llm-critique"
    max_tokens: int = 16
    temperature: float = 0.0
    concurrency: int = 1  # comparisons of one critique stage in flight together (see judgements)

    @property
    def model_name(self) -> str:
        return self.name

    def request(self, a: dict[str, Any], b: dict[str, Any]) -> ChatRequest:
        """The chat request judging the blinded dossiers ``a`` and ``b`` (seeded by its own text)."""
        ask = CRITIQUE_ASK.render(a=json.dumps(a, sort_keys=True), b=json.dumps(b, sort_keys=True))
        msgs = [Message("system", SYSTEM["critique"]), Message("user", ask)]
        return ChatRequest(
            msgs, Sampling(max_tokens=self.max_tokens, temperature=self.temperature, seed=_seed(ask))
        )

    @staticmethod
    def read(reply: str) -> tuple[Preference | None, str]:
        """``(preference or None, reply)``: None for a reply that does not parse."""
        try:
            return parse_preference(reply), reply
        except InvalidJudgement:
            return None, reply

    def judge_blinded(self, a: dict[str, Any], b: dict[str, Any]) -> tuple[Preference | None, str]:
        _versioned(self.llm, CRITIQUE_ASK)
        r = self.request(a, b)
        res = self.llm.chat(r.messages, **r.kwargs())
        return self.read(res.texts[0])

    def judgements(
        self, pairs: Sequence[tuple[dict[str, Any], dict[str, Any]]]
    ) -> Iterator[tuple[Preference | None, str]]:
        """:meth:`judge_blinded` of each pair, in order, the requests in flight together (at most
        ``concurrency``; :class:`~rsi_workbench.models.parallel.ChatFlight`): each answer is taken,
        hence recorded, when the next judgement is asked for, so the records are those of calling
        :meth:`judge_blinded` pair by pair. The comparisons of a stage are independent: every
        dossier is fixed before the first reply, and no reply enters another request."""
        with ChatFlight(self.llm, [self.request(a, b) for a, b in pairs], concurrency=self.concurrency) as fl:
            for _ in pairs:
                _versioned(self.llm, CRITIQUE_ASK)
                yield self.read(fl.take().texts[0])

    def compare(self, a: Any, b: Any, context: Any = None) -> Preference:
        pref, _ = self.judge_blinded(a, b)
        return pref or "abstain"


@dataclass
class LLMProgress:
    """The Progress judge backed by any ``agents.LLM``: it reads the revision, its true predecessors
    and the recorded facts (executed, repeats an earlier analysis, defects fixed)."""

    llm: LLM
    name: str = "llm-progress"
    max_tokens: int = 48
    temperature: float = 0.0

    @property
    def model_name(self) -> str:
        return self.name

    def judge(self, facts: dict[str, Any]) -> tuple[str | None, list[str], str]:
        """``(label or None, reasons, reply)``; None when the reply is invalid (a failed turn)."""
        _versioned(self.llm, PROGRESS_ASK)
        ask = PROGRESS_ASK.render(facts=json.dumps(facts, sort_keys=True, indent=1))
        msgs = [Message("system", SYSTEM["progress"]), Message("user", ask)]
        res = self.llm.chat(msgs, max_tokens=self.max_tokens, temperature=self.temperature, seed=_seed(ask))
        reply = res.texts[0]
        try:
            label, reasons = parse_progress(
                reply, operation=str(facts["operation"]), executed=bool(facts["executed"])
            )
        except InvalidJudgement as e:
            return None, [str(e)], reply
        return label, reasons, reply
