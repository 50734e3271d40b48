"""No silent stale reuse: the execution-cache key covers program, tests, limits, isolation and the
sandbox's semantics version and hash seed; old keys (v2 and before: test code in the candidate's
process) are ignored with a message; a torn last line is dropped; any other undecodable line is an error."""

from __future__ import annotations

import json

import pytest

from rsi_workbench.domains.code_repair import Sandbox, SandboxLimits, TestCase
from rsi_workbench.domains.code_repair.binding import CACHE_KEY_VERSION, ExecutionCache


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
    assert k.startswith(CACHE_KEY_VERSION + "|") and CACHE_KEY_VERSION == "v3"


def test_key_covers_the_sandbox_semantics_and_hash_seed(monkeypatch: pytest.MonkeyPatch) -> None:
    from rsi_workbench.domains.code_repair import binding

    sb = Sandbox(mode="best_effort")
    t1 = [TestCase(id="a", kind="io", args=[1], expected=2)]
    k = ExecutionCache.key("x", "public", "p", False, t1, sb)
    monkeypatch.setattr(binding, "SANDBOX_SEMANTICS", binding.SANDBOX_SEMANTICS + " (changed)")
    assert ExecutionCache.key("x", "public", "p", False, t1, sb) != k
    monkeypatch.undo()
    monkeypatch.setattr(binding, "HASH_SEED", "1")
    assert ExecutionCache.key("x", "public", "p", False, t1, sb) != k


def test_old_and_torn_and_bad(tmp_path, capsys):
    p = tmp_path / "c.jsonl"
    p.write_text(
        json.dumps({"key": "x|public|0|abc", "outcomes": []})
        + "\n"
        + json.dumps({"key": "v2|x", "outcomes": []})
        + "\n"
        + json.dumps({"key": "v3|x", "outcomes": []})
        + '\n{"key": "v3|'
    )
    c = ExecutionCache(p)
    err = capsys.readouterr().err
    assert "ignoring 2 execution(s) cached under an older key" in err and ":4: torn last line dropped" in err
    assert list(c.data) == ["v3|x"] and p.read_text().endswith("\n")
    p.write_text("{nope\n" + json.dumps({"key": "v3|x", "outcomes": []}) + "\n")
    with pytest.raises(ValueError, match=r"c.jsonl:1: undecodable"):
        ExecutionCache(p)
