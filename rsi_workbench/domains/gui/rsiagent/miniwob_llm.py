"""MiniWoB++ with a text interface, so a model actor (:class:`.llm_roles.LLMActor`) can act on it.

:class:`MiniwobTextEnvironment` wraps :class:`.miniwob.MiniwobEnvironment` (same targets, seeds,
host-only texts and official score) and opens :class:`MiniwobTextWorkspace` s, which offer the text
interface of a model actor:

- ``observe() -> str``: the page reset to the workspace's seed as text (:func:`observation_text`:
  the page, the utterance, its parsed fields, the DOM elements as an indented tree
  ``[ref] tag#id.class "text" value``, at most ``max_elements`` elements and ``max_chars``
  characters) and the result of the previous attempt in this workspace (the actor's history of
  this task: its program, the actions applied, the program's error, whether the page ended the
  episode), never a reward;
- ``answer_format``: the action language of the built-in actor (:mod:`.interpreter`), documented
  in ``prompts/rsiagent_miniwob_actions.txt``;
- ``act(answer) -> (Evidence, details)``: the answer parsed as a JSON list of steps and validated
  on the host as data (:func:`parse_program`: known ops, their keys, locators, values, conditions,
  keys; at most ``MAX_STEPS`` steps). A valid program runs as the built-in actor's do: the
  interpreter's source plus the steps as data, in the sandbox (:meth:`.miniwob.MiniwobWorkspace.run`),
  never in the host process. An unparseable or invalid answer plays no episode: it is a failed
  attempt whose execution record says ``program_error: "invalid action program: <reason>"``, which
  the built-in verifier reports as FAIL with that reason.

Every attempt is an event (``miniwob_action_program``: project, purpose, page, seed, valid, the
reason, the steps, actions applied, invalid actions, program error, whether the page ended it;
never the reward) on the arm's run once :meth:`MiniwobTextEnvironment.attach_run` is called, and
the action language's text is versioned into that run as a prompt template.
"""

from __future__ import annotations

import json
import re
import threading
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from rsi_workbench.domains.gui import GuiObservation
from rsi_workbench.domains.gui.actions import SPECIAL_KEYS
from rsi_workbench.memory import Evidence, Project
from rsi_workbench.memory.llm_roles import extract_json

from .miniwob import MiniwobEnvironment, MiniwobWorkspace

PACKAGE = "rsi_workbench.domains.gui.rsiagent"
ACTIONS_PROMPT = "rsiagent_miniwob_actions"
EVENT_KIND = "miniwob_action_program"
MAX_STEPS = 12
MAX_PROGRAM_CHARS = 4000
FMTS = ("raw", "digits", "iso", "lower", "month_name", "int", "mdy", "mdy_short")
LOC_KEYS = ("id", "tag", "class", "text", "text_value", "row_class", "row_value", "nth")
# op -> (required keys, optional keys)
OPS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "click": (("target",), ()),
    "type": (("target", "value"), ()),
    "key": (("key",), ()),
    "submit": ((), ()),
    "check_labels": (("words",), ()),
    "click_until": (("target", "until"), ("max",)),
    "key_until": (("key", "until"), ("max",)),
}


