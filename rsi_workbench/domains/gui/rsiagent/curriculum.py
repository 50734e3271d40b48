"""The built-in (model-free) MiniWoB++ curriculum: broad waves on target and prerequisite pages, then
deep practice on the template a target failed on. It only authors handoff text; the engine validates it.

Broad phase: wave 1 practises every target page (``per_page`` projects) and each target's prerequisite
pages once; later waves practise the target pages not yet *covered* (the last practice PASSed and at
least ``cover_passes`` PASSed in all); a page with ``give_up`` practice projects and no PASS is dropped.
SATURATED when every target page is covered or dropped; STALLED after two waves without any PASS.
With ``brs_pages="others"`` (cross-page transfer) the broad waves practise only pages that are no
target's: ``transfer_pages``, else the targets' prerequisites that are not targets themselves; the
same coverage, give-up and stall rules apply to those pages.
Deep phase: after a target FAIL, ``deep_projects`` projects on the failed page and template
(``page: P; variant: T``, parsed from the actor's failure summary); after a target PASS, SATURATED
(no contrast practice). It never sees hidden scores, never approves artifacts, never edits memory.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence

from rsi_workbench.memory import CurriculumRequest, OutcomeSummary

from .miniwob import parse_instruction

PREREQUISITES: Mapping[str, tuple[str, ...]] = {
    "click-checkboxes": ("click-button",),
    "enter-date": ("enter-text",),
    "login-user": ("enter-text", "enter-password"),
    "use-autocomplete": ("enter-text",),
    "choose-date": ("enter-date",),
    "book-flight": ("use-autocomplete", "choose-date"),
    "email-inbox": ("click-link",),
}
_SUMMARY = re.compile(r"page:\s*(?P<page>[a-z0-9.\-]+);\s*variant:\s*(?P<variant>[0-9a-f]{12})")


def _pid(*parts: object) -> str:
    return re.sub(r"[^a-z0-9-]+", "-", "-".join(str(p) for p in parts).lower())[:64].strip("-")


def _handoff(decision: str, rationale: str, projects: Sequence[tuple[str, str]] = ()) -> str:
    body = {
        "decision": decision,
        "rationale": rationale,
        "projects": [{"id": i, "instruction": t} for i, t in projects],
    }
    return json.dumps(body, indent=1)


def _page_of(instruction: str) -> str | None:
    try:
        return parse_instruction(instruction).page
    except ValueError:
        return None


class BuiltinCurriculum:
    """Model-free curriculum (module docstring)."""

    def __init__(
        self,
        per_page: int = 1,
        cover_passes: int = 2,
        give_up: int = 4,
        deep_projects: int = 2,
        brs_pages: str = "targets",
        transfer_pages: Sequence[str] = (),
    ) -> None:
        self.per_page, self.cover_passes, self.give_up, self.deep_projects = (
            per_page,
            cover_passes,
            give_up,
            deep_projects,
        )
        if brs_pages not in ("targets", "others"):
            raise ValueError(f"brs_pages: targets or others, got {brs_pages!r}")
        self.brs_pages, self.transfer_pages = brs_pages, tuple(transfer_pages)

    def practice_pages(self, target_pages: Sequence[str]) -> list[str]:
        """The pages broad waves practise: the target pages, or (``others``) only non-target pages."""
        if self.brs_pages == "targets":
            return list(target_pages)
        pool = self.transfer_pages or tuple(q for p in target_pages for q in PREREQUISITES.get(p, ()))
        return [q for q in dict.fromkeys(pool) if q not in target_pages]

    def author(self, request: CurriculumRequest) -> str:
        if request.phase == "deep":
            return self._deep(request)
        return self._broad(request)

    def _page_results(self, results: Sequence[OutcomeSummary], page: str) -> list[OutcomeSummary]:
        return [r for r in results if r.phase == "broad" and _page_of(r.instruction) == page]

    def _broad(self, request: CurriculumRequest) -> str:
        targets = list(dict.fromkeys(p for t in request.targets if (p := _page_of(t.instruction))))
        pages = self.practice_pages(targets)
        if not pages:
            return _handoff("SATURATED", "no pages other than the targets to practise")
        open_pages, notes = [], []
        for page in pages:
            res = self._page_results(request.results, page)
            passes = sum(r.verdict == "PASS" for r in res)
            if res and res[-1].verdict == "PASS" and passes >= self.cover_passes:
                notes.append(f"{page} covered ({passes} PASS)")
            elif len(res) >= self.give_up and passes == 0:
                notes.append(f"{page} dropped after {len(res)} projects without a PASS")
            else:
                open_pages.append(page)
        if not open_pages:
            return _handoff("SATURATED", "; ".join(notes) or "no target pages")
        waves = sorted({r.wave for r in request.results if r.phase == "broad"})
        last_two = [r for r in request.results if r.phase == "broad" and r.wave in waves[-2:]]
        if len(waves) >= 2 and not any(r.verdict == "PASS" for r in last_two):
            return _handoff("STALLED", f"two waves without a PASS; open pages: {', '.join(open_pages)}")
        projects = [
            (_pid("b", request.wave, page, j), f"page: {page}")
            for page in open_pages
            for j in range(self.per_page)
        ]
        if not request.results and self.brs_pages == "targets":
            pre = dict.fromkeys(q for p in pages for q in PREREQUISITES.get(p, ()) if q not in pages)
            projects += [(_pid("b", request.wave, "pre", q), f"page: {q}") for q in pre]
        why = f"practise open target pages {', '.join(open_pages)}" + (
            f"; {'; '.join(notes)}" if notes else ""
        )
        return _handoff("WAVE", why, projects)

    def _deep(self, request: CurriculumRequest) -> str:
        if request.target_passed:
            return _handoff("SATURATED", "the target passed; no contrast practice needed")
        m = _SUMMARY.search(request.failure_summary or "")
        if m is None:
            return _handoff("STALLED", "the failure summary names no page and template to practise")
        page, variant = m.group("page"), m.group("variant")
        projects = [
            (_pid("d", request.wave, page, variant[:6], j), f"page: {page}; variant: {variant}")
            for j in range(self.deep_projects)
        ]
        return _handoff("WAVE", f"practise the failed template {variant} of {page}", projects)
