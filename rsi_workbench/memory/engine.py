"""RSIAgent's loop: BRS waves with serial audited commits, DRS, freeze and known-target evaluation.

:func:`run_rsiagent` drives one run as a sequence of *units* numbered by ``wave`` (a BRS wave, a DRS
target test, a DRS practice wave), each committed whole (``memory_wave_committed``) after its
branches were committed one at a time in authored order. State is derived from events: called on a
run that already holds events, it checks the ledger (:func:`read_ledger`), replays the committed
units without calling any role, reuses a handoff recorded for the first uncommitted wave, and
continues live from the last committed wave boundary. Ablations: ``none`` (empty memory, no
learning), ``drs_only``, ``brs_only``, ``full``. ``project_budget`` bounds BRS practice projects and
is checked only between whole waves. DRS visits the targets in ``drs_order`` (:func:`drs_order`).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any, Literal

from rsi_workbench.memory.audit import ShingleIndex
from rsi_workbench.memory.branches import BranchResult, BranchSpec, run_branches
from rsi_workbench.memory.commits import InfraStop, commit_branch, with_infra_retry
from rsi_workbench.memory.evaluation import freeze_and_evaluate, score_targets
from rsi_workbench.memory.handoff import Handoff, HandoffError, parse_handoff, validate_handoff
from rsi_workbench.memory.ledger import (
    AUDIT_REJECT,
    BRANCH,
    CURVE_POINT,
    HANDOFF,
    INFRA,
    PHASE_END,
    RESULT,
    RESUMED,
    RUN_STARTED,
    STOPPED,
    WAVE_COMMITTED,
    WAVE_STARTED,
    LedgerError,
    read_ledger,
    summary_of,
)
from rsi_workbench.memory.result import RsiAgentResult, practice_seed, recorded_result, target_seed
from rsi_workbench.memory.roles import (
    Actor,
    Curriculum,
    CurriculumRequest,
    Environment,
    OutcomeSummary,
    Verifier,
)
from rsi_workbench.memory.scores import partial_binary
from rsi_workbench.memory.settings import RsiAgentSettings
from rsi_workbench.memory.snapshots import load_snapshot, store_snapshot
from rsi_workbench.memory.tree import EMPTY, MemoryTree
from rsi_workbench.memory.types import Project
from rsi_workbench.records import Run

Unit = dict[str, Any]
WITHHELD = "(failure summary withheld: it shares an n-word shingle with host-only text)"


class _Engine:
    def __init__(
        self,
        env: Environment,
        actor_factory: Callable[[], Actor],
        verifier: Verifier,
        curriculum: Curriculum,
        settings: RsiAgentSettings,
        run: Run,
        initial_memory: MemoryTree,
    ):
        self.env, self.actor_factory, self.verifier, self.curriculum = (
            env,
            actor_factory,
            verifier,
            curriculum,
        )
        self.s, self.run = settings, run
        self.targets = tuple(Project(t.id, t.instruction, is_target=True) for t in env.targets())
        if not self.targets:
            raise ValueError(f"environment {env.name!r} has no targets")
        if len({t.id for t in self.targets}) != len(self.targets):
            raise ValueError(f"environment {env.name!r} has duplicate target ids")
        self.target_seeds = [target_seed(settings.seed, i) for i in range(len(self.targets))]
        self.audit_index = ShingleIndex(env.host_only_texts(), settings.shingle_n)
        self.memory: MemoryTree | None = EMPTY if settings.ablation == "none" else initial_memory
        self.memory_hash = self.memory.tree_hash()
        self.wave_before = self.memory_hash
        self.next_wave, self.next_index = 1, 1
        self.summaries: list[OutcomeSummary] = []
        self.n = {"episodes": 0, "calls": 0, "brs_projects": 0, "practice_projects": 0}
        self.replay: list[Unit] = []
        self.replay_records: dict[int, list[dict[str, Any]]] = {}
        self.pending_handoffs: dict[int, dict[str, Any]] = {}
        self.phase_ends: set[tuple[str, str | None]] = set()
        self.brs_end: str | None = None
        self.drs_ends: dict[str, str] = {}

    # -- start / resume -------------------------------------------------------------------------
    def start(self) -> None:
        events = self.run.events()
        if not any(e.kind == RUN_STARTED for e in events):
            assert self.memory is not None
            store_snapshot(self.run, self.memory, label="initial")
            self.run.append(
                RUN_STARTED,
                {
                    "env": self.env.name,
                    "targets": [{"id": t.id, "instruction": t.instruction} for t in self.targets],
                    "target_seeds": self.target_seeds,
                    "settings": self.s.model_dump(mode="json"),
                    "initial_memory": self.memory_hash,
                },
            )
            self.run.commit()
            self._probe(0, "initial")
            return
        state = read_ledger(events)
        started = next(e.payload for e in events if e.kind == RUN_STARTED)
        if started["env"] != self.env.name or [t["id"] for t in started["targets"]] != [
            t.id for t in self.targets
        ]:
            raise LedgerError(
                f"run {self.run.path} was made for environment {started['env']!r} with other targets"
            )
        load_snapshot(self.run, state.memory)  # the memory to continue from must be intact
        self.memory, self.memory_hash = None, state.initial_memory
        self.replay = list(state.committed)
        for r in state.records:
            self.replay_records.setdefault(int(r["wave_key"]), []).append(r)
        self.pending_handoffs = state.pending_handoffs
        self.phase_ends = {
            (e.payload["phase"], e.payload.get("target")) for e in events if e.kind == PHASE_END
        }
        self.run.append(
            RESUMED,
            {
                "from_wave": state.last_wave,
                "memory": state.memory,
                "abandoned_wave_keys": state.abandoned_keys,
            },
        )
        self.run.commit()

    def _ensure_memory(self) -> MemoryTree:
        if self.memory is None:  # after replaying committed units: load the last committed snapshot
            self.memory = load_snapshot(self.run, self.memory_hash)
        return self.memory

    # -- units ----------------------------------------------------------------------------------
    def _unit(
        self, unit: str, phase: str, target: str | None, live: Callable[[], tuple[Unit, list[Any]]]
    ) -> Unit:
        """Replay the next committed unit if the log has one, else run it live; absorb its outcome."""
        if self.replay:
            c = self.replay.pop(0)
            if (c["unit"], c.get("target")) != (unit, target):
                raise LedgerError(
                    f"wave {c['wave']}: the log committed {c['unit']} for {c.get('target')}, "
                    f"but these settings run {unit} for {target} there"
                )
            records = self.replay_records.get(int(c["wave_key"]), [])
            self.memory = None
        else:
            self._ensure_memory()
            c, records = live()
            self._probe(int(c["wave"]), phase)
        self.memory_hash = c["memory_after"]
        self.next_wave = int(c["wave"]) + 1
        if records:
            self.next_index = int(records[-1]["project_index"]) + 1
        self.summaries.extend(summary_of(r) for r in records)
        self.n["episodes"] += int(c["episodes"])
        self.n["calls"] += int(c["calls"])
        self.n["practice_projects"] += int(c["n_projects"])
        if unit == "brs":
            self.n["brs_projects"] += int(c["n_projects"])
        return c

    def _open_wave(self, phase: str, unit: str, target: str | None) -> tuple[int, int]:
        mem = self._ensure_memory()
        wave = self.next_wave
        self.wave_before = mem.tree_hash()
        store_snapshot(self.run, mem, label=f"w{wave}-pre", base=mem, wave=wave)  # its files are stored
        ev = self.run.append(
            WAVE_STARTED,
            {"wave": wave, "phase": phase, "unit": unit, "target": target, "memory_before": self.wave_before},
            cycle=wave,
        )
        return wave, ev.seq

    def _close_wave(
        self,
        key: int,
        wave: int,
        phase: str,
        unit: str,
        target: str | None,
        records: list[dict[str, Any]],
        **extra: Any,
    ) -> tuple[Unit, list[Any]]:
        mem = self._ensure_memory()
        payload = {
            "wave_key": key,
            "wave": wave,
            "phase": phase,
            "unit": unit,
            "target": target,
            "memory_before": self.wave_before,
            "memory_after": mem.tree_hash(),
            "memory_after_stats": mem.stats(),
            "n_records": len(records),
            "n_projects": sum(1 for r in records if not r["is_target"]),
            "episodes": sum(int(r["attempts"]) for r in records),
            "calls": sum(int(r["calls"]) for r in records),
            **extra,
        }
        self.run.append(WAVE_COMMITTED, payload, cycle=wave)
        self.run.commit()
        return payload, records

    def _run_and_commit(
        self, specs: list[BranchSpec], key: int, wave: int, phase: str, unit: str
    ) -> tuple[list[BranchResult], list[dict[str, Any]]]:
        """Run the branches from the pre-wave snapshot, then commit them serially in authored order."""
        snapshot = self._ensure_memory()
        results = run_branches(
            specs,
            snapshot,
            env=self.env,
            actor_factory=self.actor_factory,
            verifier=self.verifier,
            max_cycles=self.s.max_verification_cycles,
            max_parallel=self.s.max_parallel,
        )
        for r in results:
            for i, err in enumerate(r.infra_errors, 1):
                self.run.append(
                    INFRA,
                    {"where": f"branch {r.index} ({r.project.id})", "wave": wave, "try": i, "error": err},
                )
            self.run.append(
                BRANCH,
                {
                    "wave_key": key,
                    "wave": wave,
                    "project_index": r.index,
                    "project_id": r.project.id,
                    "status": r.status,
                    "verdict": r.verdict,
                    "cycles": len(r.reports),
                    "infra_retries": len(r.infra_errors),
                    "error": r.error,
                },
                cycle=wave,
            )
        bad = [r for r in results if r.status == "infra"]
        if bad:
            raise InfraStop(
                f"wave {wave}: branch {bad[0].index} ({bad[0].project.id}) failed 3 times: {bad[0].error}"
            )
        records = []
        for r in results:
            self.memory, rec = commit_branch(
                self.run,
                r,
                snapshot if self.memory is None else self.memory,
                audit_index=self.audit_index,
                wave_key=key,
                wave=wave,
                phase=phase,
                unit=unit,
            )
            records.append(rec)
        return results, records

    def _author(
        self, wave: int, phase: str, failure_summary: str | None, target_passed: bool | None
    ) -> tuple[Handoff, int]:
        """Ask the curriculum (a recorded handoff for this wave is reused); failed turns -> STALLED."""
        if wave in self.pending_handoffs:
            p = self.pending_handoffs[wave]
            return validate_handoff({k: p[k] for k in ("decision", "rationale", "projects")}), int(
                p["turn"]
            ) - 1
        mem = self._ensure_memory()
        request = CurriculumRequest(
            phase=phase,  # type: ignore[arg-type]
            wave=wave,
            targets=self.targets,
            memory=MemoryTree(mem.files) if self.s.curriculum_memory == "read_only" else None,
            results=tuple(self.summaries),
            failure_summary=failure_summary,
            target_passed=target_passed,
        )
        failed = 0
        for turn in range(1, self.s.max_failed_turns + 2):
            text = with_infra_retry(
                self.run, lambda: self.curriculum.author(request), where="curriculum", wave=wave
            )
            try:
                h = parse_handoff(text)
            except HandoffError as e:
                failed += 1
                self.run.append(
                    HANDOFF,
                    {
                        "wave": wave,
                        "phase": phase,
                        "turn": turn,
                        "ok": False,
                        "reason": e.reason,
                        "raw": str(text)[:4000],
                    },
                )
                continue
            self.run.append(HANDOFF, {"wave": wave, "phase": phase, "turn": turn, "ok": True, **h.as_dict()})
            return h, failed
        return Handoff("STALLED", f"{failed} failed curriculum turns", (), exhausted=True), failed

    def _practice_wave(
        self,
        phase: str,
        unit: str,
        target: str | None = None,
        failure_summary: str | None = None,
        target_passed: bool | None = None,
    ) -> tuple[Unit, list[Any]]:
        wave, key = self._open_wave(phase, unit, target)
        h, failed = self._author(wave, phase, failure_summary, target_passed)
        records: list[dict[str, Any]] = []
        if h.decision == "WAVE":
            specs = [
                BranchSpec(
                    self.next_index + i, p, practice_seed(self.s.seed, self.next_index + i), "practice"
                )
                for i, p in enumerate(h.projects)
            ]
            clash = {s.seed for s in specs} & set(self.target_seeds)
            if clash:  # pragma: no cover - odd vs even by construction
                raise AssertionError(f"practice seeds {sorted(clash)} are target seeds")
            _, records = self._run_and_commit(specs, key, wave, phase, unit)
        return self._close_wave(
            key,
            wave,
            phase,
            unit,
            target,
            records,
            decision=h.decision,
            rationale=h.rationale,
            failed_turns=failed,
            turns_exhausted=h.exhausted,
        )

    def _target_test(self, ti: int) -> tuple[Unit, list[Any]]:
        target = self.targets[ti]
        wave, key = self._open_wave("deep", "drs_target", target.id)
        spec = BranchSpec(self.next_index, target, self.target_seeds[ti], "target")
        results, records = self._run_and_commit([spec], key, wave, "deep", "drs_target")
        res = results[0]
        summary: str | None = None
        if res.verdict == "FAIL" and res.actor is not None and res.attempt is not None:
            actor, attempt, report = res.actor, res.attempt, res.reports[-1]
            summary = with_infra_retry(
                self.run,
                lambda: actor.summarise_failure(attempt, report),
                where=f"summarise {target.id}",
                wave=wave,
            )
            hit = self.audit_index.first_hit(summary)
            if hit is not None:
                self.run.append(
                    AUDIT_REJECT,
                    {
                        "wave": wave,
                        "path": "<failure_summary>",
                        "shingle": " ".join(hit),
                        "hidden_from_agents": True,
                    },
                )
                summary = WITHHELD
        return self._close_wave(
            key,
            wave,
            "deep",
            "drs_target",
            target.id,
            records,
            verdict=res.verdict,
            terminal=records[0]["terminal_outcome"],
            failure_summary=summary,
        )

    # -- phases ---------------------------------------------------------------------------------
    def _phase_end(self, phase: str, target: str | None, reason: str) -> None:
        if (phase, target) not in self.phase_ends:
            self.run.append(
                PHASE_END, {"phase": phase, "target": target, "reason": reason, "wave": self.next_wave - 1}
            )
            self.phase_ends.add((phase, target))

    def brs(self) -> str:
        waves = 0
        while True:
            if waves >= self.s.max_waves:
                return "max_waves"
            if self.n["brs_projects"] >= self.s.project_budget:
                return "budget"
            c = self._unit("brs", "broad", None, lambda: self._practice_wave("broad", "brs"))
            waves += 1
            if c["decision"] != "WAVE":
                return "failed_turns" if c.get("turns_exhausted") else c["decision"].lower()

    def drs_target(self, ti: int) -> str:
        tid, steps = self.targets[ti].id, 0
        while steps < self.s.max_drs_steps:
            c = self._unit("drs_target", "deep", tid, lambda: self._target_test(ti))
            steps += 1
            v = c["verdict"]
            if v is None:
                return f"no_verdict_{c['terminal']}"
            if v == "UNVERIFIED":
                return "unverified"  # hand off to external measurement (the frozen evaluation)
            if v == "PASS" and self.s.stop_policy == "verifier_pass":
                return "pass"
            if steps >= self.s.max_drs_steps:
                return "max_drs_steps"
            fs, passed = c.get("failure_summary"), v == "PASS"
            p = self._unit(
                "drs_practice",
                "deep",
                tid,
                partial(self._practice_wave, "deep", "drs_practice", tid, fs, passed),
            )
            if p["decision"] == "WAVE":
                continue
            if p["decision"] == "STALLED":  # still one fresh target test with the latest memory
                f = self._unit("drs_target", "deep", tid, lambda: self._target_test(ti))
                return f"stalled_final_test_{f['verdict'] or f['terminal']}"
            return "saturated_after_pass" if passed else "saturated"
        return "max_drs_steps"

    def _probe(self, wave: int, phase: str) -> None:
        """Recursion-curve probe: the official target scores with the current memory (no learning)."""
        if not self.s.curve or self.s.ablation == "none":
            return
        mem = self._ensure_memory()
        score_targets(
            self.run,
            mem,
            env=self.env,
            actor_factory=self.actor_factory,
            targets=self.targets,
            seeds=self.target_seeds,
            kind=CURVE_POINT,
            detail={"wave": wave, "phase": phase, "memory": mem.tree_hash()},
        )

    # -- the whole run --------------------------------------------------------------------------
    def result(
        self,
        status: Literal["done", "infra"],
        frozen: str | None,
        scores: Mapping[str, float],
        reason: str = "",
    ) -> RsiAgentResult:
        pb = partial_binary(scores) if scores else None
        return RsiAgentResult(
            status=status,
            run_path=self.run.path,
            ablation=self.s.ablation,
            memory=self._ensure_memory(),
            frozen_hash=frozen,
            scores=dict(scores),
            partial=pb.partial if pb else float("nan"),
            binary=pb.binary if pb else float("nan"),
            n_targets=len(self.targets),
            episodes=self.n["episodes"],
            calls=self.n["calls"],
            brs_projects=self.n["brs_projects"],
            practice_projects=self.n["practice_projects"],
            waves=self.next_wave - 1,
            brs_end=self.brs_end,
            drs_ends=dict(self.drs_ends),
            stop_reason=reason,
        )

    def learn_and_evaluate(self) -> RsiAgentResult:
        try:
            if self.s.ablation in ("brs_only", "full"):
                self.brs_end = self.brs()
                self._phase_end("broad", None, self.brs_end)
            if self.s.ablation in ("drs_only", "full"):
                for ti in drs_order(len(self.targets), self.s):
                    t = self.targets[ti]
                    self.drs_ends[t.id] = self.drs_target(ti)
                    self._phase_end("deep", t.id, self.drs_ends[t.id])
            if self.replay:
                raise LedgerError(
                    f"the log has {len(self.replay)} committed waves these settings would not run "
                    f"(first: wave {self.replay[0]['wave']}, {self.replay[0]['unit']})"
                )
            mem = self._ensure_memory()
            frozen, scores = freeze_and_evaluate(
                self.run,
                mem,
                env=self.env,
                actor_factory=self.actor_factory,
                targets=self.targets,
                seeds=self.target_seeds,
                canonical_hash=lambda: self._ensure_memory().tree_hash(),
            )
        except InfraStop as e:
            self.run.append(STOPPED, {"status": "infra", "reason": str(e), "wave": self.next_wave})
            self.run.commit()
            return self.result("infra", None, {}, str(e))
        res = self.result("done", frozen, scores)
        self.run.append(RESULT, res.as_payload())
        self.run.commit()
        return res


def drs_order(n: int, settings: RsiAgentSettings) -> list[int]:
    """The target indices in the order DRS visits them (``drs_order``: as listed, or shuffled by the seed).

    >>> drs_order(4, RsiAgentSettings(drs_order="targets"))
    [0, 1, 2, 3]
    >>> sorted(drs_order(4, RsiAgentSettings(drs_order="seeded", seed=3)))
    [0, 1, 2, 3]
    """
    order = list(range(n))
    if settings.drs_order == "seeded":
        random.Random(f"rsiagent-drs-order-{settings.seed}").shuffle(order)
    return order


def run_rsiagent(
    env: Environment,
    actor_factory: Callable[[], Actor],
    verifier: Verifier,
    curriculum: Curriculum,
    settings: RsiAgentSettings | Mapping[str, Any],
    run: Run,
    *,
    initial_memory: MemoryTree = EMPTY,
) -> RsiAgentResult:
    """Run (or resume) RSIAgent on ``env`` into ``run`` and return the frozen evaluation's result.

    A run that already finished returns its recorded result; one that stopped (``infra``) or was
    killed continues from its last committed wave boundary.
    """
    s = (
        settings
        if isinstance(settings, RsiAgentSettings)
        else RsiAgentSettings.model_validate(dict(settings))
    )
    done = recorded_result(run)
    if done is not None:
        return done
    engine = _Engine(env, actor_factory, verifier, curriculum, s, run, initial_memory)
    engine.start()
    return engine.learn_and_evaluate()
