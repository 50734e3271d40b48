"""θ as a language model (``policy: {kind: llm, model: {...}}``): the model proposes actions as text.

The prompt (``prompts/gui_policy.txt``, package data, versioned into the model's run) holds the
instruction, the page's clickable elements (ref, tag, label text, checked state) and the actions
already taken — never a reward: a :class:`~.features.StepState` carries the page's reward only once
the episode ended, when no one acts, and :meth:`LLMActionPolicy.prompt` refuses an ended state. The
answer is parsed line by line into ``click(REF)`` / ``submit()`` actions; a line that is not one, or
repeats one, becomes an **invalid candidate** ``{"type": "invalid", "raw": line, "reason": ...}``
that :class:`~.binding.GuiVerifier` rejects with that reason (recorded in the proposal event, never
executed); a click on a ref the page lacks is rejected by the verifier too. The world model then
predicts the valid ones and eq. 7 selects, as for the built-in policy. With ``always_submit`` the
submit action is always among the candidates, so a step never runs out of valid actions.

The model is not fine-tuned here: ``update`` returns the policy unchanged (the world model still
adapts and is gated), so with ``kind: llm`` the ``rsi`` method and the ``world_based`` control
differ only by their recorded trigger decisions.

Within a training cycle θ is fixed and every unfinished episode's next step is proposed from its
own state, so the policy declares ``concurrent_propose``: the protocol's concurrent cycle sends the
episodes' requests together (bounded by the model block's ``concurrency``) and records them in task
order, as the sequential loop does. The steps of one episode stay one after another (each needs the
page the previous action left).
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import Field

from rsi_workbench.config import StrictModel
from rsi_workbench.domains.gui.features import CLICKABLE_TAGS, CONTROL_TAGS, StepState
from rsi_workbench.models.config import ModelConfig
from rsi_workbench.models.prompts import PromptTemplate, load_prompt

_CLICK = re.compile(r"^click\s*\(\s*(-?\d+)\s*\)$", re.I)
_SUBMIT = re.compile(r"^submit\s*\(\s*\)$", re.I)
_BULLET = re.compile(r"^\s*(?:[-*•]|\d+[.)])?\s*`?")


class PolicySettings(StrictModel):
    """θ of the GUI experiment (``policy:``): the built-in linear scorer or a language model."""

    kind: Literal["linear", "llm"] = Field(default="linear", description="linear (built-in) | llm")
    model: ModelConfig = Field(default_factory=ModelConfig, description="the model block (kind: llm)")
    temperature: float = Field(default=0.7, ge=0.0, description="sampling temperature while training")
    max_tokens: int = Field(default=48, ge=1, description="tokens per answer (a few action lines)")


def policy_prompt_template() -> PromptTemplate:
    return load_prompt("rsi_workbench.domains.gui", "gui_policy")


def element_lines(state: StepState) -> str:
    """The page's clickable elements as ``ref: tag "label text" [checked]`` lines (DOM only)."""
    els = state.elements
    lines = []
    for e in els:
        if int(e["ref"]) <= 0 or e["tag"] not in CLICKABLE_TAGS:
            continue
        text = (e.get("text") or "").strip()
        if not text:
            kids = [k for k in els if k.get("parent_ref") in (e["ref"], e.get("parent_ref")) and k is not e]
            text = " ".join((k.get("text") or "").strip() for k in kids if int(k["ref"]) < 0).strip()
        tag = str(e["tag"]).replace("input_", "")
        state_txt = (" [checked]" if e.get("value") else " [unchecked]") if e["tag"] in CONTROL_TAGS else ""
        lines.append(f"{e['ref']}: {tag}" + (f' "{text}"' if text else "") + state_txt)
    return "\n".join(lines) or "(none)"


def parse_answer(text: str, k: int) -> list[dict[str, Any]]:
    """Action lines of an answer: up to ``k`` distinct ``click``/``submit`` actions, and every other
    non-empty line (at most ``2k``) as an invalid candidate with its reason."""
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    valid = invalid = 0
    for raw in text.splitlines():
        line = _BULLET.sub("", raw).strip().rstrip("`;,.").strip()
        if not line:
            continue
        m = _CLICK.match(line)
        act: dict[str, Any] | None = None
        if m:
            act = {"type": "click", "ref": int(m.group(1))}
        elif _SUBMIT.match(line):
            act = {"type": "submit"}
        key = json.dumps(act, sort_keys=True) if act else ""
        if act is not None and key not in seen and valid < k:
            seen.add(key)
            out.append(act)
            valid += 1
            continue
        if invalid >= 2 * k:
            continue
        reason = (
            "not an action line: expected click(REF) or submit()"
            if act is None
            else "repeats an earlier line"
            if key in seen
            else f"more than k={k} actions"
        )
        out.append({"type": "invalid", "raw": raw[:200], "reason": reason})
        invalid += 1
    return out


