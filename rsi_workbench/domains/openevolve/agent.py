"""The program-writing discovery agent on an OpenEvolve task directory: the model rewrites the
evolve block only.

The prompt (``prompts/openevolve_agent.txt``) shows the program with its evolve block left out (the
context the block lives in, at most ``program_chars`` characters), the parent's evolve block with its
score or failure, the siblings and the bounded history slice of :mod:`.program_agent`, and the
statement: the initial program's and the evaluator's docstrings. The answer's first code block (a
block that repeats the marker lines is cut to what lies between them; a block cut short by
``max_tokens`` is trimmed to its longest prefix of whole lines after which the program parses)
replaces the parent's block; the text around it is kept byte for byte. An answer with no such block
is an ``exception`` node (``move = "no_program"``) holding the raw answer; otherwise the child is
evaluated in the sandbox (:meth:`~rsi_workbench.domains.openevolve.OpenEvolveTask.evaluate_program`).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

from rsi_workbench.domains.math import AttemptResult
from rsi_workbench.domains.math.program_agent import (
    AttemptView,
    ProgramAgent,
    history_text,
    node_line,
    siblings_text,
)
from rsi_workbench.domains.math.programs import ProgramSpec
from rsi_workbench.domains.openevolve import END, START, EvolveBlock, OpenEvolveTask, OpenEvolveTaskError
from rsi_workbench.models.prompts import PromptTemplate, load_prompt
from rsi_workbench.replay.tree import ROOT

_FENCE = re.compile(r"```[a-zA-Z0-9_+-]*[ \t]*\n(.*?)(?:```|\Z)", re.DOTALL)
HOLE = "# ... the evolve block ...\n"


#: the name runs record the prompt under (its ``prompt_version`` event), kept from its first home
PROMPT_NAME = "rsi_workbench.experiments.dreaming:openevolve_agent"


def openevolve_prompt_template() -> PromptTemplate:
    """The OpenEvolve agent's prompt (``domains/openevolve/prompts/openevolve_agent.txt``)."""
    return PromptTemplate(
        PROMPT_NAME, load_prompt("rsi_workbench.domains.openevolve", "openevolve_agent").text
    )


def _docstring(text: str) -> str:
    try:
        return (ast.get_docstring(ast.parse(text)) or "").strip()
    except SyntaxError:
        return ""


def task_statement(task: OpenEvolveTask, limit: int = 800) -> str:
    """What the prompt says the task is: the initial program's and the evaluator's docstrings."""
    parts = [_docstring(task.seed_program), _docstring((task.root / "evaluator.py").read_text())]
    text = "\n".join(p for p in parts if p) or f"the OpenEvolve task {task.root.name}"
    return text[:limit]


def block_of_answer(answer: str) -> str | None:
    """The new evolve block in a model answer: its first code block (cut to the lines between the
    markers when it repeats them); None when the answer holds no code block."""
    m = _FENCE.search(answer)
    if m is None:
        return None
    code = m.group(1)
    lines = code.splitlines(keepends=True)
    s = next((i for i, v in enumerate(lines) if v.strip().startswith(START)), None)
    if s is not None:
        e = next((i for i in range(s + 1, len(lines)) if lines[i].strip().startswith(END)), len(lines))
        lines = lines[s + 1 : e]
    else:
        lines = [v for v in lines if not v.strip().startswith(END)]
    block = "".join(lines).strip("\n")
    return block + "\n" if block.strip() else None


def parseable_child(parent: EvolveBlock, block: str) -> str | None:
    """The parent with its block replaced by ``block``, or by its longest prefix of whole lines after
    which the program parses (an answer cut short by ``max_tokens``); None when none does."""
    lines = block.splitlines(keepends=True)
    for n in range(len(lines), 0, -1):
        part = "".join(lines[:n])
        if not part.strip():
            break
        program = parent.with_block(part)
        try:
            ast.parse(program)
        except SyntaxError:
            continue
        return program
    return None


@dataclass
class OpenEvolveAgent(ProgramAgent):
    """:class:`ProgramAgent` on an :class:`OpenEvolveTask`: the same batched calls and meta, the
    evolve-block prompt, and the sandboxed evaluator instead of the math tasks' program runner."""

    task: OpenEvolveTask  # type: ignore[assignment]
    template: PromptTemplate = field(default_factory=openevolve_prompt_template)

    def __post_init__(self) -> None:
        self.spec = ProgramSpec(
            entry="", statement=task_statement(self.task), seed_program=self.task.seed_program
        )

    def prompt(self, view: AttemptView, parent: str, parent_program: str, hint: str = "") -> str:
        """The rendered prompt for a child of ``parent``: the program around the block and the parent's block."""
        pnode = None if parent == ROOT else next(v for v in view.nodes if v.id == parent)
        blk = self.task.split(str(parent_program))
        return self.template.render(
            statement=self.spec.statement,
            context=(blk.prefix + HOLE + blk.suffix)[: self.program_chars].rstrip(),
            parent_line=view.root_line if pnode is None else node_line(pnode),
            parent_block=blk.block[: self.program_chars].rstrip(),
            siblings=siblings_text(view, parent, self.siblings_k),
            history=history_text(view, self.history_k),
            hint=hint,
        )

    def run_child(self, answer: str, parent_program: str) -> AttemptResult:
        """Splice the answer's block into the parent and evaluate it (or a ``no_program`` failure)."""
        block = block_of_answer(answer)
        program = None
        if block is not None:
            program = parseable_child(self.task.split(parent_program), block)
        if program is None:
            return AttemptResult(
                state=answer,
                evaluation=None,
                error="no program: the answer holds no code block that parses as the evolve block",
                fail_class="exception",
                move="no_program",
            )
        return self.task.evaluate_program(program, move="program")

    def attempt_batch(self, jobs, seed):  # type: ignore[no-untyped-def]
        """As :meth:`ProgramAgent.attempt_batch`, the child being the parent with its block replaced."""
        prompts = [self.prompt(v, p, prog, hint) for v, p, prog, hint in jobs]
        answers = self.write(prompts, seed)
        return [
            (self.run_child(ans.text, prog), self._meta(prompt, ans))
            for (_, _, prog, _), prompt, ans in zip(jobs, prompts, answers)
        ]


__all__ = [
    "OpenEvolveAgent",
    "OpenEvolveTaskError",
    "block_of_answer",
    "openevolve_prompt_template",
    "task_statement",
]
