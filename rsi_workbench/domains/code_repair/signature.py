"""State signatures for matched comparisons (paper, "对照三": ``incumbent.py::state_signature``).

A comparison unit (k candidates + the incumbent) is only valid when every member was evaluated from
the same pre-action state under the same public test suite. A record's context is rendered as
``<before>\\nCandidate action:\\n<action>\\nOfficial public test suite:\\n<tests>``; the signature is
``(before, tests)``, so candidates differing only in their action compare equal.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

ACTION_SEP = "\nCandidate action:\n"
SUITE_SEP = "\nOfficial public test suite:\n"


class StateSignature(NamedTuple):
    """(pre-action state, public test suite) of one record; equal signatures mean matched conditions."""

    before: str
    tests: str


def _test_json(test: Any) -> dict[str, Any]:
    if hasattr(test, "model_dump"):
        return dict(test.model_dump(mode="json", exclude_none=True))
    return {k: v for k, v in dict(test).items() if v is not None}


def render_suite(tests: Sequence[Any]) -> str:
    """The public test suite as canonical text (one JSON object per line, keys sorted)."""
    return "\n".join(json.dumps(_test_json(t), sort_keys=True) for t in tests)


def render_before(task_id: str, program: str, prompt: str = "") -> str:
    """The pre-action state: which task, its spec, and the program the action will be applied to."""
    return f"Task: {task_id}\nSpecification:\n{prompt}\nCurrent program:\n{program}"


def render_context(task_id: str, program: str, action: str, tests: Sequence[Any], prompt: str = "") -> str:
    """A record's context in the paper's layout (pre-action state, candidate action, public suite)."""
    return render_before(task_id, program, prompt) + ACTION_SEP + action + SUITE_SEP + render_suite(tests)


def state_signature(record: str | Mapping[str, Any]) -> StateSignature:
    """The (pre-action state, test suite) signature of a record.

    ``record`` is either a rendered context string (split on the two separators, both required) or a
    mapping with ``task_id``, ``program`` (the pre-action program; ``state`` also accepted),
    optional ``prompt``, and ``public_tests`` (or ``tests``); or a mapping holding ``context``.
    """
    if isinstance(record, Mapping) and "context" in record:
        record = str(record["context"])
    if isinstance(record, str):
        if ACTION_SEP not in record or SUITE_SEP not in record:
            raise ValueError("state_signature: context lacks the 'Candidate action:' or suite separator")
        before, rest = record.split(ACTION_SEP, 1)
        tests = rest.split(SUITE_SEP, 1)[1]
        return StateSignature(before, tests)
    program = record.get("program", record.get("state"))
    tests = record.get("public_tests", record.get("tests"))
    if record.get("task_id") is None or program is None or tests is None:
        raise ValueError(
            "state_signature: record needs task_id, program (or state) and public_tests (or tests)"
        )
    return StateSignature(
        render_before(str(record["task_id"]), str(program), str(record.get("prompt", ""))),
        render_suite(tests),
    )


def signature_digest(sig: StateSignature) -> str:
    """A short sha256 of a signature, for storing in events."""
    h = hashlib.sha256(sig.before.encode() + b"\0" + sig.tests.encode())
    return h.hexdigest()[:16]


def assert_matched(records: Sequence[str | Mapping[str, Any]]) -> StateSignature:
    """Assert that all records (k candidates + incumbent) share one signature; returns it."""
    sigs = [state_signature(r) for r in records]
    if not sigs:
        raise ValueError("assert_matched: no records")
    bad = [i for i, s in enumerate(sigs) if s != sigs[0]]
    if bad:
        raise AssertionError(f"records {bad} were not evaluated under the same state/test suite as record 0")
    return sigs[0]


__all__ = [
    "ACTION_SEP",
    "SUITE_SEP",
    "StateSignature",
    "assert_matched",
    "render_context",
    "render_suite",
    "signature_digest",
    "state_signature",
]
