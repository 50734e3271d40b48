"""The built-in actor's action language, interpreted INSIDE the sandbox (stdlib only, data in, data out).

This file's source text plus one line ``PROCEDURE = [...]`` is the action program that
:class:`~rsi_workbench.domains.gui.ProgramPolicy` runs in a sandbox session for one episode: each
call gets the observation as JSON (utterance, fields, DOM elements with refs; never a reward) and
returns one GUI action as data, which the host validates before the browser applies it. A step
that cannot be resolved on the page raises, which the host records as the program's failure.

Steps (a procedure is a list of them; values and locators are data, never code):
- ``{"op": "type", "target": LOC, "value": VAL}``   type a value into an element
- ``{"op": "click", "target": LOC}``                  click an element
- ``{"op": "key", "key": "<Enter>"}``                 press a key
- ``{"op": "submit"}``                                click the page's submit button
- ``{"op": "check_labels", "words": VAL}``            set every checkbox to (label in words)
- ``{"op": "click_until", "target": LOC, "until": COND, "max": n}``  click until a condition holds
- ``{"op": "key_until", "key": K, "until": COND, "max": n}``         press a key until it holds
VAL: ``{"field": k, "fmt": "raw"|"digits"|"iso"|"lower"|"month_name"|"int"}``, ``{"const": s}``,
``{"date_parts": [m, d, y], "fmt": "mdy"|"mdy_short"}``, ``{"fields_prefix": p}`` (a list).
LOC: ``{"id"|"tag"|"class"|"text": s, "text_value": VAL, "row_class": c, "row_value": VAL, "nth": i}``.
COND: ``{"target": LOC, "text_equals"|"value_endswith": VAL}`` or ``{"all": [COND, ...]}``.
"""

from __future__ import annotations

import re

PROCEDURE: list = []
MONTHS = ("January February March April May June July August September October November December").split()
_STATE = {"i": 0, "count": 0, "episode": None}


def fields_of(obs):
    return {str(k): str(v) for k, v in obs.get("fields") or []}


def value_of(spec, obs):
    """A VAL spec resolved against the utterance's fields (see the module docstring)."""
    fields = fields_of(obs)
    if "const" in spec:
        return str(spec["const"])
    if "fields_prefix" in spec:
        return [v for k, v in fields.items() if k.startswith(spec["fields_prefix"])]
    if "date_parts" in spec:
        m, d, y = (int(fields[k]) for k in spec["date_parts"])
        return f"{m}/{d}/{y}" if spec.get("fmt") == "mdy_short" else f"{m:02d}/{d:02d}/{y:04d}"
    raw = fields[spec["field"]]
    fmt = spec.get("fmt", "raw")
    if fmt == "digits":
        return re.sub(r"\D", "", raw)
    if fmt == "iso":
        m, d, y = raw.split("/")
        return f"{y}-{m}-{d}"
    if fmt == "lower":
        return raw.lower()
    if fmt == "month_name":
        return MONTHS[int(raw) - 1]
    if fmt == "int":
        return str(int(raw))
    return raw


def _children(obs):
    kids = {}
    for e in obs["elements"]:
        kids.setdefault(e["parent_ref"], []).append(e)
    return kids


def _subtree(root, kids):
    out, stack = [], [root]
    while stack:
        e = stack.pop()
        out.append(e)
        stack.extend(reversed(kids.get(e["ref"], [])))
    return out


def _text(e):
    return (e.get("text") or "").strip()


def subtree_text(e, obs):
    return " ".join(_text(x) for x in _subtree(e, _children(obs)) if _text(x))


def locate(loc, obs):
    """The element a LOC spec names (LookupError when the page has none)."""
    pool = obs["elements"]
    if "row_class" in loc:  # search inside the row (e.g. an email thread) whose text holds a value
        want = value_of(loc["row_value"], obs).lower()
        kids = _children(obs)
        rows = [
            e
            for e in pool
            if loc["row_class"] in (e.get("classes") or "").split()
            and any(_text(x).lower() == want for x in _subtree(e, kids))
        ]
        pool = [x for r in rows[:1] for x in _subtree(r, kids)]
    hits = []
    for e in pool:
        if "id" in loc and e.get("id") != loc["id"]:
            continue
        if "tag" in loc and e.get("tag") != loc["tag"]:
            continue
        if "class" in loc and loc["class"] not in (e.get("classes") or "").split():
            continue
        if "text" in loc and _text(e).lower() != str(loc["text"]).lower():
            continue
        if "text_value" in loc and _text(e).lower() != value_of(loc["text_value"], obs).lower():
            continue
        hits.append(e)
    n = int(loc.get("nth", 0))
    if len(hits) <= n:
        raise LookupError(f"no element matches {loc}")
    return hits[n]


def holds(cond, obs):
    """Whether a COND spec holds on the current page."""
    if "all" in cond:
        return all(holds(c, obs) for c in cond["all"])
    try:
        e = locate(cond["target"], obs)
    except LookupError:
        return False
    if "text_equals" in cond:
        return subtree_text(e, obs).lower() == value_of(cond["text_equals"], obs).lower()
    if "value_endswith" in cond:
        return str(e.get("value") or "").lower().endswith(value_of(cond["value_endswith"], obs).lower())
    raise ValueError(f"unknown condition {cond}")


def checkbox_clicks(words, obs):
    """Refs of the checkboxes whose checked state disagrees with (label in words)."""
    wanted = {w.lower() for w in words}
    out = []
    for box in obs["elements"]:
        if box["tag"] != "input_checkbox":
            continue
        label = " ".join(
            _text(e)
            for e in obs["elements"]
            if e["parent_ref"] == box["parent_ref"] and e["ref"] != box["ref"] and _text(e)
        )
        if (label.lower() in wanted) != bool(box.get("value")):
            out.append(box["ref"])
    return out


def step_action(step, obs, count):
    """(action, step finished after it) for one step; (None, True) when the step has nothing to do."""
    op = step["op"]
    if op == "type":
        return {
            "type": "type",
            "ref": locate(step["target"], obs)["ref"],
            "text": value_of(step["value"], obs),
        }, True
    if op == "click":
        return {"type": "click", "ref": locate(step["target"], obs)["ref"]}, True
    if op == "key":
        return {"type": "key", "key": step["key"]}, True
    if op == "submit":
        return {"type": "submit"}, True
    if op == "check_labels":
        refs = checkbox_clicks(value_of(step["words"], obs), obs)
        return ({"type": "click", "ref": refs[0]}, False) if refs else (None, True)
    if op in ("click_until", "key_until"):
        if holds(step["until"], obs):
            return None, True
        if count >= int(step.get("max", 12)):
            raise RuntimeError(f"step {op} gave up after {count} actions: {step['until']} never held")
        if op == "key_until":
            return {"type": "key", "key": step["key"]}, False
        return {"type": "click", "ref": locate(step["target"], obs)["ref"]}, False
    raise ValueError(f"unknown step op {op!r}")


def act(obs):
    """The next action of PROCEDURE on this observation (a fresh session per episode)."""
    if not obs.get("actions_taken"):
        _STATE.update(i=0, count=0)
    while _STATE["i"] < len(PROCEDURE):
        action, finished = step_action(PROCEDURE[_STATE["i"]], obs, _STATE["count"])
        if finished:
            _STATE["i"] += 1
            _STATE["count"] = 0
        else:
            _STATE["count"] += 1
        if action is not None:
            return action
    raise RuntimeError("the procedure ran out of steps before the page ended the episode")
