"""RSIAgent's roles driven by language models through the model room.

``roles: {actor: {model: {...}, temperature, max_tokens}, verifier: {...}, curriculum: {...}}``: a
role with a block is a model role, a role left out stays built-in. Every call goes through one
:class:`~rsi_workbench.models.RecordedLLM` per role (recorded, replayable, charged); roles naming the
same model share one loaded backend. A model transport or server error (:class:`ModelError`) is an
:class:`~rsi_workbench.memory.InfraFailure`: never a lesson, never PASS/FAIL.

- :class:`LLMActor` acts in a workspace that offers a text interface (``observe() -> str``,
  ``act(answer) -> (Evidence, details)``, ``answer_format``): the prompt holds the instruction, the
  verifier's last feedback, the observation and **a bounded part of memory**: at most
  ``memory_files`` files (ranked by words shared with the instruction, then procedures/, scripts/,
  lessons/, facts/, then path), each cut to ``file_chars``, ``memory_chars`` in all; the attempt's
  private transcript names the files shown. ``distil`` (then ``reconcile``) asks for JSON edits
  ``{"write": {path: text}, "delete": [paths]}``, parsed and validated (:func:`parse_edits`: paths
  through ``check_relpath``, deletes only of existing files, size and count bounds); an UNVERIFIED
  report writes nothing (no evidence to back a lesson).
- :class:`LLMVerifier` sees the requirements, the final state and the execution results only (its
  ``verify`` has no memory and no transcript to see); its answer ``{"verdict", "evidence"}`` is
  parsed by :func:`parse_verdict`: anything unparseable, or a PASS/FAIL without evidence, is
  UNVERIFIED with the reason, never PASS.
- :class:`LLMCurriculum` writes the handoff; the prompt shows the engine's ``HANDOFF_SCHEMA``. The
  first JSON object of the answer (or the raw text) goes to the engine, which validates it; an
  invalid handoff is a failed turn with its reason.

**Schema-constrained decoding.** A role with ``constrained: true`` (the default) decodes its JSON
answers under a JSON Schema wherever its model has the ``json_schema`` capability (transformers with
llguidance; openai servers through ``response_format``; see ``rsi_workbench.models.constrain``): the
handoff under :func:`handoff_decoding_schema` (``HANDOFF_SCHEMA`` tightened: projects only with WAVE,
at least one then, at most ``max_projects``, ids numbered by position so they are unique, bounded
text lengths so an answer fits ``max_tokens``),
the verdict under :func:`verdict_decoding_schema`, memory edits under :func:`edits_decoding_schema`
(free text in each bounded at ~3 characters a token so that the answer fits the role's ``max_tokens``). A model
without the capability (e.g. a test double) gets plain generation. Either way the answer is parsed
and validated exactly as before: decoding constrains the form, the engine still checks ids'
uniqueness, a decision's projects and everything else; an answer cut by ``max_tokens`` is invalid.
``constrained: false`` is plain generation, for comparison.

**Branches in flight together.** With ``max_parallel`` > 1 a wave's branches run in threads, so
their actors' (and a model verifier's) requests are in flight together; each branch's appends are
held and written in branch order, so a model actor's records equal those of ``max_parallel: 1``.
A model verifier is one object whose seed is a call counter shared by the branches: under
``max_parallel`` > 1 which verification gets which seed follows thread timing (docs/concurrency.md).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import Field

from rsi_workbench.config import StrictModel
from rsi_workbench.memory import (
    Attempt,
    CurriculumRequest,
    Evidence,
    InfraFailure,
    MemoryPathError,
    MemoryTree,
    Project,
    VerifierReport,
    check_relpath,
)
from rsi_workbench.models import ModelConfig, ModelError
from rsi_workbench.models.prompts import PromptTemplate, load_prompt

PACKAGE = "rsi_workbench.memory"
_FOLDER_RANK = {"procedures": 0, "scripts": 1, "lessons": 2, "facts": 3}
_WORD = re.compile(r"[a-z0-9]{3,}")


class RoleModel(StrictModel):
    """One role's language model and how it samples."""

    model: ModelConfig
    temperature: float = Field(default=0.0, ge=0.0, description="0: greedy")
    max_tokens: int = Field(default=384, ge=1, le=32768, description="tokens per answer")
    constrained: bool = Field(
        default=True,
        description="decode JSON answers under their schema where the model can (json_schema capability)",
    )


