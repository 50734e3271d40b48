"""MiniWoB++ as an RSIAgent environment: targets, practice workspaces (a fresh browser each), scoring.

An instruction names a page and optionally a seed or a template variant, e.g. ``page: enter-date``,
``page: email-inbox; variant: 3fa2c0d19b7e`` (a practice seed whose utterance has that template,
see :func:`.search.template_key`) or ``page: login-user; seed: 17``; anything the environment cannot
run is :class:`~rsi_workbench.memory.ProjectRejected` with the reason.

Seeds: target seeds lie in ``[TARGET_BASE, TARGET_BASE + SPAN)``, practice seeds in ``[0, SPAN)``
(asserted at every open; a practice instruction naming a target seed is rejected), fresh evaluation
instances in ``[FRESH_BASE, FRESH_BASE + SPAN)`` (:func:`fresh_seeds`) and the page check's instances
in ``[CHECK_BASE, CHECK_BASE + SPAN)``: four disjoint ranges. With ``vary_template`` each experiment
seed takes its target from a different utterance template of the page where it has several
(:func:`template_targets`).

Host-only (never shown to any role; the audit corpus): the target seeds' exact utterances and the
hidden checks, i.e. the target pages' own source, whose script holds MiniWoB++'s reward function.
The official score is MiniWoB++'s raw reward of the workspace's last episode mapped from [-1, 1] to
[0, 1]; only :meth:`MiniwobEnvironment.official_score` reads it, and the engine calls that only in
frozen evaluation and curve probes. Actions run as action programs in the sandbox
(:class:`~rsi_workbench.domains.gui.ProgramPolicy`); the host validates and applies them.
"""

from __future__ import annotations

import re
import threading
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rsi_workbench.domains.gui import (
    BrowserFailure,
    EpisodeLimits,
    GuiEnv,
    GuiObservation,
    ProgramPolicy,
    UnknownTaskError,
    play_episode,
    resolve_task,
)
from rsi_workbench.domains.gui.actions import submit_ref
from rsi_workbench.domains.gui.programs import program_isolation
from rsi_workbench.memory import InfraFailure, Project, ProjectRejected
from rsi_workbench.protocol.seeds import derive_seed
from rsi_workbench.sandbox import IsolationGrant

from .search import program_source, template_key

SPAN = 1_000_000
TARGET_BASE = 5_000_000
FRESH_BASE = 8_000_000
CHECK_BASE = 9_000_000
TEMPLATE_DRAWS = 8  # target-range seeds scanned per target for its page's templates (vary_template)
VARIANT_DRAWS = 40  # practice seeds scanned for an instruction's template variant
_LOCK = threading.Lock()
# host-only texts per (salt, targets): the same seed's arms share them (one browser per page, once)
_HOST_ONLY_CACHE: dict[tuple[Any, ...], list[str]] = {}
_TEMPLATE_CACHE: dict[tuple[str, str, int], list[tuple[int, str]]] = {}
_LAST = threading.local()  # this thread's last episode (host-only), read by the audit verifier
_INSTR = re.compile(r"^\s*page:\s*(?P<page>[a-z0-9.\-]+)\s*(?:;\s*(?P<rest>.*))?$", re.IGNORECASE)


@dataclass(frozen=True)
class Instruction:
    page: str
    seed: int | None = None
    variant: str | None = None


def parse_instruction(text: str) -> Instruction:
    """``page: P[; seed: N][; variant: HASH]`` → :class:`Instruction`, else ProjectRejected with why."""
    m = _INSTR.match(text.strip().splitlines()[0] if text.strip() else "")
    if not m:
        raise ProjectRejected(f"instruction must start with 'page: <miniwob task>', got {text[:80]!r}")
    try:
        page = resolve_task(m.group("page").lower())
    except UnknownTaskError as err:
        raise ProjectRejected(str(err)) from None
    seed = variant = None
    for part in filter(None, (p.strip() for p in (m.group("rest") or "").split(";"))):
        key, _, val = part.partition(":")
        key, val = key.strip().lower(), val.strip()
        if key == "seed" and val.isdigit():
            seed = int(val)
        elif key == "variant" and re.fullmatch(r"[0-9a-f]{12}", val):
            variant = val
        else:
            raise ProjectRejected(
                f"cannot run {part!r}: only 'seed: <int>' and 'variant: <12 hex>' may follow the page"
            )
    return Instruction(page, seed, variant)


