"""Code repair bound to the engine: the environment (sandbox feedback), the policy θ (the repair
workflow around ``MutationCoder``) and its feedback-driven update, and the compile-check verifier.

One **online test call** = one run of a program on the task's full public suite (E0); the initial
program counts as one; a task stops when all its public tests pass. Metrics-only audits execute
every candidate on public and hidden tests through an execution cache and are never charged.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import sys
import threading
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, is_dataclass
from pathlib import Path
from typing import Any

from rsi_workbench.agents import Candidate
from rsi_workbench.domains.code_repair import (
    OPERATORS,
    STATUSES,
    MutationCoder,
    RepairFeedback,
    RepairTask,
    Sandbox,
    Status,
    TestOutcome,
    apply_incumbent_rule,
    pass_count,
    state_signature,
)
from rsi_workbench.domains.code_repair.coder import OPERATOR_PRIOR
from rsi_workbench.domains.code_repair.llm_coder import HybridCoder
from rsi_workbench.domains.code_repair.signature import signature_digest
from rsi_workbench.protocol.spec import ImaginedRecord, Observation, PairRecord
from rsi_workbench.sandbox.supervisor import HASH_SEED, SANDBOX_SEMANTICS

STATUS_INDEX: dict[str, int] = {s.value: i for i, s in enumerate(STATUSES)}


@dataclass(frozen=True)
class RepairState:
    """The kept program and its latest public-test outcomes (with line coverage, for SBFL)."""

    program: str
    outcomes: tuple[TestOutcome, ...]
    attempts: tuple[tuple[str, int, int], ...] = ()  # LLM coders: last executed (program, passed, n)

    @property
    def passed(self) -> int:
        return pass_count(self.outcomes)


ATTEMPTS_KEPT = 3  # earlier executed attempts a state carries for the LLM coder's prompt


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _outcome_json(o: TestOutcome) -> dict[str, Any]:
    return {
        "test_id": o.test_id,
        "status": o.status.value,
        "runtime_s": round(o.runtime_s, 4),
        "message": o.message[:300],
        "covered_lines": list(o.covered_lines) if o.covered_lines is not None else None,
    }


def _outcome_from(d: Mapping[str, Any]) -> TestOutcome:
    cov = d.get("covered_lines")
    return TestOutcome(
        str(d["test_id"]),
        Status(d["status"]),
        float(d["runtime_s"]),
        message=str(d.get("message", "")),
        covered_lines=tuple(cov) if cov is not None else None,
    )


CACHE_KEY_VERSION = "v3"  # v3: the judge's sandbox semantics (judge, exact types, fixed hash seed)


class ExecutionCache:
    """Outcomes of (task, suite, program) executed in the sandbox, optionally persisted as JSONL so
    runs of one experiment share executions. A cache hit still costs the same budget. The key covers
    the program, every test's full content, the limits, the isolation plan and the sandbox's
    semantics version and hash seed (``v3``); entries
    written under an older key are ignored with a one-line message, a torn last line is dropped,
    and any other undecodable line is an error naming the file and line."""

    def __init__(self, path: Path | None = None):
        self.path = path
        self.data: dict[str, list[dict[str, Any]]] = {}
        self._lock = threading.Lock()
        if path is not None and path.exists():
            self._load(path)

    def _load(self, path: Path) -> None:
        text = path.read_text()
        lines = text.split("\n")
        stale = 0
        for lineno, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                key, outcomes = str(row["key"]), row["outcomes"]
            except (json.JSONDecodeError, KeyError, TypeError):
                if lineno == len(lines):  # a torn last line from a killed run: cut it before appending
                    with open(path, "r+") as f:
                        f.truncate(len(text) - len(line))
                    print(f"{path}:{lineno}: torn last line dropped", file=sys.stderr)
                    continue
                raise ValueError(f"{path}:{lineno}: undecodable execution-cache line") from None
            if not key.startswith(CACHE_KEY_VERSION + "|"):
                stale += 1
                continue
            self.data[key] = outcomes
        if stale:
            print(
                f"{path}: ignoring {stale} execution(s) cached under an older key (older sandbox semantics, "
                "or a key that did not cover the tests, limits and isolation plan); they will be re-run",
                file=sys.stderr,
            )

    @staticmethod
    def key(
        task_id: str, suite: str, program: str, trace: bool, tests: Sequence[Any] = (), sandbox: Any = None
    ) -> str:
        """The cache key: program, full test content, limits and isolation plan (``sandbox``), and the
        sandbox's semantics version and hash seed (a verdict depends on them)."""
        content = json.dumps(
            [t.model_dump(mode="json") if hasattr(t, "model_dump") else t for t in tests], sort_keys=True
        )
        content += json.dumps({"semantics": SANDBOX_SEMANTICS, "hash_seed": HASH_SEED})
        plan = ""
        if sandbox is not None:
            lim, iso = getattr(sandbox, "limits", None), getattr(sandbox, "isolation", None)
            assert iso is not None and lim is not None, "a sandbox has limits and an isolation plan"
            plan = json.dumps(
                {
                    "limits": asdict(lim) if is_dataclass(lim) and not isinstance(lim, type) else repr(lim),
                    "isolation": iso.key() if hasattr(iso, "key") else repr(iso),  # type: ignore[union-attr]
                },
                sort_keys=True,
            )
        return (
            f"{CACHE_KEY_VERSION}|{task_id}|{suite}|{int(trace)}|{_sha(program)}|{_sha(content)}|{_sha(plan)}"
        )

    def get(self, key: str) -> list[TestOutcome] | None:
        rows = self.data.get(key)
        return [_outcome_from(r) for r in rows] if rows is not None else None

    def put(self, key: str, outcomes: Sequence[TestOutcome]) -> None:
        rows = [_outcome_json(o) for o in outcomes]
        with self._lock:
            self.data[key] = rows
            if self.path is not None:
                with open(self.path, "a") as f:
                    f.write(json.dumps({"key": key, "outcomes": rows}) + "\n")


