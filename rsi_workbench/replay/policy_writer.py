"""The policy-development agent (Dream-RSI, appendix B.2): a language model writes exploration-policy code.

:class:`PolicyWriter` is a proposer for :func:`~rsi_workbench.replay.dreaming.dream`: from π0's
source, π0's replay record on the history and the prefix-only rules (the prompt template
``prompts/policy_writer.txt``, package data, versioned into the model's run), it asks the model for
``k`` programs and returns them as :class:`~rsi_workbench.replay.sandboxed.PolicyProgram`\\ s. It
never runs them: ``dream`` replays each in a sandbox session per tree, and a program that fails is a
failed candidate with its reason and round. What the model sees is bounded: π0's source, one line
per replayed tree for the last ``max_trees`` trees (the paper's agent reads everything; here the
cost is fixed and each call's prompt tokens are recorded with the call).
"""

from __future__ import annotations

import random
import re
from typing import Any

from rsi_workbench.models.prompts import PromptTemplate, load_prompt
from rsi_workbench.replay.policies import PortfolioParams, PortfolioPolicy
from rsi_workbench.replay.sandboxed import PolicyProgram

#: shown as the current policy when π0 is the built-in portfolio policy (its rules, as a program)
STARTER_PROGRAM = '''def select_batch(view, W):
    """Exploit the best leaves, keep one slot for a new root, at most one repair."""
    legal = view.legal()
    leaves = [n for n in legal if n != "r"]
    good = [n for n in leaves if view.node(n).valid and view.node(n).score is not None]
    good.sort(key=lambda n: (-view.node(n).score, -view.depth_of(n)))
    broken = [n for n in leaves if view.node(n).error]
    batch = good[: max(0, W - 1)]
    if view.capacity("r") > 0 and len(batch) < W:
        batch.append("r")
    if broken and len(batch) < W:
        batch.append(broken[0])
    for n in good[W - 1 :] + [n for n in leaves if n not in good and n not in broken]:
        if len(batch) >= W:
            break
        if n not in batch:
            batch.append(n)
    return batch


def plan_grid(history):
    return (4, 12)
'''

_FENCE = re.compile(r"```(?:python|py)?[ \t]*\n(.*?)(?:```|\Z)", re.S)


def policy_writer_template() -> PromptTemplate:
    return load_prompt("rsi_workbench.replay", "policy_writer")


def extract_program(text: str) -> str:
    """The program in a model answer: the first fenced block that defines ``select_batch`` (else the
    first fenced block, else the whole answer). Nothing is checked here: the sandbox judges it."""
    blocks = [b.strip("\n") for b in _FENCE.findall(text)]
    for b in blocks:
        if "def select_batch" in b:
            return b + "\n"
    return (blocks[0] if blocks else text.strip("\n")) + "\n"


def current_source(current: Any) -> str:
    """π0 as program text for the prompt: a program's own source, or the starter program with the
    portfolio policy's parameters noted (the parametric family has no source of its own)."""
    if isinstance(current, PolicyProgram):
        return current.source.rstrip("\n")
    if isinstance(current, PortfolioPolicy):
        current = current.params
    note = ""
    if isinstance(current, PortfolioParams):
        keys = ("explore_slots", "recovery", "stall_patience", "hard_fail_streak", "width", "depth")
        note = "# deployed: the built-in portfolio policy (" + ", ".join(
            f"{k}={getattr(current, k)}" for k in keys
        )
        note += "); in program form:\n"
    return (note + STARTER_PROGRAM).rstrip("\n")


def record_lines(context: Any, max_trees: int = 8) -> str:
    """π0's replay record, one line per tree (the last ``max_trees``): grid, nodes revealed of the
    tree's total, rounds, best revealed score against the tree's best, V_i."""
    record = getattr(context, "record", None)
    history = list(getattr(context, "history", []))
    if record is None or not record.per_tree:
        return "(no replay yet)"
    lines = []
    for row in record.per_tree[-max_trees:]:
        i = int(row["tree_index"])
        tree = history[i] if i < len(history) else None
        best = tree.best() if tree is not None else None
        tb = "-" if best is None or best.score is None else f"{best.score:.6g}"
        q = "none valid" if row["quality"] is None else f"{row['quality']:.6g}"
        v = "undefined" if row["V"] is None else f"{row['V']:.6g}"
        total = len(tree) if tree is not None else "?"
        lines.append(
            f"tree {i}: grid ({row['grid_width']}, {row['grid_depth']}), revealed {row['n']} of {total} "
            f"nodes in {row['k']} rounds, best revealed {q} (tree best {tb}), V = {v}"
        )
    mean = "undefined" if record.V is None else f"{record.V:.6g}"
    return "\n".join(lines) + f"\nmean V = {mean}"


class PolicyWriter:
    """A model-backed proposer of policy programs (see the module doc); ``llm`` is any
    :class:`~rsi_workbench.models.LLM` (a :class:`~rsi_workbench.models.RecordedLLM` in experiments).

    One chat call per dreaming step asks for ``k`` samples; ``calls`` logs each call's prompt and
    completion tokens (the context cost the paper does not count).
    """

    def __init__(
        self,
        llm: Any,
        *,
        temperature: float = 0.8,
        max_tokens: int = 400,
        max_trees: int = 8,
        template: PromptTemplate | None = None,
        name: str = "writer",
    ):
        self.llm, self.temperature, self.max_tokens, self.max_trees = llm, temperature, max_tokens, max_trees
        self.template = template or policy_writer_template()
        self.name = name
        self.calls: list[dict[str, Any]] = []

    def prompt(self, context: Any) -> str:
        return self.template.render(
            current=current_source(context[0]),
            record=record_lines(context, self.max_trees),
            W=getattr(context, "W", "?"),
            beta1=f"{getattr(context, 'beta1', 0.0):g}",
            beta2=f"{getattr(context, 'beta2', 0.0):g}",
        )

    def propose(self, context: Any, k: int, rng: random.Random) -> list[PolicyProgram]:
        if k <= 0:
            return []
        use_prompt = getattr(self.llm, "use_prompt", None)
        if use_prompt is not None:
            use_prompt(self.template)
        res = self.llm.chat(
            [{"role": "user", "content": self.prompt(context)}],
            n=k,
            temperature=self.temperature,
            max_tokens=self.max_tokens,
            seed=rng.randrange(2**31),
        )
        self.calls.append(
            {"prompt_tokens": res.prompt_tokens, "completion_tokens": res.completion_tokens, "n": k}
        )
        return [
            PolicyProgram(extract_program(t), name=f"{self.name}{len(self.calls)}.{j}", origin="model")
            for j, t in enumerate(res.texts[:k])
        ]
