"""The program-writing discovery agent (Dream-RSI appendix B.1) for the math tasks.

A node's payload is a Python program (``construct_packing()`` / ``construct_heights()``, see
:mod:`rsi_workbench.domains.math.programs`). For one attempt the agent is shown, in the prompt
``prompts/program_agent.txt``:

- the **parent**: its full program (at most ``program_chars`` characters; ``r`` shows the tree's
  root program), its score, validity and error or invalidity reason;
- its **siblings**: up to ``siblings_k`` other revealed children of the same parent (latest first),
  one line each — score / invalid reason / failure class and error — **no code**;
- a **bounded history slice**: counts over every attempt this arm made so far (all its trees,
  this one's revealed prefix), the best valid score and its node, and the ``history_k`` latest
  failures (class and first line of the error) — **no other program text**;
- in the text-hint arm only, a text summary of the earlier trees (:func:`history_hint`).

The paper asks the agent to read every sibling and the whole history and never counts the context
cost; here the slice is fixed and each call's prompt tokens are recorded (node meta
``prompt_tokens``; the ``model_call`` event) so the cost is visible. The answer's first code block
is the child program; it runs only in the sandbox and is scored by the exact evaluator
(:func:`~rsi_workbench.domains.math.programs.run_program`). An answer with no code that parses is
an ``exception`` node (``move = "no_program"``) whose payload is the raw answer.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import Field

from rsi_workbench.config import StrictModel
from rsi_workbench.domains.math import AttemptResult, DiscoveryTask
from rsi_workbench.domains.math.programs import ProgramSpec, program_spec, run_program
from rsi_workbench.models.code_blocks import extract_code
from rsi_workbench.models.prompts import PromptTemplate, load_prompt
from rsi_workbench.replay.tree import ROOT, DiscoveryTree, Node

FAILED = ("timeout", "exception", "optimizer_failure", "error", "failed")


#: the name runs record the prompt under (its ``prompt_version`` event), kept from its first home
PROMPT_NAME = "rsi_workbench.experiments.dreaming:program_agent"


def program_prompt_template() -> PromptTemplate:
    """The discovery agent's prompt (``domains/math/prompts/program_agent.txt``)."""
    return PromptTemplate(PROMPT_NAME, load_prompt("rsi_workbench.domains.math", "program_agent").text)


class ProgramAgentSettings(StrictModel):
    """What the program-writing agent reads: sampling, the sandbox clock and the prompt slice."""

    max_tokens: int = Field(default=384, ge=16, le=4096)
    temperature: float = Field(default=0.8, ge=0)
    top_p: float = Field(default=0.95, gt=0, le=1)
    program_wall_s: float = Field(default=30.0, gt=0, description="sandbox wall clock per program")
    siblings_k: int = Field(default=4, ge=0, le=32)
    history_k: int = Field(default=3, ge=0, le=32)
    program_chars: int = Field(default=2500, ge=200)


def _first_line(text: str, limit: int = 160) -> str:
    line = next((s.strip() for s in str(text).splitlines() if s.strip()), "")
    return line[:limit]


def node_line(node: Node | None) -> str:
    """One line about an attempt: its score and validity, or why it is invalid or failed."""
    if node is None:
        return "the root program"
    if node.valid and node.score is not None:
        return f"score {node.score:.6f}, valid"
    if node.fail_class == "invalid":
        reason = node.meta.get("reason") or "rejected by the evaluator"
        return f"invalid: {_first_line(reason)}"
    return f"failed ({node.fail_class}): {_first_line(node.error) or 'no detail'}"


@dataclass(frozen=True)
class AttemptView:
    """The context of one attempt: the revealed prefix of the current tree and this arm's earlier trees."""

    nodes: Sequence[Node]  # the current tree's revealed nodes, in creation order
    earlier: Sequence[DiscoveryTree]  # this arm's earlier recorded trees
    tree_index: int = 0
    root_line: str = "the root program"  # what the prompt says about the tree's root program


def siblings_text(view: AttemptView, parent: str, k: int) -> str:
    """Up to ``k`` revealed children of ``parent`` (latest first), one line each, no code."""
    kids = [v for v in view.nodes if v.parent == parent][::-1][:k]
    if not kids:
        return "none yet."
    return "\n" + "\n".join(f"- {v.id}: {node_line(v)}" for v in kids)


def history_text(view: AttemptView, k: int) -> str:
    """Counts over every attempt so far, the best valid score and the ``k`` latest failures."""
    allnodes = [v for t in view.earlier for v in t] + list(view.nodes)
    if not allnodes:
        return "no attempts yet."
    valid = [v for v in allnodes if v.valid and v.score is not None and math.isfinite(v.score)]
    invalid = sum(v.fail_class == "invalid" for v in allnodes)
    failed = [v for v in allnodes if v.fail_class in FAILED]
    parts = [f"{len(allnodes)} attempts: {len(valid)} valid, {invalid} invalid, {len(failed)} failed."]
    if valid:
        best = max(valid, key=lambda v: v.score)  # type: ignore[arg-type, return-value]
        parts.append(f"Best valid score {best.score:.6f} ({best.id}).")
    if failed and k:
        parts.append("Latest failures:")
        parts += [f"- {v.id} {v.fail_class}: {_first_line(v.error)}" for v in failed[-k:]]
    return "\n".join(parts)