def _action_schema() -> dict[str, Any]:
    """The action language as a JSON Schema (no recursion: one level of ``all``); every document it
    accepts passes :func:`parse_program`, which stays the check (e.g. row_class with row_value)."""
    text = {"type": "string", "maxLength": 60}
    ref = {k: {"$ref": f"#/$defs/{k}"} for k in ("val", "loc", "cond", "simple", "key")}

    def obj(required: list[str], **props: Any) -> dict[str, Any]:
        return {"type": "object", "additionalProperties": False, "required": required, "properties": props}

    loc = obj([], **{k: text for k in ("id", "tag", "class", "text", "row_class")})
    loc["properties"].update(text_value=ref["val"], row_value=ref["val"])
    loc["properties"]["nth"] = {"type": "integer", "minimum": 0, "maximum": 20}
    defs = {
        "val": {
            "anyOf": [
                obj(["const"], const=text),
                obj(["field"], field=text, fmt={"enum": list(FMTS)}),
                obj(["fields_prefix"], fields_prefix=text),
                obj(
                    ["date_parts"],
                    date_parts={"type": "array", "items": text, "minItems": 3, "maxItems": 3},
                    fmt={"enum": list(FMTS)},
                ),
            ]
        },
        "loc": {**loc, "minProperties": 1},
        "simple": {
            "anyOf": [
                obj(["target", k], target=ref["loc"], **{k: ref["val"]})
                for k in ("text_equals", "value_endswith")
            ]
        },
        "cond": {
            "anyOf": [
                ref["simple"],
                obj(["all"], all={"type": "array", "items": ref["simple"], "minItems": 1}),
            ]
        },
        "key": {"anyOf": [{"enum": list(SPECIAL_KEYS)}, {"type": "string", "minLength": 1, "maxLength": 1}]},
    }
    parts: dict[str, Any] = {
        "target": ref["loc"],
        "value": ref["val"],
        "words": ref["val"],
        "key": ref["key"],
    }
    parts.update(until=ref["cond"], max={"type": "integer", "minimum": 1, "maximum": 20})
    steps = [
        obj(["op", *need], op={"enum": [op]}, **{k: parts[k] for k in (*need, *opt)})
        for op, (need, opt) in OPS.items()
    ]
    return {"$defs": defs, "type": "array", "minItems": 1, "maxItems": MAX_STEPS, "items": {"anyOf": steps}}


class InvalidProgram(ValueError):
    """A model's answer is not a valid action program (the message is the reason)."""


ACTION_PROGRAM_SCHEMA = _action_schema()
"""The action language as a JSON Schema, offered as ``answer_schema`` for schema-constrained decoding."""


# ------------------------------------------------------------------------------------- the language
def _value(v: Any, where: str) -> None:
    if not isinstance(v, dict):
        raise InvalidProgram(f"{where}: a value is an object such as {{'field': 'target'}}, got {v!r}")
    kinds = [k for k in ("const", "field", "fields_prefix", "date_parts") if k in v]
    if len(kinds) != 1:
        raise InvalidProgram(f"{where}: a value needs exactly one of const, field, fields_prefix, date_parts")
    extra = set(v) - {kinds[0], "fmt"}
    if extra:
        raise InvalidProgram(f"{where}: unknown value keys {sorted(extra)}")
    if "fmt" in v and v["fmt"] not in FMTS:
        raise InvalidProgram(f"{where}: unknown fmt {v['fmt']!r} (allowed: {', '.join(FMTS)})")
    k = kinds[0]
    if k == "const" and not isinstance(v[k], str | int | float):
        raise InvalidProgram(f"{where}: const must be text or a number")
    if k in ("field", "fields_prefix") and not isinstance(v[k], str):
        raise InvalidProgram(f"{where}: {k} must be a field name (text)")
    if k == "date_parts" and not (
        isinstance(v[k], list) and len(v[k]) == 3 and all(isinstance(x, str) for x in v[k])
    ):
        raise InvalidProgram(f"{where}: date_parts must list three field names")


def _locator(loc: Any, where: str) -> None:
    if not isinstance(loc, dict) or not loc:
        raise InvalidProgram(f"{where}: a target is an object such as {{'id': 'subbtn'}}, got {loc!r}")
    extra = set(loc) - set(LOC_KEYS)
    if extra:
        raise InvalidProgram(f"{where}: unknown target keys {sorted(extra)} (allowed: {', '.join(LOC_KEYS)})")
    for k in ("id", "tag", "class", "text", "row_class"):
        if k in loc and not isinstance(loc[k], str):
            raise InvalidProgram(f"{where}: target {k} must be text")
    if "nth" in loc and not (
        isinstance(loc["nth"], int) and not isinstance(loc["nth"], bool) and loc["nth"] >= 0
    ):
        raise InvalidProgram(f"{where}: nth must be a whole number >= 0")
    for k in ("text_value", "row_value"):
        if k in loc:
            _value(loc[k], f"{where}.{k}")
    if ("row_class" in loc) != ("row_value" in loc):
        raise InvalidProgram(f"{where}: row_class and row_value go together")


