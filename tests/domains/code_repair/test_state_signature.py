"""State signatures: candidates and incumbent compared under identical (state, public suite)."""

from __future__ import annotations

import pytest

from rsi_workbench.domains.code_repair import TestCase, assert_matched, render_context, state_signature
from rsi_workbench.domains.code_repair.signature import signature_digest

TESTS = [TestCase(id="p0", kind="io", args=[1], expected=2)]


def test_context_split_matches_the_paper_layout() -> None:
    a = render_context("t", "def f(x):\n    return x\n", "--- diff A", TESTS, prompt="inc")
    b = render_context("t", "def f(x):\n    return x\n", "--- diff B", TESTS, prompt="inc")
    assert "\nCandidate action:\n" in a and "\nOfficial public test suite:\n" in a
    assert state_signature(a) == state_signature(b)
    assert state_signature({"context": a}) == state_signature(a)
    assert assert_matched([a, b, {"context": a}]) == state_signature(a)


def test_mapping_records_and_mismatches() -> None:
    rec = {"task_id": "t", "program": "x = 1\n", "public_tests": TESTS}
    same = {"task_id": "t", "state": "x = 1\n", "tests": [t.model_dump() for t in TESTS], "candidate": "y"}
    assert state_signature(rec) == state_signature(same)
    other_suite = {**rec, "public_tests": [*TESTS, TestCase(id="p1", kind="io", args=[2], expected=3)]}
    other_state = {**rec, "program": "x = 2\n"}
    assert state_signature(rec).before == state_signature(other_suite).before
    assert state_signature(rec) != state_signature(other_suite) != state_signature(other_state)
    with pytest.raises(AssertionError, match=r"records \[1\]"):
        assert_matched([rec, other_state])
    assert len(signature_digest(state_signature(rec))) == 16


def test_malformed_records_are_errors() -> None:
    with pytest.raises(ValueError, match="separator"):
        state_signature("no separators here")
    with pytest.raises(ValueError, match="needs task_id"):
        state_signature({"program": "x"})
