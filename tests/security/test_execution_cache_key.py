"""No silent stale reuse: the execution-cache key covers program, tests, limits and isolation; old keys
are ignored with a message; a torn last line is dropped; any other undecodable line is an error."""

from __future__ import annotations

import json

import pytest

from rsi_workbench.domains.code_repair import Sandbox, SandboxLimits, TestCase
from rsi_workbench.experiments.code_repair.binding import ExecutionCache


def test_key(tmp_path):
    sb = Sandbox(mode="best_effort")
    t1 = [TestCase(id="a", kind="io", args=[1], expected=2)]
    t2 = [TestCase(id="a", kind="io", args=[1], expected=3)]
    k = ExecutionCache.key("x", "public", "p", False, t1, sb)
    assert k != ExecutionCache.key("x", "public", "p", False, t2, sb)
    assert k != ExecutionCache.key(
        "x", "public", "p", False, t1, Sandbox(mode="best_effort", limits=SandboxLimits(wall_s=5))
    )
    assert k == ExecutionCache.key("x", "public", "p", False, list(t1), sb)


def test_old_and_torn_and_bad(tmp_path, capsys):
    p = tmp_path / "c.jsonl"
    p.write_text(
        json.dumps({"key": "x|public|0|abc", "outcomes": []})
        + "\n"
        + json.dumps({"key": "v2|x", "outcomes": []})
        + '\n{"key": "v2|'
    )
    c = ExecutionCache(p)
    err = capsys.readouterr().err
    assert "ignoring 1 execution(s) cached under an older key" in err and ":3: torn last line dropped" in err
    assert list(c.data) == ["v2|x"] and p.read_text().endswith("\n")
    p.write_text("{nope\n" + json.dumps({"key": "v2|x", "outcomes": []}) + "\n")
    with pytest.raises(ValueError, match=r"c.jsonl:1: undecodable"):
        ExecutionCache(p)