class MiniwobWorkspace:
    """One fresh browser on one page at one seed; the actor observes and runs action programs in it."""

    def __init__(
        self,
        page: str,
        seed: int,
        purpose: str,
        limits: EpisodeLimits,
        counter: Counter[str] | None = None,
        *,
        reload: bool = False,
    ) -> None:
        self.page, self.seed, self.purpose, self.limits = page, seed, purpose, limits
        self._counter = counter if counter is not None else Counter()
        # reload: the page is loaded afresh before every episode (each candidate program starts from a
        # newly loaded page, not from the one the previous candidate left; the choose-date pages need it)
        self.env = GuiEnv(page, page_timer_s=limits.page_timer_s, reload_every=1 if reload else 0)
        self.episodes = 0
        self._raw_reward: float | None = None  # host-only: read by official_score alone
        try:
            self.env.start()
        except BrowserFailure as err:
            self.env.close()
            raise InfraFailure(f"browser for {page}: {err}") from err

    def observe(self) -> GuiObservation:
        """The page reset to this workspace's seed, as plain data (utterance, fields, DOM)."""
        try:
            return self.env.reset(self.seed)
        except BrowserFailure as err:
            raise InfraFailure(f"browser for {self.page}: {err}") from err

    def run(self, steps: Sequence[dict[str, Any]]) -> dict[str, Any]:
        """Play one episode from the seed with ``steps`` as a sandboxed action program.

        Returns the visible execution record: the utterance, the actions applied (with the element
        each one targeted), invalid actions, the program's error, whether the page ended the episode,
        and the DOM before the last action. The page's reward stays in the workspace.
        """
        recorder = _Recorder(ProgramPolicy(program_source(list(steps))))
        try:
            with recorder.inner:
                res = play_episode(self.env, recorder, self.seed, self.limits)
        except BrowserFailure as err:
            raise InfraFailure(f"browser for {self.page}: {err}") from err
        self.episodes += 1
        with _LOCK:
            self._counter[self.purpose] += 1
        self._raw_reward = res.raw_reward
        _LAST.episode = {
            "page": self.page,
            "seed": self.seed,
            "purpose": self.purpose,
            "raw_reward": res.raw_reward,
            "outcome": res.outcome,
        }
        last = recorder.seen[-1] if recorder.seen else None
        return {
            "utterance": res.utterance,
            "fields": [list(f) for f in (last.fields if last else ())],
            "actions": [dict(a) for a in res.actions],
            "targets": [_describe(o, a) for o, a in recorder.proposals],
            "invalid_actions": list(res.invalid_actions),
            "program_error": res.policy_error,
            "ended_by_page": res.outcome == "done",
            "outcome": res.outcome,
            "final_elements": [_element(e) for e in last.elements] if last else [],
        }

    def close(self) -> None:
        self.env.close()


def pop_last_episode() -> dict[str, Any] | None:
    """This thread's last played episode (page, seed, purpose, raw reward; host-only), then forget it."""
    ep = getattr(_LAST, "episode", None)
    _LAST.episode = None
    return ep


def fresh_seeds(salt: str, seed: int, page: str, n: int) -> list[int]:
    """``n`` distinct fresh-instance seeds of ``page`` for experiment seed ``seed`` (the fresh range)."""
    out: list[int] = []
    j = 0
    while len(out) < n:
        s = FRESH_BASE + derive_seed(salt, "fresh", seed, page, j) % SPAN
        if s not in out:
            out.append(s)
        j += 1
    return out


