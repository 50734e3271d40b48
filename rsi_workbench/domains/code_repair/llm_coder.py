"""``LLMCoder``: repairs proposed by a language model (any ``agents.LLM``), and ``HybridCoder``.

The prompt (``prompts/llm_coder_repair.txt``, package data) holds the task's specification, the
kept program, the **public**-test feedback of the last round (status and message of each failing
public test; a hidden test never reaches the prompt, asserted) and this task's earlier executed
attempts. Samples are drawn until the round has ``k`` distinct valid candidates or ``sample_cap``
samples (default ``2k``) were drawn. Each answer is parsed from a fenced code block or a full
function, spliced into the kept program (imports and helpers kept), normalised (AST without
docstrings) and deduplicated against the round's pool, the kept program and earlier rounds.

A sample that does not parse, lacks the entry point, changes its signature or repeats a candidate is
returned as an **invalid candidate** (``meta["invalid"]`` = the reason): it does not count toward
``k``, the verifier rejects it and selection removes it before ranking (eq. 7), and the proposal
event records it with its reason. Every candidate keeps its sample's raw answer and the prompt's
sha256 (the prompt text is an artifact of ``prompt_run`` when one is given).
"""

from __future__ import annotations

import ast
import hashlib
import random
from dataclasses import dataclass, field
from typing import Any

from rsi_workbench.agents import Candidate
from rsi_workbench.domains.code_repair.coder import MutationCoder, RepairFeedback, unified_diff
from rsi_workbench.domains.code_repair.sandbox import Status
from rsi_workbench.models.code_blocks import extract_code
from rsi_workbench.models.code_blocks import parses as _parses
from rsi_workbench.models.prompts import PromptTemplate, load_prompt

INVALID = "invalid"  # the candidate meta key that marks an invalid candidate; its value is the reason


def repair_prompt_template() -> PromptTemplate:
    """The repair prompt template shipped with the domain (``prompts/llm_coder_repair.txt``)."""
    return load_prompt("rsi_workbench.domains.code_repair", "llm_coder_repair")


# ------------------------------------------------------------------------------ parsing an answer
def _top_defs(tree: ast.Module) -> dict[str, ast.stmt]:
    return {
        n.name: n for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
    }


def _start(node: ast.stmt) -> int:
    decos = getattr(node, "decorator_list", [])
    return min([node.lineno] + [d.lineno for d in decos])


def signature_of(fn: ast.stmt) -> str:
    """Parameter names, kinds and defaults of a function (annotations ignored), and async-ness."""
    assert isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef)
    a = fn.args
    parts = [
        type(fn).__name__,
        [p.arg for p in a.posonlyargs],
        [p.arg for p in a.args],
        a.vararg.arg if a.vararg else None,
        [p.arg for p in a.kwonlyargs],
        a.kwarg.arg if a.kwarg else None,
        [ast.dump(d) for d in a.defaults],
        [ast.dump(d) if d is not None else None for d in a.kw_defaults],
    ]
    return repr(parts)


def splice(kept: str, answer: str) -> str:
    """The kept program with the answer's top-level functions and classes replacing those of the
    same name (new ones inserted before the first replaced one) and its new imports added on top;
    other top-level statements of the answer (example calls, prints) are dropped."""
    kt, at = ast.parse(kept), ast.parse(answer)
    alines, klines = answer.split("\n"), kept.split("\n")
    adefs, kdefs = _top_defs(at), _top_defs(kt)
    seg = {n: "\n".join(alines[_start(d) - 1 : d.end_lineno]) for n, d in adefs.items()}
    replaced = sorted((_start(kdefs[n]), kdefs[n].end_lineno or 0, n) for n in adefs if n in kdefs)
    new = [seg[n] for n in adefs if n not in kdefs]
    out = list(klines)
    for i, (s, e, n) in enumerate(reversed(replaced)):
        text = seg[n] if i < len(replaced) - 1 or not new else "\n\n".join([*new, seg[n]])
        out[s - 1 : e] = text.split("\n")
    if not replaced and new:
        out += ["", "", *"\n\n".join(new).split("\n")]
    have = {ast.dump(n) for n in kt.body if isinstance(n, ast.Import | ast.ImportFrom)}
    imports = [
        "\n".join(alines[n.lineno - 1 : n.end_lineno])
        for n in at.body
        if isinstance(n, ast.Import | ast.ImportFrom) and ast.dump(n) not in have
    ]
    text = "\n".join(out)
    if imports:
        text = "\n".join(imports) + "\n" + text
    return text if text.endswith("\n") else text + "\n"


