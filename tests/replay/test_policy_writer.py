"""The policy-writing dreamer: model-written exploration policies replayed only in a sandbox session.

A scripted model test double (:class:`ScriptedPolicyModel`) answers with fixed programs: one names an
unrevealed node, one loops forever, one returns an illegal batch, one is a valid policy that must score
exactly like the same policy written as a built-in.
"""

from __future__ import annotations

import random

import pytest
from replay_helpers import worked_tree

from rsi_workbench.models import ChatResult
from rsi_workbench.replay import GreedyDeepestBest, PortfolioParams, score_policy
from rsi_workbench.replay.dreaming import DreamContext, ParamMutationProposer, dream
from rsi_workbench.replay.policy_writer import PolicyWriter, extract_program, record_lines
from rsi_workbench.replay.sandboxed import GuardedPolicy, PolicyFailure, PolicyProgram, SandboxedPolicy
from rsi_workbench.sandbox import Limits

FAST = Limits(cpu_soft_s=5, cpu_hard_s=6, address_space_bytes=512 << 20, wall_s=0.5, session_wall_s=10.0)

GREEDY = """
def select_batch(view, W):
    leaves = [n for n in view.legal() if n != "r"]
    ok = [n for n in leaves if view.node(n).valid and view.node(n).score is not None]
    if ok:
        node = lambda n: view.node(n)
        return [max(ok, key=lambda n: (node(n).score, view.depth_of(n), -node(n).created_seq))]
    if view.capacity("r"):
        return ["r"]
    return leaves[:1]
"""
UNREVEALED = 'def select_batch(view, W):\n    return ["v2a"]  # a node of the recorded tree, never revealed\n'
LOOPS = "def select_batch(view, W):\n    while True:\n        pass\n"
ILLEGAL = (
    "def select_batch(view, W):\n"
    "    leaves = [n for n in view.legal() if n != 'r']\n"
    "    return [leaves[0], leaves[0]] if leaves else ['r']  # a repeated leaf in round 2\n"
)
RAISES = "def select_batch(view, W):\n    return 1 / 0\n"


class ScriptedPolicyModel:
    """Test double for a language model: answers each chat call with the next scripted texts."""

    identity, name = "scripted:policy-writer", "scripted"

    def __init__(self, texts: list[str]):
        self.texts, self.prompts = list(texts), []

    def chat(self, messages, *, n=1, temperature=0.0, top_p=1.0, max_tokens=512, stop=None, seed=None):
        self.prompts.append(messages[-1]["content"])
        out, self.texts = self.texts[:n], self.texts[n:]
        return ChatResult(out, ["stop"] * len(out), 100, 50 * len(out), 0.0, self.identity, self.name)


def failure_of(source: str, trees=None, W: int = 2) -> PolicyFailure:
    with SandboxedPolicy(PolicyProgram(source), limits=FAST) as pol:
        with pytest.raises(PolicyFailure) as err:
            score_policy(trees or [worked_tree()], pol, W, 0.05, 0.1)
    return err.value


def test_a_policy_naming_an_unrevealed_node_fails_with_its_reason():
    f = failure_of(UNREVEALED)
    assert f.kind == "unrevealed_node" and "'v2a'" in f.reason and "revealed prefix" in f.reason
    assert (f.tree, f.round) == (0, 1)


def test_a_policy_that_loops_forever_times_out():
    f = failure_of(LOOPS)
    assert f.kind == "timeout" and "wall clock" in f.reason and f.round == 1


def test_an_illegal_batch_fails_with_its_round():
    f = failure_of(ILLEGAL, [worked_tree(), worked_tree()])
    assert f.kind == "illegal_batch" and "duplicate" in f.reason and (f.tree, f.round) == (0, 2)
    assert failure_of(RAISES).kind == "raised" and "ZeroDivisionError" in failure_of(RAISES).reason
    assert failure_of("def select_batch(view, W) return []").kind == "load"
    assert (
        failure_of("def plan(view, W):\n    return []\n").reason
        == "the program defines no select_batch(view, W)"
    )
    assert failure_of("def select_batch(view, W):\n    return 'r'\n").kind == "bad_output"


def test_a_valid_written_policy_scores_exactly_like_the_same_builtin():
    trees = [worked_tree(), worked_tree()]
    with SandboxedPolicy(PolicyProgram(GREEDY, name="greedy_deepest_best"), limits=FAST) as pol:
        written = score_policy(trees, pol, 2, 0.05, 0.1)
        assert pol.calls == 2 + written.per_tree[0]["k"] + written.per_tree[1]["k"]  # 1 per round + grids
    built = score_policy(trees, GreedyDeepestBest(), 2, 0.05, 0.1)
    assert written == built


