"""The built-in (model-free) MiniWoB++ actor: stored scripts first, then a search over the action language.

``attempt`` observes the page (utterance, fields, DOM; never a reward), names the utterance's template
(:func:`.search.template_key`), and runs ONE candidate procedure as a sandboxed action program: the
script memory holds for this page and template if any, else the next untried candidate of the generic
search (:func:`.search.candidates`), reordered by what memory knows of the page's skills and pruned by
its lessons. One candidate per attempt is the fixed search budget, so an empty memory (the no-RSI
baseline) and a grown one differ only in what they try first.

``distil`` writes evidence-backed knowledge and reconciles it with the canonical memory:
- ``scripts/<page>/<template>.json``: a procedure the verifier PASSed for this page and template;
- ``procedures/<page>.md``: a readable note of the page's scripts;
- ``facts/<page>.json``: per skill how often it passed and failed on the page, templates seen;
- ``lessons/<page>/<template>.json``: candidates that FAILed on this template, with the failed checks.
A script that later FAILs as often as it PASSed is deleted (its evidence is contradicted). Nothing is
written for UNVERIFIED, and infrastructure failures never reach ``distil`` (the engine keeps them out).
Memory files hold field names, locators and hashes, never the utterance's words (the shingle audit).
"""

from __future__ import annotations

import json
from typing import Any

from rsi_workbench.memory import Attempt, Evidence, MemoryTree, Project, VerifierReport

from .search import Candidate, candidates, template_key


def _load(memory: MemoryTree, path: str) -> Any:
    return json.loads(memory.read_text(path)) if path in memory else None


def _dump(obj: Any) -> str:
    return json.dumps(obj, indent=1, sort_keys=True) + "\n"


def script_path(page: str, key: str) -> str:
    return f"scripts/{page}/{key}.json"


def lesson_path(page: str, key: str) -> str:
    return f"lessons/{page}/{key}.json"


def facts_path(page: str) -> str:
    return f"facts/{page}.json"


def rank(page: str, key: str, found: list[Candidate], memory: MemoryTree) -> list[tuple[str, Candidate]]:
    """Candidates in the order the actor tries them, each with where its rank came from."""
    out: list[tuple[str, Candidate]] = []
    script = _load(memory, script_path(page, key))
    if script is not None:
        out.append(("memory:script", Candidate.from_json(script["candidate"])))
    failed = set((_load(memory, lesson_path(page, key)) or {}).get("failed", {}))
    skills = (_load(memory, facts_path(page)) or {}).get("skills", {})
    elsewhere: set[str] = set()  # skills that passed on other pages (a weaker prior)
    for path in memory.files:
        if path.startswith("facts/") and path != facts_path(page):
            elsewhere |= {
                k for k, v in json.loads(memory.read_text(path)).get("skills", {}).items() if v["pass"]
            }

    def prior(c: Candidate) -> int:
        s = skills.get(c.skill, {})
        if s.get("pass", 0) > 0:
            return 0
        if s.get("fail", 0) > 0:
            return 3
        return 1 if c.skill in elsewhere else 2

    rest = [c for c in found if c.id not in failed and all(c.id != o.id for _, o in out)]
    for c in sorted(rest, key=prior):  # stable: the generic order within each prior class
        out.append(("memory:facts" if prior(c) != 2 else "search", c))
    return out