class LLMRoles(StrictModel):
    """Which RSIAgent roles a model drives (a role left out is the built-in one) and the actor's
    memory bound in prompts."""

    actor: RoleModel | None = None
    verifier: RoleModel | None = None
    curriculum: RoleModel | None = None
    memory_files: int = Field(default=8, ge=0, le=200, description="memory files shown in a prompt")
    memory_chars: int = Field(default=4000, ge=0, le=200_000, description="memory characters shown in all")
    file_chars: int = Field(default=800, ge=1, le=50_000, description="characters shown per memory file")

    def active(self) -> dict[str, RoleModel]:
        return {r: m for r in ("actor", "verifier", "curriculum") if (m := getattr(self, r)) is not None}


# ------------------------------------------------------------------------------------- helpers
def _template(name: str) -> PromptTemplate:
    return load_prompt(PACKAGE, name)


def _max_tokens(role: RoleModel | None) -> int:
    return role.max_tokens if role else 384


def constrains(llm: Any, role: RoleModel | None) -> bool:
    """Whether a role's JSON answers are decoded under their schema: ``constrained`` (default true)
    and the model has the ``json_schema`` capability."""
    return (role is None or role.constrained) and "json_schema" in getattr(llm, "capabilities", ())


def ask(
    llm: Any,
    template: PromptTemplate,
    role: RoleModel | None,
    *,
    seed: int = 0,
    json_schema: dict[str, Any] | None = None,
    **values: Any,
) -> str:
    """One chat call on a rendered template, decoded under ``json_schema`` when given and
    :func:`constrains` says so; a model error is an :class:`InfraFailure`."""
    use = getattr(llm, "use_prompt", None)
    if use is not None:
        use(template)
    extra = {"json_schema": json_schema} if json_schema is not None and constrains(llm, role) else {}
    try:
        res = llm.chat(
            [{"role": "user", "content": template.render(**values)}],
            n=1,
            temperature=role.temperature if role else 0.0,
            max_tokens=_max_tokens(role),
            seed=seed,
            **extra,
        )
    except ModelError as e:
        raise InfraFailure(f"model call failed ({template.name}): {e}") from e
    return res.texts[0] if res.texts else ""


CHARS_PER_TOKEN = 3  # conservative, for bounding decoded text so an answer fits max_tokens
SYNTAX_CHARS = 40  # per free-text field: its key, quotes, separators and share of the braces


