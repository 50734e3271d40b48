"""The GUI step state and what the learnable components read from it: candidate actions and DOM features.

A :class:`StepState` is one episode (a MiniWoB++ instance, by seed) after a prefix of validated
actions: the utterance, the page's elements as plain data and the actions taken. It never holds a
reward the policy could read while it acts (the page's verdict lives in observations, which only
learning sees). Features are generic over "form" pages: *controls* are checkboxes and radio buttons,
each with the text of its label; an element's *mention* is how much of its label the utterance
contains (a lexical overlap, not a parse of any one task's sentence).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

CONTROL_TAGS = ("input_checkbox", "input_radio")
CLICKABLE_TAGS = (*CONTROL_TAGS, "label", "button", "a", "input_text", "span")
_TOKEN = re.compile(r"[A-Za-z0-9]+")


@dataclass(frozen=True)
class StepState:
    """One episode after ``actions``: what the page shows (elements as plain dicts) and what was done."""

    task_id: str
    seed: int
    utterance: str
    elements: tuple[Mapping[str, Any], ...]
    actions: tuple[Mapping[str, Any], ...] = ()
    ended: bool = False
    reward: float | None = None  # the page's raw reward, set only once the episode ended (no one acts then)

    def to_json(self) -> dict[str, Any]:
        return {
            "task_id": self.task_id,
            "seed": self.seed,
            "utterance": self.utterance,
            "elements": [dict(e) for e in self.elements],
            "actions": [dict(a) for a in self.actions],
            "ended": self.ended,
            "reward": self.reward,
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> StepState:
        return cls(
            str(d["task_id"]),
            int(d["seed"]),
            str(d["utterance"]),
            tuple(dict(e) for e in d["elements"]),
            tuple(dict(a) for a in d["actions"]),
            bool(d.get("ended", False)),
            None if d.get("reward") is None else float(d["reward"]),
        )


def element_json(e: Any) -> dict[str, Any]:
    """The fields of a :class:`~rsi_workbench.domains.gui.GuiElement` the features read."""
    return {
        "ref": int(e.ref),
        "parent_ref": e.parent_ref,
        "tag": str(e.tag),
        "text": e.text,
        "value": e.value,
        "id": str(e.id),
    }


def content_key(utterance: str, elements: Sequence[Mapping[str, Any]]) -> str:
    """An instance's content: utterance + hash of its initial DOM (tags, texts, values, ids; no refs)."""
    dom = [[e["tag"], e.get("text"), e.get("value"), e.get("id")] for e in elements]
    blob = json.dumps([utterance, dom], sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:20]


def tokens(text: str | None) -> set[str]:
    return {t.lower() for t in _TOKEN.findall(text or "")}


@dataclass
class Control:
    """A checkbox or radio button with its label text, the label's ref and whether it is checked."""

    ref: int
    label_ref: int | None
    text: str
    checked: bool
    radio: bool
    group: int | None
    mention: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)


def controls(state: StepState) -> list[Control]:
    """The page's controls in document order, each with its label's text and its mention score."""
    els = state.elements
    utt = tokens(state.utterance)
    out = []
    for box in els:
        if box["tag"] not in CONTROL_TAGS:
            continue
        siblings = [e for e in els if e["parent_ref"] == box["parent_ref"] and e["ref"] != box["ref"]]
        text = " ".join((e.get("text") or "").strip() for e in siblings).strip()
        parent = next((e for e in els if e["ref"] == box["parent_ref"]), None)
        label_ref = parent["ref"] if parent is not None and parent["tag"] == "label" else None
        group = parent["parent_ref"] if parent is not None else None
        toks = tokens(text)
        mention = len(toks & utt) / len(toks) if toks else 0.0
        out.append(
            Control(
                box["ref"],
                label_ref,
                text,
                bool(box.get("value")),
                box["tag"] == "input_radio",
                group,
                mention,
            )
        )
    return out