class BuiltinActor:
    """Model-free actor (module docstring); one per branch: remembers what it tried in this branch."""

    def __init__(self) -> None:
        self._tried: dict[str, list[str]] = {}

    def attempt(
        self, project: Project, workspace: Any, memory: MemoryTree, feedback: VerifierReport | None
    ) -> Attempt:
        obs = workspace.observe()
        page, key = workspace.page, template_key(obs.utterance, obs.fields)
        ranked = rank(page, key, candidates(obs), memory)
        tried = self._tried.setdefault(project.id, [])
        pick = next(((src, c) for src, c in ranked if c.id not in tried), None)
        private: dict[str, Any] = {
            "page": page,
            "template": key,
            "fields": [k for k, _ in obs.fields],
            "n_candidates": len(ranked),
            "tried_before": list(tried),
        }
        if pick is None:
            ex: dict[str, Any] = {"utterance": obs.utterance, "fields": [list(f) for f in obs.fields]}
            ex.update(
                actions=[],
                targets=[],
                program_error="the actor has no untried candidate",
                ended_by_page=False,
            )
            return Attempt(
                project, Evidence(obs.utterance, {"elements": []}, ex), {**private, "candidate": None}, 0
            )
        src, cand = pick
        tried.append(cand.id)
        ex = workspace.run(cand.steps)
        final = {"elements": ex.pop("final_elements")}
        private.update(candidate=cand.to_json(), source=src, feedback=feedback.verdict if feedback else None)
        return Attempt(project, Evidence(ex["utterance"], final, ex), private, calls=1)

    def summarise_failure(self, attempt: Attempt, report: VerifierReport) -> str:
        p = attempt.private
        cand = p.get("candidate") or {}
        failed = [k for k, v in report.checks.items() if v is False]
        return (
            f"page: {p.get('page')}; variant: {p.get('template')} | fields {p.get('fields')}; tried "
            f"{cand.get('id', 'nothing')} ({p.get('source', '-')}); verdict {report.verdict}; "
            f"failed checks: {len(failed)} ({', '.join(sorted({f.split(' ')[0] for f in failed})) or '-'}); "
            f"program error: {attempt.evidence.execution.get('program_error') or '-'}"
        )

    def distil(self, attempt: Attempt, report: VerifierReport, canonical: MemoryTree) -> MemoryTree:
        """Distil this attempt's verified outcome, reconciled against the CURRENT canonical memory."""
        p = attempt.private
        if report.verdict == "UNVERIFIED" or not p.get("candidate"):
            return canonical
        page, key, cand = p["page"], p["template"], Candidate.from_json(p["candidate"])
        passed = report.verdict == "PASS"
        writes: dict[str, str] = {}
        deletes: list[str] = []
        facts = _load(canonical, facts_path(page)) or {"skills": {}, "templates": []}
        stat = facts["skills"].setdefault(cand.skill, {"pass": 0, "fail": 0})
        stat["pass" if passed else "fail"] += 1
        facts["templates"] = sorted(set(facts["templates"]) | {key})
        writes[facts_path(page)] = _dump(facts)
        script = _load(canonical, script_path(page, key))
        lessons = _load(canonical, lesson_path(page, key)) or {"failed": {}}
        if passed:
            if script is None or script["candidate"]["id"] != cand.id:
                script = {
                    "page": page,
                    "template": key,
                    "fields": p["fields"],
                    "candidate": cand.to_json(),
                    "pass": 0,
                    "fail": 0,
                }
            script["pass"] += 1
            writes[script_path(page, key)] = _dump(script)
            if lessons["failed"].pop(cand.id, None) is not None:  # contradicted by this PASS
                writes[lesson_path(page, key)] = _dump(lessons)
        else:
            failed = sorted({k.split(" ")[0] for k, v in report.checks.items() if v is False})
            err = attempt.evidence.execution.get("program_error")
            lessons["failed"][cand.id] = {"checks": failed, "program_error": bool(err)}
            writes[lesson_path(page, key)] = _dump(lessons)
            if script is not None and script["candidate"]["id"] == cand.id:
                script["fail"] += 1
                if script["fail"] >= script["pass"]:
                    deletes.append(script_path(page, key))
                else:
                    writes[script_path(page, key)] = _dump(script)
        new = canonical.with_changes(writes, deletes)
        return new.with_changes({f"procedures/{page}.md": procedure_note(page, new)})


def procedure_note(page: str, memory: MemoryTree) -> str:
    """A readable note of the page's verified scripts (regenerated from the scripts themselves)."""
    lines = [f"# {page}: verified procedures", ""]
    for path in sorted(p for p in memory.files if p.startswith(f"scripts/{page}/")):
        s = json.loads(memory.read_text(path))
        ops = " -> ".join(st["op"] for st in s["candidate"]["steps"])
        lines.append(
            f"- template {s['template']} (fields {', '.join(s['fields'])}): skill {s['candidate']['skill']}, "
            f"steps {ops}; passed {s['pass']}, failed {s['fail']}"
        )
    if len(lines) == 2:
        lines.append("- none verified yet")
    return "\n".join(lines) + "\n"
