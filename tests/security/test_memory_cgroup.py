"""Memory per candidate: where this host lets us write a cgroup hierarchy (v1 or v2) with the memory
controller, ``Limits.memory_bytes`` bounds the candidate's whole process tree, not each process; the
group is made before the child gets its job and removed once it is reaped. Elsewhere (an
unprivileged user) the per-process rlimit is all there is: the record says so and these tests skip."""

from __future__ import annotations

import dataclasses
import os
import signal
import subprocess

import pytest

from rsi_workbench import sandbox
from rsi_workbench.domains.code_repair.sandbox import Sandbox, SandboxLimits, Status
from rsi_workbench.sandbox import cgroup

FORK_AND_HOLD = """
import os, time
def f(n, mb):
    pids = []
    for _ in range(n):
        pid = os.fork()
        if pid == 0:
            block = b"x" * (mb << 20)  # written, so resident
            time.sleep(1.0)
            os._exit(0)
        pids.append(pid)
    codes = [os.waitstatus_to_exitcode(os.waitpid(p, 0)[1]) for p in pids]
    if any(codes):
        raise RuntimeError(f"children ended with {codes}")
    return codes
"""
GIB = 1 << 30


def test_the_isolation_record_says_how_memory_is_limited() -> None:
    rec = sandbox.probe_isolation().record()
    assert rec["memory_limit"] == cgroup.memory_mode()
    assert rec["memory_limit"] in ("cgroup-v2", "cgroup-v1", "rlimit")
    if rec["memory_limit"] == "rlimit":
        assert cgroup.fallback_reason(), "the fallback says why"


@pytest.fixture(scope="module")
def hierarchy() -> cgroup.Hierarchy:
    h = cgroup.find_hierarchy()
    if h is None:
        pytest.skip(f"no writable cgroup memory hierarchy here ({cgroup.fallback_reason()}): rlimit only")
    return h


def _ours(h: cgroup.Hierarchy) -> list[str]:
    from rsi_workbench.sandbox.judge import POOL
    from rsi_workbench.sandbox.spares import SPARES

    POOL.close_all()  # idle judges (persistent across assert tests) hold their group until closed
    SPARES.close_all()  # and so does the candidate process started ahead for the next assert test
    return [d.name for d in h.parent.iterdir() if d.is_dir() and d.name.startswith(f"{os.getpid()}-")]


def test_four_children_are_stopped_at_the_aggregate_limit(hierarchy: cgroup.Hierarchy) -> None:
    sb = Sandbox(limits=SandboxLimits(memory_bytes=GIB, wall_s=30.0))
    assert sb.isolation.memory_limit == hierarchy.version
    test = {"id": "t", "kind": "io", "args": [4, 350], "expected": [0, 0, 0, 0]}
    out = sb.run_test(FORK_AND_HOLD, test, "f")  # 1.4 GB in all, 350 MB a process: rlimit alone lets it
    assert out.status == Status.RE, out
    assert out.message.startswith(f"memory limit exceeded: {GIB} bytes for the whole process tree"), out
    assert out.isolation["memory_limit"] == hierarchy.version
    # the host survives, the limit does not stop a tree below it, and no group is left behind
    ok = sb.run_test(FORK_AND_HOLD, {**test, "args": [4, 100]}, "f")
    assert ok.status == Status.AC, ok
    assert _ours(hierarchy) == []


def test_the_limit_holds_for_the_candidate_process_itself(hierarchy: cgroup.Hierarchy) -> None:
    iso = sandbox.probe_isolation()
    prog = "def f(mb):\n    block = b'x' * (mb << 20)\n    return len(block)\n"
    lim = sandbox.Limits(memory_bytes=200 << 20, wall_s=20.0)  # below RLIMIT_AS (1 GiB)
    r = sandbox.call(prog, "f", [300], isolation=iso, limits=lim)
    assert r.kind == "error" and r.message.startswith("memory limit exceeded"), r
    r = sandbox.call(prog, "f", [50], isolation=iso, limits=lim)
    assert r.kind == "value" and r.value == 50 << 20, r


def test_a_group_is_removed_and_whatever_is_left_in_it_killed(hierarchy: cgroup.Hierarchy) -> None:
    iso = sandbox.probe_isolation()
    p = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        group = cgroup.attach(p.pid, iso, sandbox.Limits())
        assert group is not None and group.path.parent == hierarchy.parent
        assert p.pid in [int(x) for x in (group.path / "cgroup.procs").read_text().split()]
        assert cgroup.release(group) == 0
        assert p.wait(timeout=10) == -signal.SIGKILL
        assert not group.path.exists()
    finally:
        p.kill()
        p.wait()


def test_a_plan_promising_a_cgroup_it_cannot_have_refuses_to_run() -> None:
    iso = dataclasses.replace(sandbox.probe_isolation(), memory_limit="cgroup-v2")
    if cgroup.memory_mode() == "cgroup-v2":
        iso = dataclasses.replace(iso, memory_limit="cgroup-v1")
    with pytest.raises(OSError, match="promises a cgroup-v"):
        sandbox.call("def f():\n    return 1\n", "f", [], isolation=iso)