def candidate_actions(state: StepState) -> list[dict[str, Any]]:
    """Every action the built-in policy may propose: a click on each clickable element, then submit."""
    if state.ended:
        return []
    acts: list[dict[str, Any]] = [
        {"type": "click", "ref": int(e["ref"])}
        for e in state.elements
        if e["ref"] > 0 and e["tag"] in CLICKABLE_TAGS and e.get("id") != "subbtn"
    ]
    if any(e.get("id") == "subbtn" for e in state.elements):
        acts.append({"type": "submit"})
    return acts


def target_control(action: Mapping[str, Any], ctrls: Sequence[Control]) -> Control | None:
    """The control an action clicks, directly or through its label."""
    if action.get("type") != "click":
        return None
    ref = action.get("ref")
    for c in ctrls:
        if ref in (c.ref, c.label_ref):
            return c
    return None


def clicked_refs(state: StepState) -> list[int]:
    return [int(a["ref"]) for a in state.actions if a.get("type") in ("click", "type")]


POLICY_FEATURES = (
    "bias",
    "submit",
    "click_control",
    "click_label",
    "click_other",
    "mentioned_unchecked",
    "mentioned_checked",
    "unmentioned_checked",
    "unmentioned_unchecked",
    "repeat",
    "submit_agreement",
    "submit_all_agree",
    "submit_step",
)


def agreement(ctrls: Sequence[Control]) -> float:
    """Share of controls whose checked state equals "its label is mentioned" (1 without controls)."""
    if not ctrls:
        return 1.0
    return sum((c.mention >= 0.5) == c.checked for c in ctrls) / len(ctrls)


def policy_features(state: StepState, actions: Sequence[Mapping[str, Any]], max_actions: int) -> np.ndarray:
    """One row of :data:`POLICY_FEATURES` per candidate action (DOM, utterance and own past actions only)."""
    ctrls = controls(state)
    done_refs = set(clicked_refs(state))
    agree = agreement(ctrls)
    step = len(state.actions) / max(1, max_actions)
    rows = []
    for a in actions:
        f = dict.fromkeys(POLICY_FEATURES, 0.0)
        f["bias"] = 1.0
        c = target_control(a, ctrls)
        if a.get("type") == "submit":
            f["submit"] = 1.0
            f["submit_agreement"] = agree
            f["submit_all_agree"] = float(agree >= 1.0)
            f["submit_step"] = step
        elif c is not None:
            f["click_control" if a.get("ref") == c.ref else "click_label"] = 1.0
            m = c.mention >= 0.5
            key = ("mentioned_" if m else "unmentioned_") + ("checked" if c.checked else "unchecked")
            f[key] = 1.0
        else:
            f["click_other"] = 1.0
        f["repeat"] = float(a.get("ref") in done_refs)
        rows.append([f[k] for k in POLICY_FEATURES])
    return np.asarray(rows, dtype=np.float64).reshape(len(rows), len(POLICY_FEATURES))


TOGGLE_FEATURES = ("bias", "checked", "hit", "hit_checked", "other_hit", "other_hit_checked", "radio_other")
WANT_FEATURES = ("bias", "mention", "radio")


def world_features(
    state: StepState, action: Mapping[str, Any]
) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool]:
    """Per control of ``state``: toggle features (does ``action`` change it), want features (is it
    asked for), its checked state now; and whether the action is a submit."""
    ctrls = controls(state)
    hit = target_control(action, ctrls)
    tog, want, checked = [], [], []
    for c in ctrls:
        h = float(hit is c)
        other = float(hit is not None and hit is not c and hit.group == c.group)
        ch = float(c.checked)
        tog.append([1.0, ch, h, h * ch, other, other * ch, other * float(c.radio)])
        want.append([1.0, c.mention, float(c.radio)])
        checked.append(ch)
    n = len(ctrls)
    return (
        np.asarray(tog, dtype=np.float64).reshape(n, len(TOGGLE_FEATURES)),
        np.asarray(want, dtype=np.float64).reshape(n, len(WANT_FEATURES)),
        np.asarray(checked, dtype=np.float64),
        action.get("type") == "submit",
    )