def history_hint(trees: Sequence[DiscoveryTree], *, last: int = 5) -> str:
    """The text-hint arm's summary of the earlier trees (at most ``last``): per tree its attempts,
    best score, depth of the best node, failure counts, and one derived direction."""
    if not trees:
        return ""
    lines = ["Summary of earlier rounds (text hint):"]
    for t in trees[-last:]:
        nodes = list(t)
        failed = sum(v.fail_class in FAILED for v in nodes)
        invalid = sum(v.fail_class == "invalid" for v in nodes)
        best = t.best()
        where = f"at depth {t.depth(best.id)}" if best is not None else "none valid"
        score = "n/a" if best is None else f"{best.score:.6f}"
        lines.append(
            f"- {t.name}: {len(nodes)} attempts, best {score} {where}, {invalid} invalid, {failed} failed"
        )
    last_tree = trees[-1]
    nodes = list(last_tree)
    fails = sum(v.fail_class in FAILED for v in nodes) / max(1, len(nodes))
    best = last_tree.best()
    if fails > 0.5:
        lines.append(
            "Direction: most programs failed; write simpler programs that run quickly and return valid data."
        )
    elif best is not None and last_tree.depth(best.id) >= 2:
        lines.append("Direction: refining good programs helped; make small changes to the best program.")
    else:
        lines.append("Direction: refinements did not help; try a different construction.")
    return "\n".join(lines) + "\n"


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass
class ProgramAgent:
    """The language model writes the child program; the sandbox runs it; the exact evaluator scores it.

    ``attempt_batch`` asks for one program per parent in **one** batched model call (a round's W
    attempts, possibly of several arms and seeds: their prompts differ), then runs each program.
    """

    llm: Any
    task: DiscoveryTask
    max_tokens: int = 384
    temperature: float = 0.8
    top_p: float = 0.95
    wall_s: float = 30.0
    siblings_k: int = 4
    history_k: int = 3
    program_chars: int = 2500
    template: PromptTemplate = field(default_factory=program_prompt_template)
    spec: ProgramSpec = field(init=False)

    def __post_init__(self) -> None:
        self.spec = program_spec(self.task)

    @classmethod
    def from_settings(cls, llm: Any, task: Any, s: ProgramAgentSettings) -> ProgramAgent:
        """The agent on ``llm`` and ``task`` with a settings block's sampling, clock and slice."""
        return cls(
            llm,
            task,
            max_tokens=s.max_tokens,
            temperature=s.temperature,
            top_p=s.top_p,
            wall_s=s.program_wall_s,
            siblings_k=s.siblings_k,
            history_k=s.history_k,
            program_chars=s.program_chars,
        )

    def prompt(self, view: AttemptView, parent: str, parent_program: str, hint: str = "") -> str:
        """The rendered prompt for a child of ``parent`` (see the module docstring for what it holds)."""
        pnode = None if parent == ROOT else next(v for v in view.nodes if v.id == parent)
        return self.template.render(
            statement=self.spec.statement,
            parent_line=view.root_line if pnode is None else node_line(pnode),
            parent_program=str(parent_program)[: self.program_chars].rstrip(),
            siblings=siblings_text(view, parent, self.siblings_k),
            history=history_text(view, self.history_k),
            hint=hint,
            entry=self.spec.entry,
        )

    def write(self, prompts: Sequence[str], seed: int) -> list[Any]:
        """One batched chat call: a :class:`~rsi_workbench.models.ChatResult` per prompt."""
        use_prompt = getattr(self.llm, "use_prompt", None)
        if use_prompt is not None:
            use_prompt(self.template)
        convs = [[{"role": "user", "content": p}] for p in prompts]
        return list(
            self.llm.chat_batch(
                convs,
                n=1,
                temperature=self.temperature,
                top_p=self.top_p,
                max_tokens=self.max_tokens,
                stop=["\n```\n"],
                seed=seed,
            )
        )

    def run(self, answer: str) -> AttemptResult:
        """Extract the program from a model answer and run it in the sandbox (or a ``no_program`` failure)."""
        code = extract_code(answer, self.spec.entry)
        if code is None:
            return AttemptResult(
                state=answer,
                evaluation=None,
                error="no program: the answer holds no code block or function that parses",
                fail_class="exception",
                move="no_program",
            )
        return run_program(self.task, code, wall_s=self.wall_s)

    def attempt_batch(
        self, jobs: Sequence[tuple[AttemptView, str, str, str]], seed: int
    ) -> list[tuple[AttemptResult, dict[str, Any]]]:
        """``jobs``: (view, parent id, parent program, hint) per attempt. Returns each attempt's
        result and its agent meta (prompt and completion tokens, finish reason, prompt sha256)."""
        prompts = [self.prompt(v, p, prog, hint) for v, p, prog, hint in jobs]
        answers = self.write(prompts, seed)
        return [(self.run(ans.text), self._meta(prompt, ans)) for prompt, ans in zip(prompts, answers)]

    @staticmethod
    def _meta(prompt: str, ans: Any) -> dict[str, Any]:
        """One call's agent meta: prompt and completion tokens, finish reason, prompt sha256."""
        return {
            "prompt_tokens": int(ans.prompt_tokens),
            "completion_tokens": int(ans.completion_tokens),
            "finish_reason": ans.finish_reasons[0] if ans.finish_reasons else "",
            "prompt_sha256": _sha(prompt),
            "replayed": bool(ans.replayed),
        }