class _StripDocstrings(ast.NodeTransformer):
    def _strip(self, node: Any) -> Any:
        self.generic_visit(node)
        body = node.body
        first = body[0] if body else None
        if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
            if isinstance(first.value.value, str):
                node.body = body[1:] or [ast.Pass()]
        return node

    visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = visit_Module = _strip


def normalise(program: str) -> str | None:
    """The program's AST without docstrings, comments or formatting (the dedupe key); None if it
    does not parse."""
    tree = _parses(program)
    return None if tree is None else ast.dump(_StripDocstrings().visit(tree))


def check_answer(text: str, task: Any, kept: str) -> tuple[str | None, str]:
    """``(program, "")`` for an answer that parses and keeps the entry point's signature, else
    ``(program or None, reason)``: ``unparseable``, ``missing entry point``, ``changed signature``."""
    code = extract_code(text, task.entry_point)
    if code is None:
        return None, "unparseable: no code block or function that parses"
    fn = _top_defs(ast.parse(code)).get(task.entry_point)
    if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
        return code, f"missing entry point: no top-level function {task.entry_point!r}"
    kept_fn = _top_defs(ast.parse(kept)).get(task.entry_point)
    if kept_fn is not None and signature_of(kept_fn) != signature_of(fn):
        return code, f"changed signature of {task.entry_point!r}"
    try:
        program = splice(kept, code)
        compile(program, "candidate.py", "exec")
    except (SyntaxError, ValueError) as e:
        return code, f"unparseable after splicing into the kept program: {e}"
    return program, ""


# ------------------------------------------------------------------------------ the prompt
def _render_test(test: Any, entry_point: str) -> str:
    if getattr(test, "kind", None) == "io":
        args = ", ".join(repr(a) for a in (test.args or []))
        return f"{entry_point}({args}) == {test.expected!r}"
    return str(getattr(test, "code", "") or "").strip()


def feedback_text(task: Any, feedback: Any) -> str:
    """Status and message of each failing **public** test (asserted: an outcome naming any test
    that is not one of the task's public tests is an error, so hidden tests never reach a prompt)."""
    if not isinstance(feedback, RepairFeedback):
        return "No test results yet."
    public = {t.id: t for t in task.public_tests}
    unknown = [o.test_id for o in feedback.outcomes if o.test_id not in public]
    assert not unknown, f"feedback names tests that are not public: {unknown}"
    failing = [o for o in feedback.outcomes if o.status != Status.AC]
    if not failing:
        return "All public tests pass on the current program."
    lines = [f"Public tests that fail on the current program ({len(failing)} of {len(feedback.outcomes)}):"]
    for o in failing:
        msg = " ".join(o.message.split())[:200]
        lines.append(f"- {_render_test(public[o.test_id], task.entry_point)}  -> {o.status.value}: {msg}")
    return "\n".join(lines)


def attempts_text(program: str, feedback: Any, last: int = 2) -> str:
    """This task's last executed attempts as diffs against the kept program, with public results."""
    attempts = getattr(feedback, "attempts", ()) if isinstance(feedback, RepairFeedback) else ()
    if not attempts:
        return ""
    lines = ["Earlier attempts on this task:"]
    for prog, passed, n in attempts[-last:]:
        diff = unified_diff(program, prog)[:600] or "(the current program itself)"
        lines.append(f"- passed {passed}/{n} public tests:\n```diff\n{diff.rstrip()}\n```")
    return "\n".join(lines) + "\n"


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


