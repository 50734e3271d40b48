"""Built-in, non-learning GUI policies: a scripted solver for click-checkboxes (the environment's end-to-end check)."""

from __future__ import annotations

import re
from typing import Any

from .observation import GuiElement, GuiObservation

_NOTHING = re.compile(r"select nothing", re.IGNORECASE)
_SELECT = re.compile(r"select (.*?) and click submit", re.IGNORECASE | re.DOTALL)


def checkbox_targets(utterance: str) -> set[str]:
    """The words a click-checkboxes utterance asks to select ("Select A, B and C and click Submit.")."""
    if _NOTHING.search(utterance):
        return set()
    m = _SELECT.search(utterance)
    if not m:
        return set()
    parts = re.split(r",\s*|\s+and\s+", m.group(1).strip())
    return {p.strip() for p in parts if p.strip()}


def checkbox_labels(obs: GuiObservation) -> list[tuple[GuiElement, str]]:
    """Each checkbox with the text of its label (the text nodes beside it under the same parent)."""
    out = []
    for box in obs.elements:
        if box.tag != "input_checkbox":
            continue
        text = " ".join(
            (e.text or "").strip()
            for e in obs.elements
            if e.parent_ref == box.parent_ref and e.ref != box.ref
        ).strip()
        out.append((box, text))
    return out


class ClickCheckboxesPolicy:
    """Reads the utterance, clicks each checkbox whose state is wrong, then submits. Stateless."""

    def act(self, obs: GuiObservation) -> dict[str, Any]:
        wanted = {t.lower() for t in checkbox_targets(obs.utterance)}
        for box, label in checkbox_labels(obs):
            if (label.lower() in wanted) != bool(box.value):
                return {"type": "click", "ref": box.ref}
        return {"type": "submit"}


class SubmitAtOncePolicy:
    """Submits without touching anything: wrong whenever the task asks for a selection (a negative control)."""

    def act(self, obs: GuiObservation) -> dict[str, Any]:
        return {"type": "submit"}