def _template_draws(salt: str, page: str, i: int) -> list[tuple[int, str]]:
    """(seed, template key) of the page's first TEMPLATE_DRAWS target-range draws for target ``i``."""
    key = (salt, page, i)
    with _LOCK:
        if key in _TEMPLATE_CACHE:
            return _TEMPLATE_CACHE[key]
    seeds = [TARGET_BASE + derive_seed(salt, "target-draw", page, i, j) % SPAN for j in range(TEMPLATE_DRAWS)]
    ws = MiniwobWorkspace(page, seeds[0], "host", EpisodeLimits())
    try:
        draws = []
        for s in seeds:
            ws.seed = s
            obs = ws.observe()
            draws.append((s, template_key(obs.utterance, obs.fields)))
    finally:
        ws.close()
    with _LOCK:
        _TEMPLATE_CACHE[key] = draws
    return draws


def template_targets(draws: Sequence[tuple[int, str]], seed: int) -> int:
    """The target seed experiment seed ``seed`` takes from ``draws``: template ``seed mod T`` (templates
    ordered by first appearance), its ``seed // T``-th draw (mod that template's draws)."""
    templates = list(dict.fromkeys(t for _, t in draws))
    want = templates[seed % len(templates)]
    of_t = [s for s, t in draws if t == want]
    return of_t[(seed // len(templates)) % len(of_t)]


def target_seed_for(salt: str, page: str, i: int, seed: int, *, vary_template: bool = False) -> int:
    """The MiniWoB++ seed of target ``i`` on ``page`` for experiment seed ``seed`` (the target range)."""
    if vary_template:
        return template_targets(_template_draws(salt, page, i), seed)
    return TARGET_BASE + derive_seed(salt, "target", seed, page, i) % SPAN


class _Recorder:
    """Wraps a policy to keep every observation it was shown and what it proposed (host side)."""

    def __init__(self, inner: ProgramPolicy) -> None:
        self.inner = inner
        self.seen: list[GuiObservation] = []
        self.proposals: list[tuple[GuiObservation, Any]] = []

    def act(self, obs: GuiObservation) -> Any:
        self.seen.append(obs)
        proposal = self.inner.act(obs)
        self.proposals.append((obs, proposal))
        return proposal


def _element(e: Any) -> dict[str, Any]:
    return {k: getattr(e, k) for k in ("ref", "parent_ref", "tag", "text", "value", "id", "classes")}


def _describe(obs: GuiObservation, proposal: Any) -> dict[str, Any]:
    d = dict(proposal) if isinstance(proposal, dict) else {"proposal": str(proposal)}
    ref = d.get("ref")
    if d.get("type") == "submit":  # the env clicks the page's submit button: name it, as a click would
        ref = submit_ref(obs)
    if isinstance(ref, int) and ref in obs.refs:
        d["element"] = _element(obs.element(ref))
    return d


class MiniwobEnvironment:
    """MiniWoB++ targets (page, index) with host-side seeds, practice on any page and seed."""

    name = "miniwob"

    def __init__(
        self,
        targets: Sequence[tuple[str, int]],
        *,
        seed: int = 0,
        salt: str = "rsiagent-miniwob",
        max_actions: int = 20,
        page_timer_s: float = 60.0,
        vary_template: bool = False,
        reload_between_candidates: bool = False,
    ) -> None:
        self.reload = bool(reload_between_candidates)
        self.limits = EpisodeLimits(max_actions=max_actions, wall_clock_s=120.0, page_timer_s=page_timer_s)
        self._targets: dict[str, tuple[str, int]] = {}
        for page, count in targets:
            page = resolve_task(page)
            for i in range(count):
                t_seed = target_seed_for(salt, page, i, seed, vary_template=vary_template)
                self._targets[f"t-{page.replace('.', '-')}-{i}"] = (page, t_seed)
        self.salt, self.seed = salt, seed
        self.episodes: Counter[str] = Counter()  # episodes played per purpose (this process)
        self._host_only: list[str] | None = None
        self.sandbox_isolation()  # action programs run only sandboxed: a weaker plan is refused here

    def sandbox_isolation(self) -> IsolationGrant:
        """The action programs' plan through the choke point (network and PID namespaces always; the
        stricter of the modes); what the arm records."""
        return program_isolation()

    def target_pages(self) -> dict[str, tuple[str, int]]:
        """Host-only: target id -> (page, MiniWoB++ seed)."""
        return dict(self._targets)

    @property
    def target_seeds(self) -> frozenset[int]:
        return frozenset(s for _, s in self._targets.values())

    def targets(self) -> list[Project]:
        return [Project(pid, f"page: {page}", is_target=True) for pid, (page, _) in self._targets.items()]

    def practice_seed(self, seed: int) -> int:
        """The MiniWoB++ seed of the engine's practice seed (a hash into the practice range)."""
        return derive_seed(self.salt, "practice", int(seed)) % SPAN

    def open(self, project: Project, *, seed: int, purpose: str) -> MiniwobWorkspace:
        """A fresh browser on the project's page at its seed (target seed, or a disjoint practice seed)."""
        ins = parse_instruction(project.instruction)
        if purpose in ("target", "evaluation"):
            if project.id not in self._targets:
                raise ProjectRejected(f"{project.id} is not a known target")
            page, s = self._targets[project.id]
            return self._open(page, s, purpose)
        if ins.seed is not None and not 0 <= ins.seed < SPAN:
            raise ProjectRejected(f"practice seeds lie in [0, {SPAN}); seed {ins.seed} is reserved")
        s = ins.seed if ins.seed is not None else self.practice_seed(seed)
        assert s not in self.target_seeds and 0 <= s < SPAN, "practice and target seeds must be disjoint"
        ws = self._open(ins.page, s, purpose)
        if ins.variant is not None:
            self._find_variant(ws, ins.variant, seed)
        return ws

    def _open(self, page: str, seed: int, purpose: str) -> MiniwobWorkspace:
        return MiniwobWorkspace(page, seed, purpose, self.limits, self.episodes, reload=self.reload)

    def _find_variant(self, ws: MiniwobWorkspace, variant: str, seed: int) -> None:
        for j in range(VARIANT_DRAWS):
            s = (self.practice_seed(seed) + 7919 * j) % SPAN
            if s in self.target_seeds:
                continue
            ws.seed = s
            obs = ws.observe()
            if template_key(obs.utterance, obs.fields) == variant:
                return
        ws.close()
        raise ProjectRejected(
            f"no practice seed of {ws.page} with template {variant} in {VARIANT_DRAWS} draws"
        )

    def host_only_texts(self) -> list[str]:
        """The target seeds' exact utterances and the target pages' source (their hidden checks)."""
        key = (self.salt, tuple(sorted(self._targets.values())))
        if self._host_only is None and key in _HOST_ONLY_CACHE:
            self._host_only = _HOST_ONLY_CACHE[key]
        if self._host_only is None:
            texts: list[str] = []
            for page in sorted({p for p, _ in self._targets.values()}):
                seeds = [s for p, s in self._targets.values() if p == page]
                ws = self._open(page, seeds[0], "host")
                try:
                    for s in seeds:
                        ws.seed = s
                        texts.append(ws.observe().utterance)
                finally:
                    ws.close()
                texts.append(page_source(page))
            self._host_only = _HOST_ONLY_CACHE[key] = texts
        return list(self._host_only)

    def official_score(self, workspace: Any) -> float:
        """MiniWoB++'s raw reward of the workspace's last episode, mapped [-1, 1] → [0, 1] (0: none)."""
        raw = getattr(workspace, "_raw_reward", None)
        return 0.0 if raw is None else min(1.0, max(0.0, (float(raw) + 1.0) / 2.0))


def page_source(page: str) -> str:
    """The task page's HTML from the ``miniwob`` wheel (its script holds the reward function)."""
    import miniwob

    html = Path(miniwob.__file__).parent / "html"
    path = html / "miniwob" / f"{page}.html"
    if page.startswith("flight."):
        path = html / "flight" / page.split(".", 1)[1] / "wrapper.html"
    return path.read_text(errors="replace") if path.is_file() else ""
