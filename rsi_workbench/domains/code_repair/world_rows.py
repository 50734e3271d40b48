"""World-model rows of code-repair transitions: one whole-suite row (labelled by the hidden suite) and
one row per public test for each executed candidate, the leakage check on them, and their batch."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rsi_workbench.domains.code_repair.tasks import RepairTask, TestCase
from rsi_workbench.domains.code_repair.world_encoding import (
    PROVENANCE_FLAGS,
    STATUS_INDEX,
    SUITE_CONTEXT,
    encode_action,
    encode_state,
    observed_utility,
    outcome_text,
    render_test,
    suite_outcome_text,
    suite_status,
    test_context,
)
from rsi_workbench.domains.code_repair.world_transitions import Transition


# ------------------------------------------------------------------------------------ rows
@dataclass
class Rows:
    """Text rows + labels for the world model (see ``world.data.TransitionBatch``)."""

    state: list[str]
    action: list[str]
    context: list[str]
    outcome: list[str]
    status: list[int]
    runtime_s: list[float]
    is_suite: list[bool]
    pass_fraction: list[float]
    group: list[str]
    observed_utility: list[float]
    transition: list[int]  # index of the candidate transition each row belongs to
    manifest: dict[str, Any]

    def __len__(self) -> int:
        return len(self.status)


def transition_rows(
    transitions: Sequence[Transition],
    tasks: Mapping[str, RepairTask],
    *,
    role: str,
    suite: bool = True,
    public: bool = True,
) -> Rows:
    """Suite rows (label: hidden suite) and per-public-test rows for ``transitions``; ``role`` is
    recorded in the manifest (``train`` rows must not come from gate/audit problems)."""
    r = Rows([], [], [], [], [], [], [], [], [], [], [], {"role": role, **PROVENANCE_FLAGS})

    def add(**row: Any) -> None:
        for name, value in row.items():
            getattr(r, name).append(value)

    for ti, t in enumerate(transitions):
        task = tasks[t.task_id]
        state = encode_state(task, t.state_program, t.state_public)
        action = encode_action(t.state_program, t.program)
        if suite:
            add(
                state=state,
                action=action,
                context=SUITE_CONTEXT,
                outcome=suite_outcome_text(t.hidden),
                status=suite_status(t.hidden),
                runtime_s=sum(float(o["runtime_s"]) for o in t.hidden),
                is_suite=True,
                pass_fraction=sum(o["status"] == "AC" for o in t.hidden) / len(t.hidden),
                group=t.group_id,
                observed_utility=observed_utility(t.hidden),
                transition=ti,
            )
        if public:
            by_id = {x.id: x for x in task.public_tests}
            for o in t.public:
                add(
                    state=state,
                    action=action,
                    context=test_context(by_id[o["test_id"]]),
                    outcome=outcome_text([o]),
                    status=STATUS_INDEX[o["status"]],
                    runtime_s=float(o["runtime_s"]),
                    is_suite=False,
                    pass_fraction=float("nan"),
                    group=f"{t.group_id}|{o['test_id']}",
                    observed_utility=float(o["status"] == "AC"),
                    transition=ti,
                )
    return r


def _assert_lines(code: str) -> set[str]:
    return {ln.strip() for ln in code.splitlines() if ln.strip().startswith("assert")}


def _io_lines(tests: Sequence[TestCase]) -> set[str]:
    """io tests (no code) as a context would render them: one ``args=... expected=...`` line each."""
    return {render_test(t) for t in tests if not t.code}


def check_no_leakage(rows: Rows, tasks: Mapping[str, RepairTask], transitions: Sequence[Transition]) -> None:
    """Assert the provenance flags: no hidden-only test (an assert line, or an io test's rendered
    ``args=... expected=...`` line) in any state/action/context, no candidate code in any target, and
    train rows only from training problems (the manifest's role)."""
    hidden_asserts: dict[str, set[str]] = {}
    hidden_io: dict[str, set[str]] = {}
    for tid, task in tasks.items():
        pub = set().union(*(_assert_lines(t.code or "") for t in task.public_tests))
        hidden_asserts[tid] = set().union(*(_assert_lines(t.code or "") for t in task.hidden_tests)) - pub
        hidden_io[tid] = _io_lines(task.hidden_tests) - _io_lines(task.public_tests)
    for i in range(len(rows)):
        t = transitions[rows.transition[i]]
        text = rows.state[i] + rows.action[i] + rows.context[i]
        for line in hidden_asserts[t.task_id]:
            assert line not in text, f"hidden test leaked into a context ({t.task_id}): {line[:80]}"
        lines = {ln.strip() for ln in text.splitlines()}
        for line in hidden_io[t.task_id]:
            assert line not in lines, f"hidden test leaked into a context ({t.task_id}): {line[:80]}"
        added = [
            ln[1:].strip()
            for ln in rows.action[i].splitlines()
            if ln.startswith("+") and not ln.startswith("+++")
        ]
        for ln in added:
            assert not (len(ln) >= 12 and ln in rows.outcome[i]), (
                f"candidate code in a target ({t.task_id}): {ln[:80]}"
            )
    assert rows.manifest["gate_or_final_labels_used"] is False


def rows_to_batch(rows: Rows, model_featurize: Any) -> Any:
    """Featurize rows (``model_featurize(texts) -> [N, H]``, e.g. ``WorldModel.features``) into a batch."""
    from rsi_workbench.world.data import make_batch

    gid = {g: i for i, g in enumerate(dict.fromkeys(rows.group))}
    return make_batch(
        model_featurize(rows.state),
        model_featurize(rows.action),
        model_featurize(rows.context),
        rows.status,
        runtime_s=rows.runtime_s,
        is_suite=rows.is_suite,
        pass_fraction=rows.pass_fraction,
        group=[gid[g] for g in rows.group],
        outcome=model_featurize(rows.outcome),
    )


def subset_rows(rows: Rows, keep: Sequence[int]) -> Rows:
    """The rows at indices ``keep`` (same manifest)."""
    vals = {f: [getattr(rows, f)[i] for i in keep] for f in Rows.__dataclass_fields__ if f != "manifest"}
    return Rows(**vals, manifest=dict(rows.manifest))