def test_dream_with_the_policy_writer_records_failures_and_keeps_pi0():
    model = ScriptedPolicyModel(
        [f"```python\n{UNREVEALED}```", f"```python\n{LOOPS}```", ILLEGAL, f"Here:\n```python{GREEDY}```"]
    )
    writer = PolicyWriter(model)
    p0 = PortfolioParams()
    res = dream(
        p0,
        [worked_tree()],
        W=2,
        beta1=0.05,
        beta2=0.1,
        M=5,
        rng=random.Random(0),
        proposer=writer,
        limits=FAST,
    )
    assert res.candidates[0] is p0 and len(res.candidates) == 5 and res.failures[0] is None
    kinds = [f.kind if f else None for f in res.failures]
    assert kinds == [None, "unrevealed_node", "timeout", "illegal_batch", None]
    assert all(res.V[i] is None for i in (1, 2, 3)) and res.chosen in (0, 4)
    assert res.V[res.chosen] >= res.V[0]  # non-regression on the replay objective
    assert res.V[4] == score_policy([worked_tree()], GreedyDeepestBest(), 2, 0.05, 0.1).V
    prompt = model.prompts[0]
    assert "def select_batch" in prompt and "revealed 5 of 5 nodes" in prompt and "0.05" in prompt
    assert writer.calls == [{"prompt_tokens": 100, "completion_tokens": 200, "n": 4}]
    # a written policy deployed as π0: the mutation proposer has no parameters to step
    assert ParamMutationProposer().propose((res.candidates[4], []), 3, random.Random(0)) == []


def test_failed_candidates_never_displace_pi0_and_context_unpacks_as_a_pair():
    res = dream(
        PortfolioParams(),
        [worked_tree()],
        W=2,
        beta1=0.0,
        beta2=0.0,
        M=3,
        rng=random.Random(0),
        proposer=PolicyWriter(ScriptedPolicyModel([RAISES, "not python at all"])),
        limits=FAST,
    )
    assert res.chosen == 0 and [f.kind if f else None for f in res.failures] == [None, "raised", "load"]
    ctx = DreamContext(PortfolioParams(), [worked_tree()], res.scores[0], W=2, beta1=0.0, beta2=0.0)
    current, history = ctx
    assert current == PortfolioParams() and len(history) == 1
    assert "revealed" in record_lines(ctx) and extract_program("x = 1") == "x = 1\n"


def test_a_policy_time_budget_counts_only_the_calls():
    slow = "import time\n\ndef select_batch(view, W):\n    time.sleep(0.2)\n    return ['r']\n"
    f = failure_of_with(slow, policy_time_s=0.3)
    assert f.kind == "timeout" and "policy time" in f.reason and f.round in (1, 2)


def failure_of_with(source: str, **kw) -> PolicyFailure:
    with SandboxedPolicy(PolicyProgram(source), limits=FAST, **kw) as pol:
        with pytest.raises(PolicyFailure) as err:
            score_policy([worked_tree()], pol, 2, 0.05, 0.1)
    return err.value


def test_guarded_policy_finishes_a_tree_with_the_fallback_after_a_failure():
    seen = []
    with SandboxedPolicy(PolicyProgram(ILLEGAL), limits=FAST) as pol:
        guarded = GuardedPolicy(pol, GreedyDeepestBest(), seen.append)
        s = score_policy([worked_tree()], guarded, 2, 0.05, 0.1)
    assert s.V is not None and len(seen) == 1 and seen[0].kind == "illegal_batch"


def test_an_in_process_policy_with_an_illegal_batch_is_a_failed_candidate_too():
    class TooWide:
        """Test double: an in-process policy that asks for more than W nodes."""

        name = "too_wide"

        def plan_grid(self, history):
            return (None, None)

        def select_batch(self, view, W):
            return ["r"] * (W + 1)

    class Offers:
        """Test double proposer: offers one built policy object."""

        def propose(self, context, k, rng):
            return [TooWide()]

    res = dream(
        PortfolioParams(),
        [worked_tree()],
        W=2,
        beta1=0,
        beta2=0,
        M=2,
        rng=random.Random(0),
        proposer=Offers(),
    )
    assert (
        res.chosen == 0
        and res.failures[1].kind == "illegal_batch"
        and "exceeds W=2" in res.failures[1].reason
    )
