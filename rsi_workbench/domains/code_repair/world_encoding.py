"""Code repair -> world model: what is encoded (defined, not improvised; RSI-Anything code-repair W1).

* state s_t — the current program plus the *public* tests and their latest statuses
  (:func:`encode_state`); hidden tests are never in any context;
* action a_t — the candidate's unified diff against the current program (:func:`encode_action`);
* context c — one public test (per-test rows, :func:`test_context`) or :data:`SUITE_CONTEXT`
  (whole-suite rows);
* next state o_{t+1} for the EMA target — the execution outcome summary: statuses, error classes,
  runtimes (:func:`outcome_text`), never the candidate code itself.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from rsi_workbench.domains.code_repair.coder import unified_diff
from rsi_workbench.domains.code_repair.sandbox import STATUSES, Status, TestOutcome
from rsi_workbench.domains.code_repair.tasks import RepairTask, TestCase

SUITE_CONTEXT = "Whole test suite of the task: public and hidden tests (hidden test content withheld)."
STATUS_INDEX = {s.value: i for i, s in enumerate(STATUSES)}
PROVENANCE_FLAGS = {
    "context_contains_private_case_inputs": False,
    "context_contains_private_expected_outputs": False,
    "target_contains_candidate_code": False,
    "gate_or_final_labels_used": False,
}


# ------------------------------------------------------------------------------------- encoding
def _error_class(message: str) -> str:
    m = re.match(r"\s*([A-Za-z_][A-Za-z0-9_.]*(Error|Exception|Interrupt|Exit))", message or "")
    return m.group(1) if m else ("error" if message else "none")


def render_test(test: TestCase | Mapping[str, Any]) -> str:
    """How a test is shown: its assert lines, else its code, else (an io test) ``args=... expected=...``."""
    t = test.model_dump() if hasattr(test, "model_dump") else dict(test)
    code = t.get("code") or ""
    asserts = [ln.strip() for ln in code.splitlines() if ln.strip().startswith("assert")]
    return (
        "\n".join(asserts)
        if asserts
        else code.strip() or f"args={t.get('args')!r} expected={t.get('expected')!r}"
    )


def test_context(test: TestCase | Mapping[str, Any]) -> str:
    """Context of a per-test row: one public test's id and code."""
    t = test.model_dump() if hasattr(test, "model_dump") else dict(test)
    return f"Public test {t['id']}:\n{render_test(t)}"


def encode_state(task: RepairTask, program: str, public_outcomes: Sequence[Mapping[str, Any]] | None) -> str:
    """s_t: the program and the public tests with their latest statuses (``None``: not yet run)."""
    status = {o["test_id"]: o["status"] for o in public_outcomes or ()}
    lines = [
        f"Task {task.task_id} (entry point {task.entry_point})",
        "Program:",
        program.rstrip(),
        "Public tests:",
    ]
    for t in task.public_tests:
        lines.append(f"[{status.get(t.id, 'not run')}] {test_context(t)}")
    return "\n".join(lines)


def encode_action(program: str, candidate_program: str) -> str:
    """a_t: the candidate's unified diff against the current program."""
    return "Candidate action:\n" + (unified_diff(program, candidate_program) or "(no change)")


def outcome_text(outcomes: Sequence[Mapping[str, Any]]) -> str:
    """o_{t+1}: per-test status, error class and runtime (rounded to 10 ms); no code."""
    if not outcomes:
        raise ValueError("outcome_text: no outcomes")
    parts = [
        f"{o['test_id']}: {o['status']} {_error_class(o.get('message', ''))} {float(o['runtime_s']):.2f}s"
        for o in outcomes
    ]
    passed = sum(o["status"] == "AC" for o in outcomes)
    return f"Outcome: {passed}/{len(outcomes)} passed\n" + "\n".join(parts)


def suite_outcome_text(outcomes: Sequence[Mapping[str, Any]]) -> str:
    """Whole-suite outcome summary (status counts, pass fraction, total runtime); no test content."""
    counts = {s.value: 0 for s in STATUSES}
    for o in outcomes:
        counts[o["status"]] += 1
    total = sum(float(o["runtime_s"]) for o in outcomes)
    c = " ".join(f"{k}={v}" for k, v in counts.items())
    return f"Suite outcome: {c}; pass fraction {counts['AC'] / len(outcomes):.2f}; runtime {total:.2f}s"


def suite_status(outcomes: Sequence[Mapping[str, Any]]) -> int:
    """5-class status of a whole suite: AC if every test passes, else the first failing test's status."""
    for o in outcomes:
        if o["status"] != "AC":
            return STATUS_INDEX[o["status"]]
    return STATUS_INDEX["AC"]


def observed_utility(outcomes: Sequence[Mapping[str, Any]]) -> float:
    """Equation 7 on observed outcomes: 1[all pass] + 0.25 * pass fraction."""
    frac = sum(o["status"] == "AC" for o in outcomes) / len(outcomes)
    return float(frac == 1.0) + 0.25 * frac


def outcome_dict(o: TestOutcome) -> dict[str, Any]:
    """A sandbox outcome as the plain record stored in events and encoded (message cut to 300 chars)."""
    return {
        "test_id": o.test_id,
        "status": o.status.value if isinstance(o.status, Status) else str(o.status),
        "runtime_s": round(float(o.runtime_s), 4),
        "message": (o.message or "")[:300],
    }
