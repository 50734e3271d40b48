"""The built-in actor's search space: candidate procedures in the action language of :mod:`.interpreter`.

A candidate is built from what the actor sees on the page (the utterance's fields and the DOM's
elements), never from the reward: each *skill* (fill fields, set checkboxes, autocomplete, date
picker, click by text, act on a row) proposes its variants, and :func:`candidates` lists all of them
in one fixed generic order (fewest steps first, then skill order). Without memory the actor tries them
in that order; memory reorders and prunes them (:mod:`.actor`). :func:`template_key` names an
utterance's template (the utterance with its field values blanked) by a short hash, so memory
never needs to hold the utterance's words.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rsi_workbench.domains.gui import GuiObservation

INPUT_TAGS = ("input_text", "input_password", "input_date", "input_number", "input_email", "textarea")
DATE_PARTS = ("month", "day", "year")
ROW_VERBS = {"star": "star", "delete": "trash", "trash": "trash"}


@dataclass(frozen=True)
class Candidate:
    """One procedure the actor may try: ``id`` is stable across seeds of the same page and template."""

    id: str
    skill: str
    steps: tuple[dict[str, Any], ...]

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "skill": self.skill, "steps": [dict(s) for s in self.steps]}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Candidate:
        return cls(str(d["id"]), str(d["skill"]), tuple(dict(s) for s in d["steps"]))


def template_key(utterance: str, fields: tuple[tuple[str, str], ...] | list[Any]) -> str:
    """A 12-hex name of the utterance's template: field values blanked (longest first), then hashed."""
    text = utterance
    for k, v in sorted(((str(k), str(v)) for k, v in fields), key=lambda kv: -len(kv[1])):
        if v:
            text = text.replace(v, "{" + k.split(" ")[0] + "}")
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def program_source(steps: tuple[dict[str, Any], ...] | list[dict[str, Any]]) -> str:
    """The action program for ``steps``: the interpreter's source plus the procedure as JSON data."""
    src = (Path(__file__).parent / "interpreter.py").read_text()
    return src + f"\nPROCEDURE = {json.dumps(list(steps), sort_keys=True)}\n"


def _inputs(obs: GuiObservation) -> list[Any]:
    return [e for e in obs.elements if e.tag in INPUT_TAGS]


def _loc(e: Any, inputs: list[Any]) -> dict[str, Any]:
    if e.id:
        return {"id": e.id}
    same = [x for x in inputs if x.tag == e.tag]
    return {"tag": e.tag, "nth": same.index(e)}


def _value_fields(obs: GuiObservation) -> list[str]:
    return [k for k, _ in obs.fields if k != "button"]


def _commit_variants(base: list[dict[str, Any]], name: str, skill: str) -> list[Candidate]:
    return [
        Candidate(f"{skill}:{name}:submit", skill, (*base, {"op": "submit"})),
        Candidate(f"{skill}:{name}:enter", skill, (*base, {"op": "key", "key": "<Enter>"})),
    ]


def fill_candidates(obs: GuiObservation) -> list[Candidate]:
    """Type fields into inputs: bound by order or by name, values raw or reformatted, then commit."""
    inputs, keys = _inputs(obs), _value_fields(obs)
    if not inputs or not keys:
        return []
    out: list[Candidate] = []
    by_order = [(k, inputs[min(i, len(inputs) - 1)]) for i, k in enumerate(keys)]
    if len(keys) < len(inputs):  # e.g. a password typed twice: repeat the last field
        by_order += [(keys[-1], e) for e in inputs[len(keys) :]]
    named = {e.id.lower(): e for e in inputs if e.id}
    by_name = [(k, named[k.lower()]) for k in keys if k.lower() in named]
    for bind, pairs in (("order", by_order), ("name", by_name)):
        if not pairs:
            continue
        for fmt in ("raw", "digits", "iso"):
            steps = [
                {"op": "type", "target": _loc(e, inputs), "value": {"field": k, "fmt": fmt}} for k, e in pairs
            ]
            out += _commit_variants(steps, f"{bind}-{fmt}", "fill")
    if set(DATE_PARTS) <= set(keys):
        for fmt in ("mdy", "mdy_short"):
            steps = [
                {
                    "op": "type",
                    "target": _loc(inputs[0], inputs),
                    "value": {"date_parts": list(DATE_PARTS), "fmt": fmt},
                }
            ]
            out += _commit_variants(steps, f"date-{fmt}", "fill")
    return out


