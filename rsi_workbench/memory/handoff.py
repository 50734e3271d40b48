"""The curriculum's handoff: ``{"decision", "rationale", "projects": [{"id", "instruction"}]}``.

The engine, not the curriculum, decides whether a turn counts: :func:`parse_handoff` accepts only
``WAVE`` (at least one project), ``SATURATED`` or ``STALLED`` (no projects), ids matching
:data:`PROJECT_ID_PATTERN` and unique, non-empty instructions, and no other keys. Anything else is a
failed turn (:class:`HandoffError` with its reason), recorded as an event. :data:`HANDOFF_SCHEMA` is
the same rule as JSON Schema, for backends that offer schema-constrained decoding. A fenced
```json block around the object (as chat models like to write) is tolerated.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Literal

from rsi_workbench.memory.types import Project

Decision = Literal["WAVE", "SATURATED", "STALLED"]
DECISIONS: tuple[Decision, ...] = ("WAVE", "SATURATED", "STALLED")
PROJECT_ID_PATTERN = r"[a-z0-9][a-z0-9_-]{0,63}"
_ID_RE = re.compile(PROJECT_ID_PATTERN)
MAX_INSTRUCTION_CHARS = 4000
_FENCE_RE = re.compile(r"^```[A-Za-z0-9_-]*\s*\n(?P<body>.*?)\n?```$", re.DOTALL)

HANDOFF_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["decision", "rationale", "projects"],
    "properties": {
        "decision": {"type": "string", "enum": list(DECISIONS)},
        "rationale": {"type": "string"},
        "projects": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["id", "instruction"],
                "properties": {
                    "id": {"type": "string", "pattern": f"^{PROJECT_ID_PATTERN}$"},
                    "instruction": {"type": "string", "minLength": 1, "maxLength": MAX_INSTRUCTION_CHARS},
                },
            },
        },
    },
}
"""JSON Schema of a handoff (uniqueness of ids and "projects only with WAVE" are checked in code)."""


class HandoffError(ValueError):
    """A failed curriculum turn; ``reason`` says what was wrong."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class Handoff:
    """A validated handoff: what the curriculum decided, why, and the wave it authored."""

    decision: Decision
    rationale: str
    projects: tuple[Project, ...]
    exhausted: bool = False  # True: the engine's STALLED after every allowed curriculum turn failed

    def as_dict(self) -> dict[str, Any]:
        return {
            "decision": self.decision,
            "rationale": self.rationale,
            "projects": [{"id": p.id, "instruction": p.instruction} for p in self.projects],
        }


def _strip_fence(text: str) -> str:
    s = text.strip()
    m = _FENCE_RE.match(s)
    return m.group("body").strip() if m else s


def _parse_project(i: int, item: Any) -> Project:
    if not isinstance(item, dict):
        raise HandoffError(f"projects[{i}] must be an object, got {type(item).__name__}")
    extra = sorted(set(item) - {"id", "instruction"})
    if extra:
        raise HandoffError(f"projects[{i}] has unknown keys {extra}; allowed: id, instruction")
    pid, instruction = item.get("id"), item.get("instruction")
    if not isinstance(pid, str) or not _ID_RE.fullmatch(pid):
        raise HandoffError(f"projects[{i}].id {pid!r} does not match {PROJECT_ID_PATTERN}")
    if not isinstance(instruction, str) or not instruction.strip():
        raise HandoffError(f"projects[{i}] ({pid}) needs a non-empty string instruction")
    if len(instruction) > MAX_INSTRUCTION_CHARS:
        raise HandoffError(
            f"projects[{i}] ({pid}) instruction is longer than {MAX_INSTRUCTION_CHARS} characters"
        )
    return Project(id=pid, instruction=instruction.strip())


def validate_handoff(obj: Any) -> Handoff:
    """Validate an already-decoded handoff object."""
    if not isinstance(obj, dict):
        raise HandoffError(f"the handoff must be a JSON object, got {type(obj).__name__}")
    extra = sorted(set(obj) - {"decision", "rationale", "projects"})
    if extra:
        raise HandoffError(f"unknown keys {extra}; allowed: decision, rationale, projects")
    decision = obj.get("decision")
    if decision not in DECISIONS:
        raise HandoffError(f"decision {decision!r} is not one of {list(DECISIONS)}")
    rationale = obj.get("rationale")
    if not isinstance(rationale, str):
        raise HandoffError("rationale must be a string")
    raw_projects = obj.get("projects", [])
    if not isinstance(raw_projects, list):
        raise HandoffError(f"projects must be a list, got {type(raw_projects).__name__}")
    projects = tuple(_parse_project(i, it) for i, it in enumerate(raw_projects))
    seen: set[str] = set()
    for p in projects:
        if p.id in seen:
            raise HandoffError(f"project id {p.id!r} is used twice; ids must be unique")
        seen.add(p.id)
    if decision == "WAVE" and not projects:
        raise HandoffError("decision WAVE needs at least one project")
    if decision != "WAVE" and projects:
        raise HandoffError(f"decision {decision} must come with no projects (got {len(projects)})")
    return Handoff(decision=decision, rationale=rationale, projects=projects)


def parse_handoff(text: str) -> Handoff:
    """Parse and validate the curriculum's raw text, or raise :class:`HandoffError` with the reason."""
    if not isinstance(text, str):
        raise HandoffError(f"the handoff must be text, got {type(text).__name__}")
    body = _strip_fence(text)
    if not body:
        raise HandoffError("the handoff is empty")
    try:
        obj = json.loads(body)
    except json.JSONDecodeError as e:
        raise HandoffError(
            f"the handoff is not valid JSON: {e.msg} at line {e.lineno} column {e.colno}"
        ) from e
    return validate_handoff(obj)