def _text_bound(max_tokens: int, fields: int, floor: int = 20, cap: int = 400) -> int:
    """Characters per free-text field so that ``fields`` of them (plus the JSON around) fit ``max_tokens``."""
    budget = CHARS_PER_TOKEN * max_tokens - SYNTAX_CHARS * fields
    return max(floor, min(cap, budget // max(1, fields)))


def verdict_decoding_schema(max_tokens: int = 384) -> dict[str, Any]:
    """The verifier's answer as decoded: a verdict and 1-2 evidence lines, each bounded so the answer
    fits ``max_tokens`` (parsed by :func:`parse_verdict` all the same)."""
    return {
        "type": "object",
        "additionalProperties": False,
        "required": ["verdict", "evidence"],
        "properties": {
            "verdict": {"type": "string", "enum": ["PASS", "FAIL", "UNVERIFIED"]},
            "evidence": {
                "type": "array",
                "minItems": 1,
                "maxItems": 2,
                "items": {"type": "string", "minLength": 1, "maxLength": _text_bound(max_tokens, 2)},
            },
        },
    }


VERDICT_SCHEMA = verdict_decoding_schema()


def handoff_decoding_schema(max_projects: int = 3, max_tokens: int = 384) -> dict[str, Any]:
    """``HANDOFF_SCHEMA`` tightened for decoding (every document valid here is valid there): WAVE
    with 1..``max_projects`` projects, SATURATED/STALLED with none, the rationale and instructions
    bounded so the answer fits ``max_tokens``, and the i-th project's id starting ``i-`` (``1-...``,
    ``2-...``) so ids are unique by construction (the engine still checks all of it)."""
    from rsi_workbench.memory.handoff import HANDOFF_SCHEMA

    chars = _text_bound(max_tokens, 1 + max_projects)
    base = HANDOFF_SCHEMA["properties"]["projects"]["items"]

    def project(i: int) -> dict[str, Any]:
        p = json.loads(json.dumps(base))
        p["properties"]["id"]["pattern"] = f"^{i}-[a-z0-9_-]{{1,20}}$"
        p["properties"]["instruction"]["maxLength"] = chars
        return p

    items = {"prefixItems": [project(i) for i in range(1, max_projects + 1)], "items": False}

    def branch(decisions: list[str], projects: dict[str, Any]) -> dict[str, Any]:
        return {
            "type": "object",
            "additionalProperties": False,
            "required": ["decision", "rationale", "projects"],
            "properties": {
                "decision": {"type": "string", "enum": decisions},
                "rationale": {"type": "string", "maxLength": chars},
                "projects": {"type": "array", **projects},
            },
        }

    return {
        "anyOf": [
            branch(["WAVE"], {"minItems": 1, "maxItems": max_projects, **items}),
            branch(["SATURATED", "STALLED"], {"maxItems": 0}),
        ]
    }


def edits_decoding_schema(max_writes: int = 8, max_tokens: int = 384) -> dict[str, Any]:
    """Memory edits as decoded: ``{"write": {path: text}, "delete": [paths]}``, as many writes as fit
    ``max_tokens`` at 200 characters or more each (at most ``max_writes``), each text bounded to fit.
    Path names cannot be bounded (llguidance has no ``propertyNames``): :func:`parse_edits` checks them."""
    writes = max(1, min(max_writes, (CHARS_PER_TOKEN * max_tokens) // 260))
    return {
        "type": "object",
        "additionalProperties": False,
        "required": ["write", "delete"],
        "properties": {
            "write": {
                "type": "object",
                "maxProperties": writes,
                "additionalProperties": {
                    "type": "string",
                    "maxLength": _text_bound(max_tokens, writes, cap=4000),
                },
            },
            "delete": {"type": "array", "maxItems": writes, "items": {"type": "string", "maxLength": 100}},
        },
    }


def extract_json(text: str, *, lists: bool = False) -> Any:
    """The first JSON object in ``text`` (a fenced ```json block first, else any ``{...}``), or None;
    with ``lists`` the first JSON list or object."""
    fenced = re.findall(r"```(?:json)?\s*\n(.*?)```", text, re.S)
    dec = json.JSONDecoder()
    start, kinds = (r"[\[{]", (list, dict)) if lists else (r"\{", (dict,))
    for chunk in [*fenced, text]:
        for m in re.finditer(start, chunk):
            try:
                obj, _ = dec.raw_decode(chunk, m.start())
            except ValueError:
                continue
            if isinstance(obj, kinds):
                return obj
    return None


def select_memory(
    memory: MemoryTree | None, query: str, *, files: int = 8, chars: int = 4000, file_chars: int = 800
) -> tuple[str, list[str], str]:
    """The bounded memory view of a prompt: ``(text, paths shown, note)`` (module doc for the rule)."""
    if memory is None:
        return "(no access)", [], "no access"
    words = set(_WORD.findall(query.lower()))

    def rank(path: str) -> tuple[int, int, str]:
        text = (path + " " + memory.files[path][:4000].decode("utf-8", "replace")).lower()
        shared = len(words & set(_WORD.findall(text)))
        return (-shared, _FOLDER_RANK.get(path.split("/", 1)[0], 9), path)

    parts, shown, used = [], [], 0
    for path in sorted(memory, key=rank)[:files]:
        body = memory.files[path].decode("utf-8", "replace")[:file_chars]
        block = f"--- {path}\n{body}"
        if used + len(block) > chars:
            break
        parts.append(block)
        shown.append(path)
        used += len(block)
    note = f"{len(shown)} of {memory.n_files} files shown, at most {files} files and {chars} characters"
    return ("\n".join(parts) or "(empty)"), shown, note


@dataclass(frozen=True)
class MemoryEdits:
    """Validated memory edits and the reasons entries were dropped."""

    writes: dict[str, str]
    deletes: tuple[str, ...]
    errors: tuple[str, ...]


def parse_edits(text: str, base: MemoryTree, *, max_writes: int = 8, max_bytes: int = 4000) -> MemoryEdits:
    """``{"write": {path: text}, "delete": [paths]}`` from a model answer; every invalid entry is
    dropped with its reason (bad path, non-text, too big, delete of a missing file, over the count)."""
    obj = extract_json(text)
    if obj is None:
        return MemoryEdits({}, (), ("no JSON object in the answer",))
    errors = [
        f"unknown key {k!r} ignored (allowed: write, delete)" for k in sorted(set(obj) - {"write", "delete"})
    ]
    writes: dict[str, str] = {}
    raw_w = obj.get("write") or {}
    if not isinstance(raw_w, dict):
        errors.append("write must be an object {path: text}")
        raw_w = {}
    for path, body in raw_w.items():
        try:
            check_relpath(path)
        except MemoryPathError as e:
            errors.append(str(e))
            continue
        if not isinstance(body, str):
            errors.append(f"{path}: content must be text")
        elif len(body.encode()) > max_bytes:
            errors.append(f"{path}: more than {max_bytes} bytes")
        elif len(writes) >= max_writes:
            errors.append(f"{path}: more than {max_writes} writes")
        else:
            writes[path] = body
    deletes: list[str] = []
    raw_d = obj.get("delete") or []
    for path in raw_d if isinstance(raw_d, list) else []:
        if not isinstance(path, str) or path not in base:
            errors.append(f"delete {path!r}: not a file of the memory")
        else:
            deletes.append(path)
    if not isinstance(raw_d, list):
        errors.append("delete must be a list of paths")
    return MemoryEdits(writes, tuple(deletes), tuple(errors))


# the example evidence line of the verifier prompt (prompts/rsiagent_verifier.txt): a copy of it is no evidence
VERIFIER_EXAMPLE_EVIDENCE = "what in the final state or results shows it"


def parse_verdict(text: str, *, placeholders: Sequence[str] = ()) -> VerifierReport:
    """A verifier answer as a report; unparseable, an unknown verdict, or PASS/FAIL with no evidence
    is UNVERIFIED with the reason (never PASS). Evidence lines that only repeat one of
    ``placeholders`` (the prompt's example line; a schema-constrained small model copies it) are
    not evidence."""
    obj = extract_json(text)
    if obj is None:
        return VerifierReport(
            "UNVERIFIED", (f"unparseable verifier answer: {text.strip()[:160]!r}",), {"parsed": False}
        )
    verdict = str(obj.get("verdict", "")).strip().upper()
    ev = obj.get("evidence")
    lines = [ev] if isinstance(ev, str) else [str(x) for x in ev] if isinstance(ev, list) else []
    lines = [x.strip() for x in lines if x.strip()]
    copied = {p.strip().lower() for p in placeholders}
    n_copied = sum(x.lower() in copied for x in lines)
    lines = [x for x in lines if x.lower() not in copied]
    if verdict not in ("PASS", "FAIL", "UNVERIFIED"):
        return VerifierReport(
            "UNVERIFIED", (f"no valid verdict in the answer (got {verdict[:40]!r})",), {"parsed": False}
        )
    if verdict != "UNVERIFIED" and not lines:
        why = f"{verdict} given without evidence" + (
            f" (its {n_copied} evidence line(s) only repeat the prompt's example)" if n_copied else ""
        )
        return VerifierReport("UNVERIFIED", (why,), {"parsed": False})
    return VerifierReport(verdict, tuple(lines[:10]) or ("no evidence given",), {"parsed": True})  # type: ignore[arg-type]


def _bounded(obj: Any, limit: int) -> str:
    text = json.dumps(obj, indent=1, sort_keys=True, default=str)
    return text if len(text) <= limit else text[:limit] + f"\n... ({len(text) - limit} more characters)"


# ------------------------------------------------------------------------------------- roles
@dataclass
class LLMActor:
    """A model actor (module doc); one per branch (``actor_factory``), its history resets per task."""

    llm: Any
    role: RoleModel | None = None
    memory_files: int = 8
    memory_chars: int = 4000
    file_chars: int = 800
    reconcile: bool = True
    max_writes: int = 8
    edit_log: list[dict[str, Any]] = field(default_factory=list)
    _calls: int = 0

    def _ask(self, name: str, json_schema: dict[str, Any] | None = None, **values: Any) -> str:
        self._calls += 1
        return ask(self.llm, _template(name), self.role, seed=self._calls, json_schema=json_schema, **values)

    def attempt(
        self, project: Project, workspace: Any, memory: MemoryTree, feedback: VerifierReport | None
    ) -> Attempt:
        for need in ("observe", "act"):
            if not callable(getattr(workspace, need, None)):
                raise TypeError(
                    f"{type(workspace).__name__} has no {need}(): a model actor needs a text workspace"
                )
        mem, shown, note = select_memory(
            memory,
            project.instruction,
            files=self.memory_files,
            chars=self.memory_chars,
            file_chars=self.file_chars,
        )
        fb = "none yet" if feedback is None else f"{feedback.verdict}: " + "; ".join(feedback.evidence[:5])
        answer = self._ask(
            "rsiagent_actor",
            instruction=project.instruction,
            memory=mem,
            memory_note=note,
            feedback=fb,
            observation=workspace.observe(),
            answer_format=getattr(workspace, "answer_format", "Answer with the action program."),
            json_schema=getattr(workspace, "answer_schema", None),  # e.g. MiniWoB++'s action language
        )
        evidence, details = workspace.act(answer)
        private = {"answer": answer, "memory_shown": shown, "details": dict(details)}
        return Attempt(project, evidence, private, calls=1)

    def _edit(self, name: str, base: MemoryTree, report: VerifierReport, **values: Any) -> MemoryTree:
        mem, _, note = select_memory(
            base,
            values.get("instruction", ""),
            files=self.memory_files,
            chars=self.memory_chars,
            file_chars=self.file_chars,
        )
        text = self._ask(
            name,
            json_schema=edits_decoding_schema(self.max_writes, _max_tokens(self.role)),
            verdict=report.verdict,
            evidence="\n".join(f"- {e}" for e in report.evidence),
            memory=mem,
            memory_note=note,
            max_writes=self.max_writes,
            **values,
        )
        edits = parse_edits(text, base, max_writes=self.max_writes)
        try:
            out = base.with_changes(edits.writes, edits.deletes)
            errors = list(edits.errors)
        except MemoryPathError as e:  # e.g. a path that is both a file and a folder
            out, errors = base, [*edits.errors, f"edits not applied: {e}"]
        self.edit_log.append(
            {"step": name, "writes": sorted(edits.writes), "deletes": list(edits.deletes), "errors": errors}
        )
        return out

    def distil(self, attempt: Attempt, report: VerifierReport, canonical: MemoryTree) -> MemoryTree:
        """Distil the verified attempt into edits, then reconcile against ``canonical`` (module doc)."""
        if report.verdict == "UNVERIFIED":
            self.edit_log.append(
                {"step": "distil", "writes": [], "deletes": [], "errors": ["UNVERIFIED: nothing written"]}
            )
            return canonical
        p = attempt.project
        cand = self._edit(
            "rsiagent_distil",
            canonical,
            report,
            instruction=p.instruction,
            answer=str(attempt.private.get("answer", ""))[:3000],
        )
        if self.reconcile:
            cand = self._edit("rsiagent_reconcile", cand, report, instruction=p.instruction)
        return cand

    def summarise_failure(self, attempt: Attempt, report: VerifierReport) -> str:
        """The verifier's verdict and evidence (facts), then the actor's own answer, shortened."""
        answer = " ".join(str(attempt.private.get("answer", "")).split())[:300]
        return f"{report.verdict} on {attempt.project.id}: {'; '.join(report.evidence[:4])}. Actor's answer: {answer}"


@dataclass
class LLMVerifier:
    """A model verifier that sees evidence only (module doc)."""

    llm: Any
    role: RoleModel | None = None
    state_chars: int = 3000
    _calls: int = 0

    def verify(self, project: Project, evidence: Evidence) -> VerifierReport:
        self._calls += 1
        text = ask(
            self.llm,
            _template("rsiagent_verifier"),
            self.role,
            seed=self._calls,
            json_schema=verdict_decoding_schema(_max_tokens(self.role)),
            requirements=evidence.requirements,
            final_state=_bounded(dict(evidence.final_state), self.state_chars),
            execution=_bounded(dict(evidence.execution), self.state_chars),
        )
        return parse_verdict(text, placeholders=(VERIFIER_EXAMPLE_EVIDENCE,))


@dataclass
class LLMCurriculum:
    """A model curriculum (module doc); ``accepts`` tells it what practice the environment can run."""

    llm: Any
    role: RoleModel | None = None
    accepts: str = "free-text practice instructions"
    memory_files: int = 8
    memory_chars: int = 3000
    max_projects: int = 3  # per WAVE, when the handoff is schema-constrained
    _calls: int = 0

    def author(self, request: CurriculumRequest) -> str:
        from rsi_workbench.memory.handoff import HANDOFF_SCHEMA

        self._calls += 1
        query = " ".join(t.instruction for t in request.targets)
        mem, _, note = select_memory(request.memory, query, files=self.memory_files, chars=self.memory_chars)
        results = "\n".join(
            f"- {r.project_id} ({r.phase} wave {r.wave}): {r.verdict or r.outcome or 'no verdict'}: {r.instruction[:120]}"
            for r in request.results[-20:]
        )
        text = ask(
            self.llm,
            _template("rsiagent_curriculum"),
            self.role,
            seed=self._calls,
            json_schema=handoff_decoding_schema(self.max_projects, _max_tokens(self.role)),
            phase=request.phase,
            wave=request.wave,
            targets="\n".join(f"- {t.id}: {t.instruction}" for t in request.targets),
            accepts=self.accepts,
            results=results or "(none yet)",
            memory=mem,
            memory_note=note,
            failure=request.failure_summary or "none",
            passed=request.target_passed,
            schema=json.dumps(HANDOFF_SCHEMA, separators=(",", ":")),
        )
        obj = extract_json(text)
        return json.dumps(obj) if obj is not None else text


# ------------------------------------------------------------------------------------- opening
def open_llm_roles(
    roles: LLMRoles, run: Any = None, ledger: Any = None, *, accepts: str = "", backend: Any = None
) -> dict[str, Any]:
    """The model roles of ``roles`` on a run and ledger: ``{"actor_factory", "verifier",
    "curriculum"}`` for the roles with a model (``backend``: an already-built model, e.g. a test
    double, wrapped by the recorder instead of loading the configured one)."""
    from rsi_workbench.models import RecordedLLM, open_model, shared_loaders

    active = roles.active()
    loaders = shared_loaders({r: rm.model for r, rm in active.items()})
    llms: dict[str, Any] = {}
    for name, rm in active.items():
        if backend is not None:
            llms[name] = RecordedLLM.wrap(backend, run=run, ledger=ledger, role=name, replay=rm.model.replay)
        else:
            llms[name] = open_model(rm.model, run, ledger, role=name, load=loaders[name])
    # the templates used inside a wave's branches (threads when max_parallel > 1) are versioned now:
    # at first use, the branch that asks first would version them, so the held records of the
    # branches would depend on timing (distil, reconcile and the curriculum run serially)
    for name, template in (("actor", "rsiagent_actor"), ("verifier", "rsiagent_verifier")):
        use = getattr(llms.get(name), "use_prompt", None)
        if use is not None:
            use(_template(template))
    out: dict[str, Any] = {}
    if "actor" in llms:
        llm, actor_rm = llms["actor"], roles.actor

        def actor_factory() -> LLMActor:
            return LLMActor(
                llm,
                actor_rm,
                memory_files=roles.memory_files,
                memory_chars=roles.memory_chars,
                file_chars=roles.file_chars,
            )

        out["actor_factory"] = actor_factory
    if "verifier" in llms:
        out["verifier"] = LLMVerifier(llms["verifier"], roles.verifier)
    if "curriculum" in llms:
        out["curriculum"] = LLMCurriculum(
            llms["curriculum"], roles.curriculum, accepts=accepts or "free-text practice instructions"
        )
    return out


def apply_llm_roles(
    roles: LLMRoles,
    arm: tuple[Any, Any, Any, Any],
    run: Any,
    ledger: Any = None,
    *,
    accepts: str = "",
    backend: Any = None,
) -> tuple[Any, Any, Any, Any]:
    """An arm ``(env, actor_factory, verifier, curriculum)`` with the roles that have a model block
    replaced by model roles recorded on ``run`` (the others stay built-in)."""
    env, actor_factory, verifier, curriculum = arm
    if roles.actor is not None and not getattr(env, "text_workspaces", False):
        raise ValueError(
            f"roles.actor: the {getattr(env, 'name', 'environment')} workspaces have no text interface "
            "(observe/act) for a model actor yet; leave roles.actor out (built-in actor)"
        )
    accepts = accepts or str(getattr(env, "accepts", ""))
    opened = open_llm_roles(roles, run, ledger, accepts=accepts, backend=backend)
    return (
        env,
        opened.get("actor_factory", actor_factory),
        opened.get("verifier", verifier),
        opened.get("curriculum", curriculum),
    )