def checkbox_candidates(obs: GuiObservation) -> list[Candidate]:
    """Set the checkboxes named by the ``target i`` fields (or by every field), then commit."""
    if not any(e.tag == "input_checkbox" for e in obs.elements):
        return []
    out: list[Candidate] = []
    for name, words in (("targets", {"fields_prefix": "target"}), ("all", {"fields_prefix": ""})):
        out += _commit_variants([{"op": "check_labels", "words": words}], name, "checkboxes")
    return out


def autocomplete_candidates(obs: GuiObservation) -> list[Candidate]:
    """Type the start, walk the suggestion menu with a key until the value ends right, then commit."""
    inputs = [e for e in _inputs(obs) if "ui-autocomplete-input" in e.classes.split()]
    keys = dict(obs.fields)
    if not inputs or not {"start", "end"} <= set(keys):
        return []
    target = _loc(inputs[0], _inputs(obs))
    type_start = {"op": "type", "target": target, "value": {"field": "start"}}
    out: list[Candidate] = []
    for key in ("<ArrowDown>", "<Tab>"):
        walk = {
            "op": "key_until",
            "key": key,
            "max": 10,
            "until": {"target": target, "value_endswith": {"field": "end"}},
        }
        out += _commit_variants([type_start, walk], key.strip("<>").lower(), "autocomplete")
    return out


def datepicker_candidates(obs: GuiObservation) -> list[Candidate]:
    """Open the date picker, page back (or forward) to the month, click the day, then commit."""
    pickers = [e for e in obs.elements if "hasDatepicker" in e.classes.split()]
    if not pickers or not set(DATE_PARTS) <= set(dict(obs.fields)):
        return []
    title = {
        "all": [
            {
                "target": {"class": "ui-datepicker-month"},
                "text_equals": {"field": "month", "fmt": "month_name"},
            },
            {"target": {"class": "ui-datepicker-year"}, "text_equals": {"field": "year"}},
        ]
    }
    out: list[Candidate] = []
    for way in ("prev", "next"):
        steps: list[dict[str, Any]] = [
            {"op": "click", "target": _loc(pickers[0], _inputs(obs))},
            {"op": "click_until", "target": {"class": f"ui-datepicker-{way}"}, "until": title, "max": 13},
            {
                "op": "click",
                "target": {
                    "tag": "a",
                    "class": "ui-state-default",
                    "text_value": {"field": "day", "fmt": "int"},
                },
            },
        ]
        out += _commit_variants(steps, way, "datepicker")
    return out


def click_text_candidates(obs: GuiObservation) -> list[Candidate]:
    """Click the element whose text is a field's value (a button, a link, a sender's name)."""
    out: list[Candidate] = []
    for k in _value_fields(obs):
        v = dict(obs.fields)[k].strip().lower()
        if any((e.text or "").strip().lower() == v for e in obs.elements):
            click = {"op": "click", "target": {"text_value": {"field": k}}}
            out.append(Candidate(f"click_text:{k}", "click_text", (click,)))
            out += _commit_variants([click], k, "click_text")
    return out


def row_candidates(obs: GuiObservation) -> list[Candidate]:
    """In the row (e.g. an email thread) holding a field's value, click the icon a verb field names."""
    fields = dict(obs.fields)
    verb = ROW_VERBS.get(fields.get("task", "").lower())
    rows = {c for e in obs.elements for c in e.classes.split() if c.endswith("-thread") or c == "row"}
    if verb is None or not rows:
        return []
    out: list[Candidate] = []
    for k in _value_fields(obs):
        if k == "task":
            continue
        for row in sorted(rows):
            loc = {"row_class": row, "row_value": {"field": k}, "class": verb}
            out.append(Candidate(f"row:{row}:{k}:{verb}", "row", ({"op": "click", "target": loc},)))
    return out


SKILLS = (
    fill_candidates,
    checkbox_candidates,
    click_text_candidates,
    row_candidates,
    autocomplete_candidates,
    datepicker_candidates,
)


def candidates(obs: GuiObservation) -> list[Candidate]:
    """Every applicable candidate in the generic order: fewest steps first, then skill order."""
    out: list[tuple[int, int, int, Candidate]] = []
    for si, skill in enumerate(SKILLS):
        for j, c in enumerate(skill(obs)):
            out.append((len(c.steps), si, j, c))
    seen: set[str] = set()
    ordered = []
    for *_, c in sorted(out, key=lambda t: t[:3]):
        if c.id not in seen:
            seen.add(c.id)
            ordered.append(c)
    return ordered
