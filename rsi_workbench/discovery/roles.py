"""Roles as recorded sessions, and the model-backed Generation / Evolution role.

A :class:`Session` is one role trajectory: every tool call or reply it emits becomes a role-tagged
transcript turn (messages in, one message or tool call out, whether the action failed). Built-in
Generation and Evolution implement ``agents.Proposer`` (``propose(context, k, rng)`` returns
``Candidate``s whose ``program`` is the (c, π, d, a) JSON), so a model-backed role plugs in the
same way; Critique is an ``agents.Judge`` (``assess.BlindedCritique``). The built-in deterministic
roles of the tabular domain live with that domain (:mod:`rsi_workbench.domains.tabular.roles`).
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from rsi_workbench.agents import LLM, Candidate, Message
from rsi_workbench.models.prompts import load_prompt

SYSTEM = {
    "lead": "You are the Lead of a research team. Choose the direction, the parent hypotheses and the "
    "operation (evolve, repair, crossover, restart) for this episode.",
    "generation": "You are the Generation role. Investigate the available evidence and publish a new "
    "testable hypothesis as (claim, plan, decision criteria, alternatives).",
    "evolution": "You are the Evolution role. Read the assigned hypothesis versions and their evidence, "
    "then publish a revision (evolve, repair or crossover) as (claim, plan, decision criteria, alternatives).",
    "critique": "You are a blinded Critique. Compare two investigations under the stated rubric and answer "
    "'preference: a', 'preference: b', 'preference: tie' or 'preference: abstain'.",
    "progress": "You are the Progress judge. Say what a revision contributed relative to its true "
    "predecessor: substantive_progress, necessary_repair, duplicate or insufficient_evidence.",
    "compiler": "You are the Compiler. Turn the investigation plan into an executable task with concrete "
    "inputs, environment, required outputs and checks; keep unavailable data as explicit dependencies.",
}


class ToolError(RuntimeError):
    """A tool call that failed (recorded as a failed action, returned to the role as an error)."""


@dataclass
class Turn:
    messages_in: list[Message]
    output: Message
    failed: bool = False


@dataclass
class Session:
    """One role trajectory; records every output as a transcript turn."""

    trajectory_id: str
    role: str
    user: str
    tools: dict[str, Callable[..., Any]] = field(default_factory=dict)
    messages: list[Message] = field(default_factory=list)
    turns: list[Turn] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.messages:
            self.messages = [Message("system", SYSTEM[self.role]), Message("user", self.user)]

    def call(self, name: str, **arguments: Any) -> Any:
        """Emit a tool call, run the tool, and feed its observation (or error) back as a tool message."""
        out = Message("assistant", "", tool_call={"name": name, "arguments": arguments})
        try:
            result: Any = self.tools[name](**arguments)
            failed = False
        except ToolError as e:
            result, failed = {"error": str(e)}, True
        self.turns.append(Turn(list(self.messages), out, failed))
        self.messages += [out, Message("tool", json.dumps(result, default=str, sort_keys=True))]
        return result

    def reply(self, content: str, *, failed: bool = False) -> None:
        out = Message("assistant", content)
        self.turns.append(Turn(list(self.messages), out, failed))
        self.messages.append(out)


# -- model-backed Generation / Evolution --------------------------------------------------------
_JSON_ASK = load_prompt("rsi_workbench.discovery", "proposer_json_ask")  # discovery/prompts/*.txt


def _parse_json_object(text: str) -> dict[str, Any]:
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end <= start:
        raise ValueError("no JSON object in the reply")
    obj = json.loads(text[start : end + 1])
    if not isinstance(obj, dict):
        raise ValueError("the reply's JSON is not an object")
    return obj


@dataclass
class LLMProposer:
    """Generation or Evolution backed by any ``agents.LLM`` (an ``agents.Proposer``), e.g.
    ``LLMProposer(models.open_model(ModelConfig(name="default"), run, ledger, role="generation"))``.

    It reads the assigned parents through the same tools as the built-in roles, asks the model
    for a (c, π, d, a) JSON object and publishes it; a reply that is not valid JSON, or a
    hypothesis that fails validation, is a recorded failed action and yields no candidate.
    """

    llm: LLM
    name: str = "llm-proposer"
    max_tokens: int = 1500
    temperature: float = 0.0

    @property
    def model_name(self) -> str:
        """Recorded as the ``model`` of the role's transcript turns."""
        return self.name

    def propose(self, context: dict[str, Any], k: int, rng: random.Random) -> list[Candidate]:
        s: Session = context["session"]
        if "direction" in context:  # Generation: see what the cohort records before proposing
            s.call("inspect_data", direction=context["direction"], groups=[])
        for p in context.get("parents", []):
            s.call("read_hypothesis", hypothesis_id=p)
        use_prompt = getattr(self.llm, "use_prompt", None)
        if use_prompt is not None:  # a recorded model versions the template into its run
            use_prompt(_JSON_ASK)
        out = []
        for _ in range(k):
            s.messages.append(Message("user", _JSON_ASK.text))
            res = self.llm.chat(
                s.messages,
                max_tokens=self.max_tokens,
                temperature=self.temperature,
                seed=rng.randrange(2**31),
            )
            reply = res.message()
            try:
                content = _parse_json_object(reply.content)
            except ValueError as e:
                s.turns.append(Turn(list(s.messages), reply, failed=True))
                s.messages += [reply, Message("user", f"invalid reply: {e}")]
                continue
            s.turns.append(Turn(list(s.messages), reply))
            s.messages.append(reply)
            draft = s.call("publish_draft", content=content, note="model proposal")
            if "draft_id" in draft:
                out.append(
                    Candidate(json.dumps(content, sort_keys=True), meta={"draft": draft, "why": "model"})
                )
        return out