def _condition(c: Any, where: str, depth: int = 0) -> None:
    if not isinstance(c, dict) or depth > 3:
        raise InvalidProgram(f"{where}: a condition is an object (at most 3 levels of 'all')")
    if "all" in c:
        if set(c) != {"all"} or not isinstance(c["all"], list) or not c["all"]:
            raise InvalidProgram(f"{where}: 'all' takes a non-empty list of conditions and nothing else")
        for i, sub in enumerate(c["all"]):
            _condition(sub, f"{where}.all[{i}]", depth + 1)
        return
    tests = [k for k in ("text_equals", "value_endswith") if k in c]
    if "target" not in c or len(tests) != 1 or set(c) - {"target", *tests}:
        raise InvalidProgram(
            f"{where}: a condition is {{'target': LOC, 'text_equals' or 'value_endswith': VAL}}"
        )
    _locator(c["target"], f"{where}.target")
    _value(c[tests[0]], f"{where}.{tests[0]}")


def _key(k: Any, where: str) -> None:
    if not isinstance(k, str) or not (k in SPECIAL_KEYS or (len(k) == 1 and k.isprintable())):
        raise InvalidProgram(f"{where}: key {k!r} is not allowed (one character or one of {SPECIAL_KEYS})")


def check_step(step: Any, i: int) -> None:
    """Raise :class:`InvalidProgram` naming what is wrong with step ``i``."""
    where = f"step {i}"
    if not isinstance(step, dict):
        raise InvalidProgram(f"{where}: a step is an object such as {{'op': 'submit'}}, got {step!r}"[:200])
    op = step.get("op")
    if op not in OPS:
        raise InvalidProgram(f"{where}: unknown op {op!r} (allowed: {', '.join(OPS)})"[:200])
    need, opt = OPS[op]
    missing = [k for k in need if k not in step]
    extra = set(step) - {"op", *need, *opt}
    if missing or extra:
        raise InvalidProgram(f"{where}: missing keys {missing}, unknown keys {sorted(extra)} (op {op})")
    if "target" in step:
        _locator(step["target"], f"{where}.target")
    if "value" in step:
        _value(step["value"], f"{where}.value")
    if "words" in step:
        _value(step["words"], f"{where}.words")
    if "key" in step:
        _key(step["key"], where)
    if "until" in step:
        _condition(step["until"], f"{where}.until")
    if "max" in step and not (isinstance(step["max"], int) and 1 <= step["max"] <= 20):
        raise InvalidProgram(f"{where}: max must be a whole number in [1, 20]")


def parse_program(answer: str) -> list[dict[str, Any]]:
    """A model's answer as validated steps (a JSON list of steps; also ``{"steps": [...]}`` or one
    step object), else :class:`InvalidProgram` with the reason."""
    obj = extract_json(answer, lists=True)
    if obj is None:
        raise InvalidProgram(f"no JSON list of steps in the answer: {answer.strip()[:120]!r}")
    if isinstance(obj, dict):
        obj = obj.get("steps", obj.get("program", [obj] if "op" in obj else None))
    if not isinstance(obj, list):
        raise InvalidProgram(f"the answer's first JSON is not a list of steps: {json.dumps(obj)[:100]}")
    if not obj:
        raise InvalidProgram("the program has no steps")
    if len(obj) > MAX_STEPS:
        raise InvalidProgram(f"the program has {len(obj)} steps, at most {MAX_STEPS}")
    if len(json.dumps(obj)) > MAX_PROGRAM_CHARS:
        raise InvalidProgram(f"the program is longer than {MAX_PROGRAM_CHARS} characters")
    for i, step in enumerate(obj):
        check_step(step, i)
    return obj


# ------------------------------------------------------------------------------------- the page as text
def _element_line(e: Any) -> str:
    tag = str(e.tag)
    if int(e.ref) < 0:  # a text node: its ref is renumbered on every observation
        return json.dumps((e.text or "").strip()[:60])
    ident = f"#{e.id}" if e.id else ""
    classes = "".join(f".{c}" for c in str(e.classes or "").split()[:3])
    text = f" {json.dumps(e.text.strip()[:60])}" if e.text and e.text.strip() else ""
    if tag in ("input_checkbox", "input_radio"):
        state = " [x]" if e.value else " [ ]"
    elif isinstance(e.value, str) and e.value:
        state = f" value={json.dumps(e.value[:60])}"
    else:
        state = ""
    return f"[{e.ref}] {tag}{ident}{classes}{text}{state}"


