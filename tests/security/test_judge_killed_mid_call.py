"""A judged test whose process ends while one of its calls is still out (killed by its CPU limit, or
a thread's call left waiting) must not leave the host's late reply for the next test on that judge.

The judge's test process is a fork of the zygote and shares its stdin: a reply the host writes after
the test process is gone is read by the zygote as the next *job*. Before the fix the judge went back
to the pool, and the next test (an innocent one, of any candidate) read that bogus job's ``done``
as its own (``judge: test process ended with status 3``); its own job then ran one test late, so the
tests after it could get another test's outcome. The candidate chose how late and how large the
reply was, i.e. how long the zygote took over it and whether the pool's ``usable`` check saw it.
Now a judge whose test process did not report an outcome and exit 0 (the child exits 4 when a reply
it asked for was not read whole) is retired at once."""

from __future__ import annotations

import pytest

from rsi_workbench import sandbox
from rsi_workbench.sandbox import Limits
from rsi_workbench.sandbox.judge import POOL, _Judge, run_judged

# a limit set of its own (judges are pooled by plan and limits): CPU 1 s, so the test code's burner
# thread reaches it long before the candidate's slow call returns (6 s: room for a loaded CI machine) and well within the wall clock
LIM = Limits(cpu_soft_s=1, cpu_hard_s=2, wall_s=10.0)

PROGRAM = """
import os, time
def f(x):
    if x == 'slow':  # answers after the test process that asked is gone: a large reply
        time.sleep(6.0)
        return [[] for _ in range(100000)]
    if x == 'slow-crash':  # fails after it is gone: the host sends 'gone'
        time.sleep(6.0)
        os._exit(1)
    return x + 1
"""

BURN = "import threading\ndef spin():\n    while True:\n        pass\nthreading.Thread(target=spin, daemon=True).start()\n"


def check(body: str) -> str:
    return "def check(candidate):\n" + "".join("    " + ln + "\n" for ln in body.splitlines()) + "check(f)\n"


@pytest.fixture
def given(monkeypatch: pytest.MonkeyPatch) -> list[_Judge]:
    """Every judge handed back to the pool, in order (the pool still gets each one)."""
    out: list[_Judge] = []
    give = POOL.give

    def record(iso_: sandbox.Isolation, judge: _Judge) -> None:
        out.append(judge)
        give(iso_, judge)

    monkeypatch.setattr(POOL, "give", record)
    return out


@pytest.mark.parametrize(
    ("body", "kind"),
    [
        # killed by its CPU limit while waiting for the candidate's reply: TLE (the test code's)
        (BURN + "candidate('slow')", "timeout"),
        # killed the same way, then the candidate fails: the candidate's RE, as before
        (BURN + "candidate('slow-crash')", "error"),
        # the test ends (and passes, as before) while a thread's call is still out
        (
            "import threading, time\nthreading.Thread(target=candidate, args=('slow',)).start()\n"
            "time.sleep(0.3)",
            "passed",
        ),
    ],
    ids=["cpu-limit-value", "cpu-limit-gone", "thread-call-pending"],
)
def test_a_reply_after_the_test_process_is_gone_reaches_no_later_test(
    given: list[_Judge], body: str, kind: str
) -> None:
    iso = sandbox.probe_isolation()
    innocent_pass, innocent_fail = check("assert candidate(1) == 2"), check("assert candidate(1) == 3")

    warm = run_judged(PROGRAM, "f", innocent_pass, limits=LIM, isolation=iso)
    assert warm.kind == "passed", warm
    assert not given[-1].closed and given[-1] in POOL.idle[(iso.key(), LIM)]  # a clean test keeps it

    res = run_judged(PROGRAM, "f", check(body), limits=LIM, isolation=iso)
    assert res.kind == kind, res
    judge = given[-1]
    pooled = not judge.closed or judge in POOL.idle.get((iso.key(), LIM), [])

    # the tests after it, on the same plan and limits, get their own verdicts
    later = [run_judged(PROGRAM, "f", t, limits=LIM, isolation=iso) for t in (innocent_pass, innocent_fail)]
    later.append(run_judged(PROGRAM, "f", innocent_pass, limits=LIM, isolation=iso))
    assert [r.kind for r in later] == ["passed", "failed", "passed"], [(r.kind, r.message) for r in later]
    # not by luck (the pool's ``usable`` check seeing the stray frame in time): it was retired at once
    assert not pooled, "a judge whose test process left a call unanswered went back to the pool"


@pytest.mark.parametrize(
    ("body", "kind"),
    [
        ("assert candidate(1) == 2\nassert candidate(2) == 3", "passed"),
        ("assert candidate(1) == 3", "failed"),
        ("candidate(object())", "error"),  # an argument that cannot cross: no call went out
        ("try:\n    candidate(10 ** 5000)\nexcept ValueError:\n    pass\nassert candidate(1) == 2", "passed"),
    ],
)
def test_a_test_whose_calls_were_all_answered_keeps_its_judge(
    given: list[_Judge], body: str, kind: str
) -> None:
    iso = sandbox.probe_isolation()
    res = run_judged(PROGRAM, "f", check(body), limits=LIM, isolation=iso)
    assert res.kind == kind, res
    assert not given[-1].closed and given[-1] in POOL.idle[(iso.key(), LIM)]