def observation_from(outcomes: Sequence[TestOutcome], cost: float = 1.0) -> Observation:
    """Feedback of one public-suite run: per-test status labels, utility terms, stop rule (all pass)."""
    n = len(outcomes)
    passed = pass_count(outcomes)
    frac = passed / n if n else 0.0
    return Observation(
        utility_terms={"p_all_pass": float(passed == n), "pass_fraction": frac},
        labels=[STATUS_INDEX[o.status.value] for o in outcomes],
        solved=passed == n,
        cost=cost,
        evidence="E0",
        detail={
            "statuses": [o.status.value for o in outcomes],
            "passed": passed,
            "outcomes": [_outcome_json(o) for o in outcomes],
        },
    )


_INVALID_AUDIT: dict[str, Any] = {  # the audit slot of an invalid candidate: never executed
    "invalid": True,
    "labels": [],
    "utility_terms": {"p_all_pass": 0.0, "pass_fraction": 0.0},
    "all_tests_utility_terms": {"p_all_pass": 0.0, "pass_fraction": 0.0},
    "hidden_all_pass": False,
    "hidden_pass_fraction": 0.0,
}


class CodeRepairEnvironment:
    """X_d/S_d for code repair: tasks, sandboxed public-suite feedback, the incumbent rule, audits."""

    # several tasks evaluated at once by the protocol's concurrent cycle: an evaluation depends only
    # on (task, program) and the execution cache is locked
    concurrent_evaluate = True

    def __init__(
        self,
        tasks: Sequence[RepairTask],
        sandbox: Sandbox,
        *,
        executor: Any = None,
        cache: ExecutionCache | None = None,
        track_attempts: bool = False,
    ):
        self.tasks = {t.task_id: t for t in tasks}
        self.sandbox, self.executor = sandbox, executor
        self.cache = cache or ExecutionCache()
        self.track_attempts = track_attempts  # states carry earlier attempts (the LLM coders' prompts)

    def run(
        self, task_id: str, programs: Sequence[str], suite: str, trace: bool = False
    ) -> list[list[TestOutcome]]:
        """Execute programs on a suite ("public" or "hidden"), through the cache, fanned out together."""
        t = self.tasks[task_id]
        tests = t.public_tests if suite == "public" else t.hidden_tests
        keys = [ExecutionCache.key(task_id, suite, p, trace, tests, self.sandbox) for p in programs]
        out: list[list[TestOutcome] | None] = [self.cache.get(k) for k in keys]
        todo = sorted({p for p, o in zip(programs, out, strict=True) if o is None})
        if todo:
            res = self.sandbox.run_many(todo, tests, t.entry_point, executor=self.executor, trace=trace)
            for p, r in zip(todo, res, strict=True):
                self.cache.put(ExecutionCache.key(task_id, suite, p, trace, tests, self.sandbox), r)
            fresh = dict(zip(todo, res, strict=True))
            out = [o if o is not None else fresh[p] for p, o in zip(programs, out, strict=True)]
        return [o for o in out if o is not None]

    # -- Environment protocol ---------------------------------------------------------------------
    def initial(self, task_id: str) -> tuple[RepairState, Observation]:
        prog = self.tasks[task_id].program
        outs = self.run(task_id, [prog], "public", trace=True)[0]
        return RepairState(prog, tuple(outs)), observation_from(outs)

    def evaluate(self, task_id: str, state: RepairState, action: Candidate) -> Observation:
        return observation_from(self.run(task_id, [action.program], "public", trace=True)[0])

    def advance(
        self, task_id: str, state: RepairState, action: Candidate, observation: Observation
    ) -> RepairState:
        outs = tuple(_outcome_from(d) for d in observation.detail["outcomes"])
        tried = state.attempts
        if self.track_attempts:
            tried = (*tried, (action.program, pass_count(outs), len(outs)))[-ATTEMPTS_KEPT:]
        if apply_incumbent_rule(state.passed, pass_count(outs)):
            return RepairState(action.program, outs, tried)
        return RepairState(state.program, state.outcomes, tried)

    def signature(self, task_id: str, state: RepairState) -> str:
        t = self.tasks[task_id]
        sig = state_signature(
            {"task_id": task_id, "program": state.program, "prompt": t.prompt, "public_tests": t.public_tests}
        )
        return signature_digest(sig)

    def audit(self, task_id: str, state: RepairState, actions: Sequence[Candidate]) -> list[dict[str, Any]]:
        live = [a for a in actions if not a.meta.get("invalid")]  # LLM samples eq. 7 removes: not run
        progs = [a.program for a in live]
        pub = self.run(task_id, progs, "public", trace=True) if progs else []
        hid = self.run(task_id, progs, "hidden") if progs else []
        out = []
        for p, h in zip(pub, hid, strict=True):
            obs = observation_from(p)
            n_all, passed_all = len(p) + len(h), pass_count(p) + pass_count(h)
            out.append(
                {
                    "labels": obs.labels,
                    "utility_terms": obs.utility_terms,
                    "all_tests_utility_terms": {
                        "p_all_pass": float(passed_all == n_all),
                        "pass_fraction": passed_all / n_all,
                    },
                    "hidden_all_pass": pass_count(h) == len(h),
                    "hidden_pass_fraction": pass_count(h) / len(h),
                }
            )
        if len(live) < len(actions):  # invalid candidates keep their slot, with no outcome
            it = iter(out)
            out = [_INVALID_AUDIT if a.meta.get("invalid") else next(it) for a in actions]
        return out

    def final_audit(self, task_id: str, state: RepairState) -> dict[str, Any]:
        h = self.run(task_id, [state.program], "hidden")[0]
        return {
            "hidden_all_pass": pass_count(h) == len(h),
            "hidden_pass_fraction": pass_count(h) / len(h),
            "public_all_pass": state.passed == len(state.outcomes),
            "program_sha": _sha(state.program),
        }

    def dump_state(self, state: RepairState) -> dict[str, Any]:
        out: dict[str, Any] = {
            "program": state.program,
            "outcomes": [_outcome_json(o) for o in state.outcomes],
        }
        if state.attempts:  # only runs of the LLM coders carry attempts
            out["attempts"] = [list(a) for a in state.attempts]
        return out

    def load_state(self, data: Mapping[str, Any]) -> RepairState:
        tried = tuple((str(p), int(a), int(n)) for p, a, n in data.get("attempts", []))
        return RepairState(str(data["program"]), tuple(_outcome_from(d) for d in data["outcomes"]), tried)

    def dump_action(self, action: Candidate) -> dict[str, Any]:
        return {"program": action.program, "diff": action.diff, "meta": action.meta}

    def load_action(self, data: Mapping[str, Any]) -> Candidate:
        return Candidate(str(data["program"]), str(data.get("diff", "")), dict(data.get("meta", {})))