def dom_lines(obs: GuiObservation, *, max_elements: int = 80) -> list[str]:
    """The page's elements as an indented tree (document order), at most ``max_elements``."""
    refs = {e.ref for e in obs.elements}
    depth: dict[int, int] = {}
    lines: list[str] = []
    for e in obs.elements:
        if len(lines) >= max_elements:
            lines.append(f"... ({len(obs.elements) - max_elements} more elements not shown)")
            break
        d = depth.get(e.parent_ref, -1) + 1 if e.parent_ref in refs else 0
        depth[e.ref] = d
        lines.append("  " * d + _element_line(e))
    return lines


def observation_text(obs: GuiObservation, *, max_elements: int = 80, max_chars: int = 4000) -> str:
    """The page for a model: utterance, fields (the names VAL specs use) and the element tree."""
    fields = "; ".join(f"{json.dumps(k)} = {json.dumps(v)}" for k, v in obs.fields) or "(none)"
    dom = "\n".join(dom_lines(obs, max_elements=max_elements))
    if len(dom) > max_chars:
        dom = dom[:max_chars] + "\n... (cut)"
    return (
        f"Page: {obs.task}\nUtterance: {obs.utterance}\nFields (name = value): {fields}\n"
        f'Elements ([ref] tag#id.class "text" value; children indented):\n{dom}'
    )


def attempt_text(record: Mapping[str, Any] | None) -> str:
    """The previous attempt in this workspace, as the actor's history (no reward in it)."""
    if record is None:
        return "Your previous attempt on this page: none."
    if not record["valid"]:
        return f"Your previous attempt on this page was not a valid program: {record['reason']}"
    acts = ", ".join(json.dumps(a, sort_keys=True) for a in record["actions"][:12]) or "none"
    return (
        f"Your previous attempt on this page: program {json.dumps(record['steps'])[:600]}\n"
        f"Actions applied: {acts}\nInvalid actions: {len(record['invalid_actions'])}; "
        f"program error: {record['program_error'] or 'none'}; "
        f"the page {'ended' if record['ended_by_page'] else 'did not end'} the episode."
    )


# ------------------------------------------------------------------------------------- workspace / env
class MiniwobTextWorkspace:
    """A MiniWoB++ workspace with a model actor's text interface (module doc)."""

    def __init__(self, inner: MiniwobWorkspace, project: Project, env: MiniwobTextEnvironment) -> None:
        self.inner, self.project, self._env = inner, project, env
        self.page, self.seed, self.purpose = inner.page, inner.seed, inner.purpose
        self.answer_format = env.answer_format
        self.answer_schema = ACTION_PROGRAM_SCHEMA  # for a model role that decodes under a schema
        self.history: list[dict[str, Any]] = []  # this task's attempts (the actor's history h)
        self._last: GuiObservation | None = None

    @property
    def _raw_reward(self) -> float | None:  # host-only: MiniwobEnvironment.official_score reads it
        return self.inner._raw_reward

    def observe(self) -> str:
        obs = self._last = self.inner.observe()
        page = observation_text(obs, max_elements=self._env.max_elements, max_chars=self._env.max_chars)
        return f"{page}\n\n{attempt_text(self.history[-1] if self.history else None)}"

    def act(self, answer: str) -> tuple[Evidence, dict[str, Any]]:
        """Parse, validate and (when valid) run the answer as a sandboxed action program."""
        try:
            steps: list[dict[str, Any]] | None = parse_program(answer)
            reason = None
        except InvalidProgram as e:
            steps, reason = None, str(e)
        if steps is None:
            obs = self._last or self.inner.observe()
            ex: dict[str, Any] = {
                "utterance": obs.utterance,
                "fields": [list(f) for f in obs.fields],
                "actions": [],
                "targets": [],
                "invalid_actions": [],
                "program_error": f"invalid action program: {reason}",
                "ended_by_page": False,
                "outcome": "invalid_program",
            }
            final: dict[str, Any] = {"elements": []}
        else:
            ex = self.inner.run(steps)
            final = {"elements": ex.pop("final_elements")}
        record = {
            "project_id": self.project.id,
            "purpose": self.purpose,
            "page": self.page,
            "seed": self.seed,
            "attempt": len(self.history),
            "valid": steps is not None,
            "reason": reason,
            "steps": steps,
            "actions": ex["actions"],
            "invalid_actions": ex["invalid_actions"],
            "program_error": ex["program_error"],
            "ended_by_page": ex["ended_by_page"],
            "outcome": ex["outcome"],
        }
        self.history.append(record)
        self._env.record(record)
        return Evidence(ex["utterance"], final, ex), {"program": steps, "invalid": reason}

    def close(self) -> None:
        self.inner.close()