class LLMActionPolicy:
    """θ: a recorded language model proposing the next actions as text (see the module doc)."""

    kind = "llm"
    # the protocol's concurrent cycle may propose every unfinished episode's next step at once: one
    # request per episode, its seed from the task's own rng, nothing shared but the thread-safe
    # recorder (docs/concurrency.md "Which roles run requests together")
    concurrent_propose = True

    def __init__(
        self,
        llm: Any,
        *,
        temperature: float = 0.7,
        max_tokens: int = 48,
        always_submit: bool = True,
        template: PromptTemplate | None = None,
    ) -> None:
        self.llm = llm
        self.temperature, self.max_tokens, self.always_submit = (
            float(temperature),
            int(max_tokens),
            always_submit,
        )
        self.template = template or policy_prompt_template()
        use_prompt = getattr(llm, "use_prompt", None)
        if use_prompt is not None:  # versioned now, before any call: not by whichever episode of a
            use_prompt(self.template)  # concurrent cycle asks first (the records follow task order)
        self.n_updates = 0
        self.version: str = "llm-policy-" + hashlib.sha256(self.to_bytes()).hexdigest()[:8]

    def prompt(self, state: StepState, k: int) -> str:
        """The prompt for one step: instruction, clickable elements, own past actions; no reward."""
        if state.ended:
            raise ValueError("an ended episode has no next action (and its reward must not reach a prompt)")
        from rsi_workbench.domains.gui.steps import action_text

        history = ", ".join(action_text(a) for a in state.actions) or "none"
        return self.template.render(
            utterance=state.utterance, elements=element_lines(state), history=history, k=k
        )

    def propose(self, task_id: str, state: StepState, k: int, rng: random.Random) -> list[dict[str, Any]]:
        if state.ended:
            return []
        use_prompt = getattr(self.llm, "use_prompt", None)
        if use_prompt is not None:
            use_prompt(self.template)
        res = self.llm.chat(
            [{"role": "user", "content": self.prompt(state, k)}],
            n=1,
            temperature=self.temperature,
            max_tokens=self.max_tokens,
            seed=rng.randrange(2**31),
        )
        acts = parse_answer(res.texts[0] if res.texts else "", k)
        if self.always_submit and {"type": "submit"} not in acts:
            acts.append({"type": "submit"})
        return acts

    def update(self, records: Sequence[Any], imagined: Sequence[Any], *, seed: int) -> LLMActionPolicy:
        """The model is not fine-tuned in this experiment: θ stays as it is."""
        return self

    def with_temperature(self, temperature: float) -> LLMActionPolicy:
        """The same model and prompt at another temperature (0: greedy, for test episodes)."""
        return LLMActionPolicy(
            self.llm,
            temperature=temperature,
            max_tokens=self.max_tokens,
            always_submit=self.always_submit,
            template=self.template,
        )

    def to_bytes(self) -> bytes:
        """What identifies θ (model, sampling, prompt version); the weights live with the model."""
        return json.dumps(
            {
                "kind": self.kind,
                "model": str(getattr(self.llm, "model", "")),
                "identity": str(getattr(self.llm, "identity", "")),
                "temperature": self.temperature,
                "max_tokens": self.max_tokens,
                "always_submit": self.always_submit,
                "prompt_sha256": self.template.sha256,
            },
            sort_keys=True,
        ).encode()

    def loader(self) -> Any:
        """``load_policy`` for a run of this θ: bytes written by :meth:`to_bytes` give it back."""

        def load(data: bytes) -> LLMActionPolicy:
            d = json.loads(data)
            if d.get("kind") != self.kind or d.get("prompt_sha256") != self.template.sha256:
                raise ValueError(f"stored policy {d} is not this run's language-model policy")
            return self.with_temperature(float(d["temperature"]))

        return load


def is_llm_policy_bytes(data: bytes) -> bool:
    try:
        return isinstance(d := json.loads(data), Mapping) and d.get("kind") == "llm"
    except ValueError:
        return False


def policy_run_path(out: Any, seed: int) -> Any:
    """The run holding the policy model's calls for one seed (shared by that seed's methods)."""
    from pathlib import Path

    return Path(out) / "policy_model" / f"seed{seed}"


def open_llm_policy(
    settings: PolicySettings, out: Any, seed: int, *, always_submit: bool = True, backend: Any = None
) -> tuple[LLMActionPolicy, Any]:
    """θ on the ``model:`` block (or an already-built ``backend``, e.g. a test double), its calls
    recorded in (and replayed from) ``<out>/policy_model/seed<s>``; returns θ and that open run."""
    from rsi_workbench.models import RecordedLLM, open_model
    from rsi_workbench.records import Run

    how = {"model": {"replay", "timeout_s", "concurrency", "max_retries"}}  # how calls are made, not what
    cfg = {"policy": settings.model_dump(mode="json", exclude=how), "seed": seed}
    run = Run.create(policy_run_path(out, seed), cfg, kind="gui_policy_model", exist_ok=True, seed=seed)
    if backend is not None:
        llm = RecordedLLM.wrap(backend, run=run, replay=settings.model.replay, role="policy")
    else:
        llm = open_model(settings.model, run, None, role="policy")
    pol = LLMActionPolicy(
        llm, temperature=settings.temperature, max_tokens=settings.max_tokens, always_submit=always_submit
    )
    return pol, run