class CompileVerifier:
    """V_d validity for code repair: a candidate must compile (everything else is for the tests)."""

    def validate(self, task_id: str, state: RepairState, action: Candidate) -> tuple[bool, str]:
        if action.meta.get("invalid"):  # an LLM sample the coder found invalid (reason recorded)
            return False, str(action.meta["invalid"])
        err = Sandbox.compile_error(action.program)
        return (err is None), (err or "")


# ------------------------------------------------------------------------------------------------
# The policy θ: the repair workflow and its feedback-driven update (eq. 9)
# ------------------------------------------------------------------------------------------------
class RepairPolicy:
    """θ for code repair: ``MutationCoder`` with versioned operator preferences (its ``prior``) and
    location preference (``uncovered_weight``: how much edits on lines no failing test covers are
    tried). ``update`` re-weights both from observed feedback — a real workflow update."""

    def __init__(
        self,
        env: CodeRepairEnvironment,
        prior: Mapping[str, float] | None = None,
        uncovered_weight: float = 0.02,
        generation: int = 0,
        learning_rate: float = 1.0,
        *,
        kind: str = "mutation",
        llm: Any = None,
    ):
        self.env = env
        self.prior = {op: float((prior or OPERATOR_PRIOR).get(op, 1.0)) for op in OPERATORS}
        self.uncovered_weight = float(uncovered_weight)
        self.generation = generation
        self.learning_rate = learning_rate
        if kind != "mutation" and llm is None:
            raise ValueError(f"coder kind {kind!r} needs an LLMCoder")
        self.kind, self.llm = kind, llm  # the model coder is fixed: updates re-weight the mutants only
        blob = json.dumps([sorted(self.prior.items()), self.uncovered_weight], sort_keys=True)
        self.version = f"policy-{generation}-{_sha(blob)[:8]}" + ("" if kind == "mutation" else f"-{kind}")
        self.coder = MutationCoder(
            sandbox=env.sandbox,
            prior=self.prior,
            uncovered_weight=self.uncovered_weight,
            executor=env.executor,
        )

    @property
    def concurrent_propose(self) -> bool:
        """A model coder proposes several tasks at once in the protocol's concurrent cycle (its
        requests are independent per task: seeds from (seed, cycle, task), memo and earlier
        candidates kept per task, a thread-safe recorder); the mutation coder, CPU-bound, does not."""
        return self.kind != "mutation"

    def before_concurrent_propose(self) -> None:
        """Version the model coder's prompt template now, in the loop's thread, before the tasks'
        proposals run in threads: recorded from a thread it would land in that task's held records,
        after the earlier tasks' calls (the sequential loop records it before the first call)."""
        use = getattr(getattr(self.llm, "llm", None), "use_prompt", None)
        if use is not None:
            use(self.llm.template)

    def propose(self, task_id: str, state: RepairState, k: int, rng: random.Random) -> list[Candidate]:
        task = self.env.tasks[task_id]
        feedback = RepairFeedback(state.program, state.outcomes, state.attempts)
        if self.kind == "llm":
            return list(self.llm.propose(task, state.program, feedback, k, rng))
        if self.kind == "hybrid":
            return HybridCoder(self.llm, self.coder).propose(task, state.program, feedback, k, rng)
        return self.coder.propose(task, state.program, feedback, k, rng)

    def update(
        self, records: Sequence[PairRecord], imagined: Sequence[ImaginedRecord], *, seed: int
    ) -> RepairPolicy:
        """Re-weight operator and location preferences by smoothed improvement rates (eq. 9).

        An executed candidate *improves* when it passes more public tests than the program it edited.
        Each operator's prior is scaled by (rate_op / mean rate)^lr with a Beta(1, 1)-style prior;
        ``uncovered_weight`` is scaled by the improvement rate of uncovered-line edits relative to
        covered ones. Admitted imagined outcomes (D_sim, E1) count with weight 0.25.
        """
        stats: dict[str, list[float]] = {op: [0.0, 0.0] for op in OPERATORS}
        loc = {"covered": [0.0, 0.0], "uncovered": [0.0, 0.0]}

        def count(meta: Mapping[str, Any], gain: float, w: float) -> None:
            for op in meta.get("operators", []):
                if op in stats:
                    stats[op][0] += w * gain
                    stats[op][1] += w
            for s in meta.get("suspiciousness", []):
                key = "covered" if s > 0 else "uncovered"
                loc[key][0] += w * gain
                loc[key][1] += w

        for r in records:
            before = sum(o["status"] == "AC" for o in r.state["outcomes"])
            count(r.action.get("meta", {}), float(r.observation.detail.get("passed", 0) > before), 1.0)
        for im in imagined:
            n = max(len(im.state["outcomes"]), 1)
            before = sum(o["status"] == "AC" for o in im.state["outcomes"]) / n
            gain = float(im.prediction.utility_terms.get("pass_fraction", 0.0) > before)
            count(im.action.get("meta", {}), gain, 0.25)
        rate = {op: (s + 0.5) / (n + 1.0) for op, (s, n) in stats.items()}
        mean = sum(rate.values()) / len(rate)
        prior = {
            op: min(5.0, max(0.05, self.prior[op] * (rate[op] / mean) ** self.learning_rate))
            for op in OPERATORS
        }
        rc = (loc["covered"][0] + 0.5) / (loc["covered"][1] + 1.0)
        ru = (loc["uncovered"][0] + 0.5) / (loc["uncovered"][1] + 1.0)
        uw = min(1.0, max(0.001, self.uncovered_weight * (ru / rc) ** self.learning_rate))
        return RepairPolicy(
            self.env, prior, uw, self.generation + 1, self.learning_rate, kind=self.kind, llm=self.llm
        )

    def to_bytes(self) -> bytes:
        state: dict[str, Any] = {
            "prior": self.prior,
            "uncovered_weight": self.uncovered_weight,
            "generation": self.generation,
            "learning_rate": self.learning_rate,
        }
        if self.kind != "mutation":  # the model itself is the run's coder block, not a checkpoint
            state["coder"] = self.kind
        return json.dumps(state, sort_keys=True).encode()

    @classmethod
    def from_bytes(cls, env: CodeRepairEnvironment, data: bytes, llm: Any = None) -> RepairPolicy:
        d = json.loads(data)
        return cls(
            env,
            d["prior"],
            d["uncovered_weight"],
            d["generation"],
            d.get("learning_rate", 1.0),
            kind=d.get("coder", "mutation"),
            llm=llm,
        )


def entropy(p: Sequence[float]) -> float:
    return -sum(x * math.log(x) for x in p if x > 0)