class MiniwobTextEnvironment:
    """:class:`.miniwob.MiniwobEnvironment` whose workspaces a model actor can read and act on."""

    name = "miniwob"
    text_workspaces = True  # workspaces offer observe/act to a model actor (llm_roles)
    accepts = (
        "MiniWoB++ practice instructions 'page: <task name>' optionally followed by '; seed: <int>' "
        "(below 1000000) or '; variant: <12 hex template hash>'"
    )

    def __init__(self, inner: MiniwobEnvironment, *, max_elements: int = 80, max_chars: int = 4000) -> None:
        from rsi_workbench.models.prompts import load_prompt

        self.inner, self.max_elements, self.max_chars = inner, max_elements, max_chars
        self.template = load_prompt(PACKAGE, ACTIONS_PROMPT)
        self.answer_format = self.template.text
        self._run: Any = None
        self._lock = threading.Lock()

    @property
    def episodes(self) -> Counter[str]:
        return self.inner.episodes

    @property
    def target_seeds(self) -> frozenset[int]:
        return self.inner.target_seeds

    def sandbox_isolation(self) -> Any:
        """The inner environment's action-program plan (see :meth:`.miniwob.MiniwobEnvironment.sandbox_isolation`)."""
        return self.inner.sandbox_isolation()

    def attach_run(self, run: Any) -> None:
        """Record every attempt on ``run`` (and version the action language's text into it)."""
        from rsi_workbench.models.prompts import record_prompt

        with self._lock:
            self._run = run
            record_prompt(run, self.template)

    def record(self, payload: dict[str, Any]) -> None:
        with self._lock:
            if self._run is not None:
                self._run.append(EVENT_KIND, payload)

    def targets(self) -> list[Project]:
        return self.inner.targets()

    def open(self, project: Project, *, seed: int, purpose: str) -> MiniwobTextWorkspace:
        return MiniwobTextWorkspace(self.inner.open(project, seed=seed, purpose=purpose), project, self)

    def host_only_texts(self) -> list[str]:
        return self.inner.host_only_texts()

    def official_score(self, workspace: Any) -> float:
        return self.inner.official_score(workspace)


def reason_kind(reason: str) -> str:
    """A reason without its particulars: ``step 2.target: unknown target keys ['x']`` -> ``step:
    unknown target keys``; ``the program has 13 steps, at most 12`` -> ``... N steps, at most N``."""
    m = re.match(r"step \d+[^:]*: ", reason)
    rest = re.split(r": | '| \"| \(| \{| \[", reason[m.end() :] if m else reason, maxsplit=1)[0]
    return ("step: " if m else "") + re.sub(r"\d+", "N", rest).strip()[:80]


def program_summary(events: Sequence[Any]) -> dict[str, Any]:
    """Counts over a run's ``miniwob_action_program`` events: attempts, valid programs, invalid ones
    by :func:`reason_kind`, program errors, episodes the page ended."""
    recs = [e.payload for e in events if e.kind == EVENT_KIND]
    invalid: Counter[str] = Counter()
    for r in recs:
        if not r["valid"]:
            invalid[reason_kind(str(r["reason"]))] += 1
    errors = Counter(str(r["program_error"]).split(":")[0] for r in recs if r["valid"] and r["program_error"])
    return {
        "attempts": len(recs),
        "by_purpose": dict(Counter(r["purpose"] for r in recs)),
        "valid": sum(1 for r in recs if r["valid"]),
        "invalid_by_reason": dict(invalid),
        "program_errors": dict(errors),
        "ended_by_page": sum(1 for r in recs if r["ended_by_page"]),
    }
