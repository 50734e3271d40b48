"""All 164 HumanEvalFix canonical solutions pass every (split) hidden test; all 164 buggy programs
fail their hidden check; the 20 tasks with hidden asserts moved into the public suite fail it."""

from __future__ import annotations

import pytest

from rsi_workbench.domains.code_repair import Sandbox, Status, TestCase, load_humanevalfix
from rsi_workbench.domains.code_repair.sandbox import default_mode
from rsi_workbench.domains.code_repair.tasks import _humanevalpack_rows, _public_promotions
from rsi_workbench.execute import make_executor


@pytest.mark.slow
def test_canonical_pass_and_buggy_fail_on_all_164() -> None:
    sb = Sandbox(mode=default_mode())
    tasks = load_humanevalfix()
    rows = {r["task_id"]: r for r in _humanevalpack_rows()}
    assert len(tasks) == 164
    jobs: list[tuple[str, str]] = []  # (what, task_id), aligned with items
    items: list[tuple[str, TestCase, str]] = []
    for t in tasks:
        assert t.reference is not None
        for h in t.hidden_tests:
            jobs.append(("canonical", t.task_id))
            items.append((t.reference, h, t.entry_point))
        # the whole original check in one process: it fails iff at least one hidden assert fails
        jobs.append(("buggy-hidden", t.task_id))
        items.append(
            (t.program, TestCase(id="check", kind="assert", code=rows[t.task_id]["test"]), t.entry_point)
        )
        if t.meta["hidden_moved_to_public"]:
            for p in t.public_tests:
                jobs.append(("buggy-public", t.task_id))
                items.append((t.program, p, t.entry_point))
    with make_executor("process", 2) as ex:
        outs = sb.run_batch(items, ex)
    canonical_fail = sorted(
        {tid for (what, tid), o in zip(jobs, outs) if what == "canonical" and not o.passed}
    )
    buggy_pass = sorted({tid for (what, tid), o in zip(jobs, outs) if what == "buggy-hidden" and o.passed})
    failed_public = {tid for (what, tid), o in zip(jobs, outs) if what == "buggy-public" and not o.passed}
    assert canonical_fail == [], [o for (w, _), o in zip(jobs, outs) if w == "canonical" and not o.passed][:3]
    assert buggy_pass == []
    assert failed_public == set(_public_promotions())
    assert sum(w == "canonical" for w, _ in jobs) == sum(len(t.hidden_tests) for t in tasks) == 1162
    assert {o.status for o in outs} <= set(Status)