# ------------------------------------------------------------------------------ the coders
@dataclass
class LLMCoder:
    """A language model as the repair ``Coder`` (``agents.Coder``); invalid samples come back as
    invalid candidates (``meta["invalid"]``), valid ones up to ``k``.

    ``batched``: one chat call asks for all still-missing samples at once (``n`` > 1); otherwise one
    call per sample (the benchmark compares both). ``prompt_run``: a run whose artifacts hold each
    distinct prompt text (so a viewer opens it from a candidate's ``prompt_sha256``).
    """

    llm: Any
    temperature: float = 0.8
    top_p: float = 0.95
    max_tokens: int = 256
    sample_cap: int | None = None
    batched: bool = True
    stop: tuple[str, ...] = ("\n```\n",)  # the closing fence: the explanation after the code is not paid for
    template: PromptTemplate = field(default_factory=repair_prompt_template)
    prompt_run: Any = None
    _earlier: dict[str, set[str]] = field(default_factory=dict, repr=False)
    _memo: dict[str, list[Candidate]] = field(default_factory=dict, repr=False)
    _stored: set[str] = field(default_factory=set, repr=False)

    name = "llm"

    def prompt(self, task: Any, program: str, feedback: Any) -> str:
        """The rendered repair prompt (spec, kept program, public feedback, earlier attempts)."""
        return self.template.render(
            spec=(task.prompt or "").strip() or "(no specification given)",
            program=program.rstrip(),
            feedback=feedback_text(task, feedback),
            attempts=attempts_text(program, feedback),
            entry_point=task.entry_point,
        )

    def propose(self, task: Any, program: str, feedback: Any, k: int, rng: random.Random) -> list[Candidate]:
        """Samples until ``k`` distinct valid candidates or ``sample_cap`` (default ``2k``) samples;
        returns the valid ones and, marked, every invalid one. The same (task, program, feedback,
        k, seed) answers from memory, so a gate re-proposing a state asks the model nothing new."""
        if k < 1:
            raise ValueError("k must be >= 1")
        cap = self.sample_cap or 2 * k
        prompt = self.prompt(task, program, feedback)
        base = rng.randrange(2**31)
        memo = _sha(f"{task.task_id}\0{program}\0{prompt}\0{k}\0{cap}\0{base}")
        if memo in self._memo:
            return list(self._memo[memo])
        psha = self._store_prompt(prompt)
        use_prompt = getattr(self.llm, "use_prompt", None)
        if use_prompt is not None:
            use_prompt(self.template)
        earlier = self._earlier.setdefault(str(task.task_id), set())
        seen = set(earlier) | {key for key in [normalise(program)] if key is not None}
        for prog, _, _ in getattr(feedback, "attempts", ()) if isinstance(feedback, RepairFeedback) else ():
            key = normalise(prog)
            if key is not None:
                seen.add(key)
        out: list[Candidate] = []
        valid = drawn = calls = 0
        while valid < k and drawn < cap:
            n = min(k - valid, cap - drawn) if self.batched else 1
            seed = (base + calls) % 2**31
            res = self.llm.chat(
                [{"role": "user", "content": prompt}],
                n=n,
                temperature=self.temperature,
                top_p=self.top_p,
                max_tokens=self.max_tokens,
                stop=list(self.stop) or None,
                seed=seed,
            )
            for j, text in enumerate(res.texts):
                fin = res.finish_reasons[j] if j < len(res.finish_reasons) else ""
                meta = {
                    "coder": "llm",
                    "sample": drawn + j,
                    "call": calls,
                    "seed": seed,
                    "prompt_sha256": psha,
                    "raw": text,
                    "finish_reason": fin,
                }
                cand = self._candidate(task, program, text, seen, meta)
                if INVALID not in cand.meta:
                    valid += 1
                out.append(cand)
            drawn += len(res.texts) or n
            calls += 1
        earlier.update(seen)
        self._memo[memo] = list(out)
        return out

    def _candidate(
        self, task: Any, program: str, text: str, seen: set[str], meta: dict[str, Any]
    ) -> Candidate:
        new, reason = check_answer(text, task, program)
        if not reason:
            key = normalise(new or "")
            if key is None:
                reason = "unparseable after normalising"
            elif key in seen:
                reason = "duplicate of the kept program, an earlier candidate or an earlier attempt"
            else:
                seen.add(key)
        prog = new or ""
        diff = unified_diff(program, prog) if prog else ""
        if reason:
            return Candidate(prog, diff, {**meta, INVALID: reason})
        return Candidate(prog, diff, {**meta, "program_sha": _sha(prog)[:16]})

    def _store_prompt(self, prompt: str) -> str:
        sha = _sha(prompt)
        run = self.prompt_run
        if run is not None and sha not in self._stored:
            run.artifacts.put(prompt.encode(), name="llm-coder-prompt", media_type="text/plain")
            self._stored.add(sha)
        return sha


def is_invalid(candidate: Candidate) -> str | None:
    """The reason an LLM sample is an invalid candidate, or None for a valid candidate."""
    reason = candidate.meta.get(INVALID)
    return str(reason) if reason else None


@dataclass
class HybridCoder:
    """``k`` from the language model first, then distinct mutants (``MutationCoder``) to fill ``k``;
    the model's invalid samples are kept (marked) like ``LLMCoder``'s."""

    llm: LLMCoder
    mutation: MutationCoder
    name = "hybrid"

    def propose(self, task: Any, program: str, feedback: Any, k: int, rng: random.Random) -> list[Candidate]:
        out = self.llm.propose(task, program, feedback, k, rng)
        valid = [c for c in out if is_invalid(c) is None]
        need = k - len(valid)
        if need <= 0:
            return out
        keys = {normalise(c.program) for c in valid}
        fill: list[Candidate] = []
        for c in self.mutation.propose(task, program, feedback, k, rng):
            key = normalise(c.program)
            if key not in keys and len(fill) < need:
                keys.add(key)
                fill.append(Candidate(c.program, c.diff, {**c.meta, "coder": "mutation"}))
        return out + fill
