"""Code repair <-> world model: what is encoded, the E0 transition dataset, K-fold cross-fitting.

Encoding (defined, not improvised; RSI-Anything code-repair W1):

* state s_t — the current program plus the *public* tests and their latest statuses
  (:func:`encode_state`); hidden tests are never in any context (checked by
  :func:`check_no_leakage`);
* action a_t — the candidate's unified diff against the current program (:func:`encode_action`);
* context c — one public test (per-test rows) or :data:`SUITE_CONTEXT` (whole-suite rows);
* next state o_{t+1} for the EMA target — the execution outcome summary: statuses, error classes,
  runtimes (:func:`outcome_text`), never the candidate code itself.

Transitions come from ``MutationCoder`` candidates executed in the sandbox on every public and
hidden test (evidence level E0, with provenance), recorded in a resumable run directory.
HumanEvalFix and HumanEval share their 164 problems, so evaluation uses K-fold cross-fitting by
problem (:func:`cross_fit_splits`): for evaluation fold f the gate fold is f+1 and the rest train;
training states are the training folds' HumanEvalFix bugs plus bugs injected into their reference
solutions; gate and audit labels never enter training (manifest flags, checked).
"""

from __future__ import annotations

import hashlib
import random
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rsi_workbench.config import StrictModel
from rsi_workbench.domains.code_repair.coder import MutationCoder, RepairFeedback, inject_bugs, unified_diff
from rsi_workbench.domains.code_repair.sandbox import STATUSES, Sandbox, Status, TestOutcome
from rsi_workbench.domains.code_repair.tasks import RepairTask, TestCase
from rsi_workbench.records import Run

SUITE_CONTEXT = "Whole test suite of the task: public and hidden tests (hidden test content withheld)."
STATUS_INDEX = {s.value: i for i, s in enumerate(STATUSES)}
PROVENANCE_FLAGS = {
    "context_contains_private_case_inputs": False,
    "context_contains_private_expected_outputs": False,
    "target_contains_candidate_code": False,
    "gate_or_final_labels_used": False,
}


# ------------------------------------------------------------------------------------- encoding
def _error_class(message: str) -> str:
    m = re.match(r"\s*([A-Za-z_][A-Za-z0-9_.]*(Error|Exception|Interrupt|Exit))", message or "")
    return m.group(1) if m else ("error" if message else "none")


def test_context(test: TestCase | Mapping[str, Any]) -> str:
    """Context of a per-test row: one public test's id and code."""
    t = test.model_dump() if hasattr(test, "model_dump") else dict(test)
    code = t.get("code") or ""
    asserts = [ln.strip() for ln in code.splitlines() if ln.strip().startswith("assert")]
    body = (
        "\n".join(asserts)
        if asserts
        else code.strip() or f"args={t.get('args')!r} expected={t.get('expected')!r}"
    )
    return f"Public test {t['id']}:\n{body}"


def encode_state(task: RepairTask, program: str, public_outcomes: Sequence[Mapping[str, Any]] | None) -> str:
    """s_t: the program and the public tests with their latest statuses (``None``: not yet run)."""
    status = {o["test_id"]: o["status"] for o in public_outcomes or ()}
    lines = [
        f"Task {task.task_id} (entry point {task.entry_point})",
        "Program:",
        program.rstrip(),
        "Public tests:",
    ]
    for t in task.public_tests:
        lines.append(f"[{status.get(t.id, 'not run')}] {test_context(t)}")
    return "\n".join(lines)


def encode_action(program: str, candidate_program: str) -> str:
    """a_t: the candidate's unified diff against the current program."""
    return "Candidate action:\n" + (unified_diff(program, candidate_program) or "(no change)")


def outcome_text(outcomes: Sequence[Mapping[str, Any]]) -> str:
    """o_{t+1}: per-test status, error class and runtime (rounded to 10 ms); no code."""
    if not outcomes:
        raise ValueError("outcome_text: no outcomes")
    parts = [
        f"{o['test_id']}: {o['status']} {_error_class(o.get('message', ''))} {float(o['runtime_s']):.2f}s"
        for o in outcomes
    ]
    passed = sum(o["status"] == "AC" for o in outcomes)
    return f"Outcome: {passed}/{len(outcomes)} passed\n" + "\n".join(parts)


def suite_outcome_text(outcomes: Sequence[Mapping[str, Any]]) -> str:
    """Whole-suite outcome summary (status counts, pass fraction, total runtime); no test content."""
    counts = {s.value: 0 for s in STATUSES}
    for o in outcomes:
        counts[o["status"]] += 1
    total = sum(float(o["runtime_s"]) for o in outcomes)
    c = " ".join(f"{k}={v}" for k, v in counts.items())
    return f"Suite outcome: {c}; pass fraction {counts['AC'] / len(outcomes):.2f}; runtime {total:.2f}s"


def suite_status(outcomes: Sequence[Mapping[str, Any]]) -> int:
    """5-class status of a whole suite: AC if every test passes, else the first failing test's status."""
    for o in outcomes:
        if o["status"] != "AC":
            return STATUS_INDEX[o["status"]]
    return STATUS_INDEX["AC"]


def observed_utility(outcomes: Sequence[Mapping[str, Any]]) -> float:
    """Equation 7 on observed outcomes: 1[all pass] + 0.25 * pass fraction."""
    frac = sum(o["status"] == "AC" for o in outcomes) / len(outcomes)
    return float(frac == 1.0) + 0.25 * frac


def _outcome_dict(o: TestOutcome) -> dict[str, Any]:
    return {
        "test_id": o.test_id,
        "status": o.status.value if isinstance(o.status, Status) else str(o.status),
        "runtime_s": round(float(o.runtime_s), 4),
        "message": (o.message or "")[:300],
    }


# ------------------------------------------------------------------------------ cross-fitting
def problem_of(task_id: str) -> str:
    """``Python/12`` / ``HumanEval/12`` -> ``12``: HumanEvalFix and HumanEval share problems."""
    return task_id.rsplit("/", 1)[-1]


@dataclass(frozen=True)
class CrossFitSplit:
    """Problems for one evaluation fold: audit (evaluated), gate (calibration/gates), train."""

    fold: int
    audit: frozenset[str]
    gate: frozenset[str]
    train: frozenset[str]

    def __post_init__(self) -> None:
        assert not (self.audit & self.gate or self.audit & self.train or self.gate & self.train), (
            f"fold {self.fold}: train/gate/audit problems overlap"
        )

    def role(self, problem: str) -> str:
        return "audit" if problem in self.audit else "gate" if problem in self.gate else "train"


def cross_fit_splits(problems: Iterable[str], k: int = 4, seed: int = 0) -> list[CrossFitSplit]:
    """K folds by problem (seeded); fold f is audit, fold f+1 gate, the others train."""
    if k < 3:
        raise ValueError(f"cross-fitting needs k >= 3 (audit, gate, train folds); got {k}")
    probs = sorted(set(problems), key=lambda p: hashlib.sha256(f"{seed}:{p}".encode()).hexdigest())
    folds = [frozenset(probs[i::k]) for i in range(k)]
    out = []
    for f in range(k):
        train = frozenset().union(*(folds[j] for j in range(k) if j not in (f, (f + 1) % k)))
        out.append(CrossFitSplit(f, folds[f], folds[(f + 1) % k], train))
    covered = [p for s in out for p in s.audit]
    assert sorted(covered) == sorted(probs), "every problem is audited exactly once"
    return out


# ------------------------------------------------------------------------- transition dataset
class TransitionConfig(StrictModel):
    """How the E0 transition dataset is built (frozen into the run's config)."""

    k: int = 4  # candidates per state (the paper's comparison units have 4)
    injected_per_problem: int = 1  # extra training states: bugs injected into the reference solution
    seed: int = 0
    workers: int = 2
    coder: str = "mutation-sbfl"


def _states(tasks: Sequence[RepairTask], cfg: TransitionConfig) -> list[tuple[str, str, RepairTask]]:
    """(group_id, source, task-with-state-program) for every HumanEvalFix bug and injected bug."""
    out: list[tuple[str, str, RepairTask]] = []
    for task in tasks:
        out.append((f"{task.task_id}#humanevalfix", "humanevalfix", task))
        if cfg.injected_per_problem and task.reference:
            rng = random.Random(f"{cfg.seed}:{task.task_id}:inject")
            for i, bug in enumerate(
                inject_bugs(task.reference, task.entry_point, cfg.injected_per_problem, rng)
            ):
                out.append(
                    (
                        f"{task.task_id}#injected{i}",
                        "injected",
                        task.model_copy(update={"program": bug.program}),
                    )
                )
    return out


def build_transitions(
    run_dir: str | Path,
    tasks: Sequence[RepairTask],
    config: TransitionConfig | None = None,
    *,
    sandbox: Sandbox | None = None,
    progress: bool = True,
) -> Path:
    """Execute ``k`` MutationCoder candidates per state on all public + hidden tests; resumable.

    Events per state (one group commit each): ``world_state`` (program, public outcomes),
    ``world_transition`` per candidate (E0 outcomes on public and hidden tests, provenance) and
    ``world_group_done``. Re-running skips finished groups.
    """
    from rsi_workbench.execute import make_executor

    cfg = config or TransitionConfig()
    run = Run.create(run_dir, cfg, kind="world_transitions", exist_ok=True)
    done = {e.payload["group_id"] for e in run.events("world_group_done")}
    sb = sandbox or Sandbox()
    coder = MutationCoder(sandbox=sb)
    states = [s for s in _states(tasks, cfg) if s[0] not in done]
    it: Any = states
    if progress:
        from tqdm.auto import tqdm

        it = tqdm(states, desc="transitions", unit="state")
    iso = sb.isolation.record()
    with make_executor("process" if cfg.workers > 1 else "serial", cfg.workers) as ex:
        for group_id, source, task in it:
            public = sb.run_suite(task.program, task.public_tests, task.entry_point, ex, trace=True)
            feedback = RepairFeedback(task.program, tuple(public))
            rng = random.Random(f"{cfg.seed}:{group_id}:propose")
            cands = coder.propose(task, task.program, feedback, cfg.k, rng)
            progs = [c.program for c in cands]
            tests = list(task.public_tests) + list(task.hidden_tests)
            results = sb.run_many(progs, tests, task.entry_point, executor=ex) if progs else []
            n_pub = len(task.public_tests)
            run.append(
                "world_state",
                {
                    "group_id": group_id,
                    "task_id": task.task_id,
                    "problem": problem_of(task.task_id),
                    "source": source,
                    "program": task.program,
                    "public": [_outcome_dict(o) for o in public],
                },
            )
            for i, (c, outs) in enumerate(zip(cands, results)):
                run.append(
                    "world_transition",
                    {
                        "group_id": group_id,
                        "candidate": i,
                        "program": c.program,
                        "meta": {k: v for k, v in c.meta.items() if isinstance(v, str | int | float | list)},
                        "public": [_outcome_dict(o) for o in outs[:n_pub]],
                        "hidden": [_outcome_dict(o) for o in outs[n_pub:]],
                        "evidence": "E0",
                        "provenance": {"coder": coder.name, "seed": cfg.seed, "sandbox": iso},
                    },
                )
            run.append("world_group_done", {"group_id": group_id, "candidates": len(cands)})
            run.commit()
    run.update_manifest(
        states=len(run.events("world_group_done")),
        evidence="E0",
        hidden_tests_in_context=False,  # encode_state/test_context only ever render public tests
        **PROVENANCE_FLAGS,
    )
    return Path(run_dir)


@dataclass
class Transition:
    """One executed candidate of one state, as read back from the dataset run."""

    group_id: str
    task_id: str
    problem: str
    source: str
    state_program: str
    state_public: list[dict[str, Any]]
    program: str
    public: list[dict[str, Any]]
    hidden: list[dict[str, Any]]


def load_transitions(run_dir: str | Path) -> list[Transition]:
    """Transitions of finished groups only (a group torn by a crash is ignored and rebuilt on resume)."""
    run = Run.open(run_dir)
    done = {e.payload["group_id"] for e in run.events("world_group_done")}
    states = {
        e.payload["group_id"]: e.payload for e in run.events("world_state") if e.payload["group_id"] in done
    }
    out = []
    for e in run.events("world_transition"):
        p = e.payload
        s = states.get(p["group_id"])
        if s is None:
            continue
        out.append(
            Transition(
                p["group_id"],
                s["task_id"],
                s["problem"],
                s["source"],
                s["program"],
                s["public"],
                p["program"],
                p["public"],
                p["hidden"],
            )
        )
    return out


# ------------------------------------------------------------------------------------ rows
@dataclass
class Rows:
    """Text rows + labels for the world model (see ``world.data.TransitionBatch``)."""

    state: list[str]
    action: list[str]
    context: list[str]
    outcome: list[str]
    status: list[int]
    runtime_s: list[float]
    is_suite: list[bool]
    pass_fraction: list[float]
    group: list[str]
    observed_utility: list[float]
    transition: list[int]  # index of the candidate transition each row belongs to
    manifest: dict[str, Any]

    def __len__(self) -> int:
        return len(self.status)


def transition_rows(
    transitions: Sequence[Transition],
    tasks: Mapping[str, RepairTask],
    *,
    role: str,
    suite: bool = True,
    public: bool = True,
) -> Rows:
    """Suite rows (label: hidden suite) and per-public-test rows for ``transitions``; ``role`` is
    recorded in the manifest (``train`` rows must not come from gate/audit problems)."""
    r = Rows([], [], [], [], [], [], [], [], [], [], [], {"role": role, **PROVENANCE_FLAGS})

    def add(**row: Any) -> None:
        for name, value in row.items():
            getattr(r, name).append(value)

    for ti, t in enumerate(transitions):
        task = tasks[t.task_id]
        state = encode_state(task, t.state_program, t.state_public)
        action = encode_action(t.state_program, t.program)
        if suite:
            add(
                state=state,
                action=action,
                context=SUITE_CONTEXT,
                outcome=suite_outcome_text(t.hidden),
                status=suite_status(t.hidden),
                runtime_s=sum(float(o["runtime_s"]) for o in t.hidden),
                is_suite=True,
                pass_fraction=sum(o["status"] == "AC" for o in t.hidden) / len(t.hidden),
                group=t.group_id,
                observed_utility=observed_utility(t.hidden),
                transition=ti,
            )
        if public:
            by_id = {x.id: x for x in task.public_tests}
            for o in t.public:
                add(
                    state=state,
                    action=action,
                    context=test_context(by_id[o["test_id"]]),
                    outcome=outcome_text([o]),
                    status=STATUS_INDEX[o["status"]],
                    runtime_s=float(o["runtime_s"]),
                    is_suite=False,
                    pass_fraction=float("nan"),
                    group=f"{t.group_id}|{o['test_id']}",
                    observed_utility=float(o["status"] == "AC"),
                    transition=ti,
                )
    return r


def _assert_lines(code: str) -> set[str]:
    return {ln.strip() for ln in code.splitlines() if ln.strip().startswith("assert")}


def check_no_leakage(rows: Rows, tasks: Mapping[str, RepairTask], transitions: Sequence[Transition]) -> None:
    """Assert the provenance flags: no hidden-only assert in any state/action/context, no candidate
    code in any target, and train rows only from training problems (the manifest's role)."""
    hidden_only: dict[str, set[str]] = {}
    for tid, task in tasks.items():
        pub = set().union(*(_assert_lines(t.code or "") for t in task.public_tests))
        hidden_only[tid] = set().union(*(_assert_lines(t.code or "") for t in task.hidden_tests)) - pub
    for i in range(len(rows)):
        t = transitions[rows.transition[i]]
        text = rows.state[i] + rows.action[i] + rows.context[i]
        for line in hidden_only[t.task_id]:
            assert line not in text, f"hidden test leaked into a context ({t.task_id}): {line[:80]}"
        added = [
            ln[1:].strip()
            for ln in rows.action[i].splitlines()
            if ln.startswith("+") and not ln.startswith("+++")
        ]
        for ln in added:
            assert not (len(ln) >= 12 and ln in rows.outcome[i]), (
                f"candidate code in a target ({t.task_id}): {ln[:80]}"
            )
    assert rows.manifest["gate_or_final_labels_used"] is False


def rows_to_batch(rows: Rows, model_featurize: Any) -> Any:
    """Featurize rows (``model_featurize(texts) -> [N, H]``, e.g. ``WorldModel.features``) into a batch."""
    from rsi_workbench.world.data import make_batch

    gid = {g: i for i, g in enumerate(dict.fromkeys(rows.group))}
    return make_batch(
        model_featurize(rows.state),
        model_featurize(rows.action),
        model_featurize(rows.context),
        rows.status,
        runtime_s=rows.runtime_s,
        is_suite=rows.is_suite,
        pass_fraction=rows.pass_fraction,
        group=[gid[g] for g in rows.group],
        outcome=model_featurize(rows.outcome),
    )


# ------------------------------------------------------------------- scoring for the protocol
@dataclass
class CandidateScores:
    """World-model scores of k candidates for one state (for selection, eq. 7)."""

    utility: np.ndarray  # [k]
    p_all_pass: np.ndarray  # [k]
    pass_fraction: np.ndarray  # [k]
    public_status_probs: np.ndarray  # [k, n_public, 5]
    public_runtime_s: np.ndarray  # [k, n_public]
    component_version: str


def score_candidates(
    world_model: Any,
    task: RepairTask,
    program: str,
    public_outcomes: Sequence[TestOutcome | Mapping[str, Any]] | None,
    candidate_programs: Sequence[str],
) -> CandidateScores:
    """Score candidate programs with a ``world.api.WorldModel``: suite utility + per-public-test statuses."""
    outs = [(_outcome_dict(o) if isinstance(o, TestOutcome) else dict(o)) for o in public_outcomes or ()]
    state = encode_state(task, program, outs)
    k, n = len(candidate_programs), len(task.public_tests)
    ctxs = [SUITE_CONTEXT] + [test_context(t) for t in task.public_tests]
    actions = [encode_action(program, cand) for cand in candidate_programs for _ in ctxs]
    contexts = ctxs * k
    states = [state] * len(contexts)
    p = world_model.predict(states, actions, contexts)
    idx = np.arange(k) * (n + 1)
    per = np.array([i + 1 + j for i in idx for j in range(n)], dtype=int)
    return CandidateScores(
        utility=p.utility[idx],
        p_all_pass=p.p_all_pass[idx],
        pass_fraction=p.pass_fraction[idx],
        public_status_probs=p.status_probs[per].reshape(k, n, 5),
        public_runtime_s=p.runtime_s[per].reshape(k, n),
        component_version=p.component_version,
    )


# ------------------------------------------------------------------ cross-fitted acceptance
def _subset_rows(rows: Rows, keep: Sequence[int]) -> Rows:
    vals = {f: [getattr(rows, f)[i] for i in keep] for f in Rows.__dataclass_fields__ if f != "manifest"}
    return Rows(**vals, manifest=dict(rows.manifest))


def _quality(model: Any, batch: Any, rows: Rows, exclude: set[int]) -> dict[str, Any]:
    """Predictions on audit rows -> (suite utility, suite probs, public probs/runtimes) for pooling."""
    from rsi_workbench.world.train import predict_batch

    p = predict_batch(model, batch)
    suite = np.array(rows.is_suite)
    pub = ~suite & ~np.isin(np.array(rows.transition), list(exclude))
    return {
        "suite_pred_utility": p.utility[suite],
        "suite_obs_utility": np.array(rows.observed_utility)[suite],
        "suite_group": np.array(rows.group)[suite],
        "suite_probs": p.suite_status_probs[suite],
        "suite_status": np.array(rows.status)[suite],
        "public_probs": p.status_probs[pub],
        "public_status": np.array(rows.status)[pub],
        "public_runtime_pred": p.runtime_s[pub],
        "public_runtime_obs": np.array(rows.runtime_s)[pub],
    }


def _metrics(parts: Sequence[dict[str, Any]]) -> dict[str, float]:
    from rsi_workbench.world import brier_5class, ece, nll, ranking_accuracy, runtime_error

    cat = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
    return {
        "ranking_accuracy": ranking_accuracy(
            cat["suite_pred_utility"], cat["suite_obs_utility"], cat["suite_group"]
        ),
        "brier_suite": brier_5class(cat["suite_probs"], cat["suite_status"]),
        "brier_public": brier_5class(cat["public_probs"], cat["public_status"]),
        "ece_suite": ece(cat["suite_probs"], cat["suite_status"]).ece,
        "nll_suite": nll(cat["suite_probs"], cat["suite_status"]),
        "runtime_mae_public": runtime_error(cat["public_runtime_pred"], cat["public_runtime_obs"]),
        "suite_rows": float(len(cat["suite_status"])),
        "public_rows": float(len(cat["public_status"])),
    }


class CrossFitConfig(StrictModel):
    """The HumanEvalFix cross-fitted acceptance: folds, seeds, training and adaptation settings."""

    backbone: str = "minilm"
    k: int = 4
    seeds: tuple[int, ...] = (0, 1, 2)
    epochs: int = 10
    adapt_epochs: int = 20
    adapt_trainable: tuple[str, ...] = ("opf", "readout")


def evaluate_crossfit(
    run_dir: str | Path, config: CrossFitConfig | None = None, progress: bool = True
) -> dict[str, Any]:
    """Static verifier vs world model (before / after one Adapt on audit tasks' public-test feedback),
    K-fold cross-fitted by problem, per seed; features cached once as an artifact of the dataset run."""
    from rsi_workbench.domains.code_repair.tasks import load_humanevalfix
    from rsi_workbench.world.encoders import FeatureCache, load_backbone
    from rsi_workbench.world.model import OutcomeWorldModel, WorldModelConfig
    from rsi_workbench.world.train import TrainConfig, adapt, fit_temperature, predict_batch, train
    from rsi_workbench.world.verifier import StaticVerifier

    cfg = config or CrossFitConfig()
    tasks = {t.task_id: t for t in load_humanevalfix()}
    transitions = load_transitions(run_dir)
    rows_all = transition_rows(transitions, tasks, role="all")
    backbone = load_backbone(cfg.backbone)
    run = Run.open(run_dir, mode="a")
    key = f"feature_cache_{backbone.fingerprint}"
    cache = (
        FeatureCache.from_bytes(run.artifacts.get(run.manifest[key]))
        if key in run.manifest
        else FeatureCache(backbone.fingerprint, backbone.hidden_size)
    )
    texts = list(dict.fromkeys(rows_all.state + rows_all.action + rows_all.context + rows_all.outcome))
    n_before = len(cache.vectors)
    cache.featurize(backbone, texts, progress=progress)
    if len(cache.vectors) != n_before or key not in run.manifest:
        run.update_manifest(**{key: run.artifacts.put(cache.to_bytes(), name=f"{key}.npz")})
    run.close()

    def feats(ts: Sequence[str]) -> np.ndarray:
        return cache.featurize(backbone, ts)

    problems = sorted({t.problem for t in transitions})
    results: dict[str, Any] = {
        "config": cfg.model_dump(),
        "backbone_stats": dict(backbone.stats),
        "seeds": {},
    }
    for seed in cfg.seeds:
        pooled: dict[str, list[dict[str, Any]]] = {"verifier": [], "world_before": [], "world_after": []}
        for split in cross_fit_splits(problems, cfg.k, seed):
            role = [split.role(t.problem) for t in transitions]
            tr_idx = [i for i, r in enumerate(role) if r == "train"]
            gate_idx = [
                i for i, r in enumerate(role) if r == "gate" and transitions[i].source == "humanevalfix"
            ]
            aud_idx = [
                i for i, r in enumerate(role) if r == "audit" and transitions[i].source == "humanevalfix"
            ]
            assert not (
                {transitions[i].problem for i in tr_idx}
                & {transitions[i].problem for i in gate_idx + aud_idx}
            )
            tr_t = [transitions[i] for i in tr_idx]
            gate_t = [transitions[i] for i in gate_idx]
            aud_t = [transitions[i] for i in aud_idx]
            train_rows = transition_rows(tr_t, tasks, role="train")
            check_no_leakage(train_rows, tasks, tr_t)
            gate_rows = transition_rows(gate_t, tasks, role="gate")
            aud_rows = transition_rows(aud_t, tasks, role="audit")
            train_b, gate_b, aud_b = (rows_to_batch(r, feats) for r in (train_rows, gate_rows, aud_rows))
            wcfg = WorldModelConfig(input_dim=backbone.hidden_size)
            tcfg = TrainConfig(seed=seed, epochs=cfg.epochs, cpu_threads=1, progress=False)
            torch_seed(seed)
            wm = OutcomeWorldModel(wcfg)
            train(wm, train_b, tcfg)
            fit_temperature(wm, gate_b)
            torch_seed(seed)
            ver = StaticVerifier(wcfg)
            train(ver, train_b, tcfg)
            fit_temperature(ver, gate_b)
            # D_adapt: public-test feedback of the candidate the world model selects in each audit state
            pred = predict_batch(wm, aud_b)
            best: dict[str, tuple[float, int]] = {}
            for i in range(len(aud_rows)):
                if aud_rows.is_suite[i]:
                    g, u = aud_rows.group[i], float(pred.utility[i])
                    if g not in best or u > best[g][0]:
                        best[g] = (u, aud_rows.transition[i])
            chosen = {t for _, t in best.values()}
            adapt_keep = [
                i
                for i in range(len(aud_rows))
                if not aud_rows.is_suite[i] and aud_rows.transition[i] in chosen
            ]
            adapt_rows = _subset_rows(aud_rows, adapt_keep)
            acfg = TrainConfig(seed=seed, epochs=cfg.adapt_epochs, cpu_threads=1, progress=False)
            wm2, _ = adapt(wm, rows_to_batch(adapt_rows, feats), trainable=cfg.adapt_trainable, config=acfg)
            pooled["verifier"].append(_quality(ver, aud_b, aud_rows, chosen))
            pooled["world_before"].append(_quality(wm, aud_b, aud_rows, chosen))
            pooled["world_after"].append(_quality(wm2, aud_b, aud_rows, chosen))
            if progress:
                print(
                    f"seed {seed} fold {split.fold}: train {len(tr_t)} gate {len(gate_t)} audit {len(aud_t)} transitions",
                    flush=True,
                )
        results["seeds"][str(seed)] = {name: _metrics(parts) for name, parts in pooled.items()}
    return results


def torch_seed(seed: int) -> None:
    import torch

    torch.manual_seed(seed)


def format_crossfit(results: Mapping[str, Any]) -> str:
    """A table: metric x (verifier, world model before/after Adapt), mean +- sd over seeds."""
    seeds = list(results["seeds"].values())
    names = ["verifier", "world_before", "world_after"]
    metrics = [
        "ranking_accuracy",
        "brier_suite",
        "brier_public",
        "ece_suite",
        "nll_suite",
        "runtime_mae_public",
    ]
    lines = [f"{'metric':<20}" + "".join(f"{n:>22}" for n in names)]
    for m in metrics:
        cells = []
        for n in names:
            v = np.array([s[n][m] for s in seeds], dtype=float)
            cells.append(
                f"{np.nanmean(v):>14.4f} +- {np.nanstd(v):.4f}" if np.isfinite(v).any() else f"{'n/a':>22}"
            )
        lines.append(f"{m:<20}" + "".join(f"{c:>22}" for c in cells))
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m rsi_workbench.experiments.code_repair.world_adapter build RUN_DIR`` (resumable)."""
    import argparse

    from rsi_workbench.domains.code_repair.tasks import load_humanevalfix

    ap = argparse.ArgumentParser(prog="world_adapter")
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="execute MutationCoder candidates on HumanEvalFix (E0 transitions)")
    b.add_argument("run_dir")
    b.add_argument("--limit", type=int, default=None, help="first N tasks only")
    b.add_argument("--k", type=int, default=4)
    b.add_argument("--injected", type=int, default=1)
    b.add_argument("--workers", type=int, default=2)
    e = sub.add_parser("evaluate", help="cross-fitted verifier vs world model on a built dataset")
    e.add_argument("run_dir")
    e.add_argument("--backbone", default="minilm")
    e.add_argument("--seeds", default="0,1,2")
    e.add_argument("--epochs", type=int, default=10)
    e.add_argument("--out", default=None, help="write the results JSON here")
    args = ap.parse_args(argv)
    if args.cmd == "evaluate":
        import json

        cfg_e = CrossFitConfig(
            backbone=args.backbone, seeds=tuple(int(x) for x in args.seeds.split(",")), epochs=args.epochs
        )
        res = evaluate_crossfit(args.run_dir, cfg_e)
        if args.out:
            Path(args.out).write_text(json.dumps(res, indent=1, default=float))
        print(format_crossfit(res))
        return
    tasks = load_humanevalfix()[: args.limit]
    cfg = TransitionConfig(k=args.k, injected_per_problem=args.injected, workers=args.workers)
    build_transitions(args.run_dir, tasks, cfg)
    print(f"{args.run_dir}: {len(load_transitions(args.run_dir))} transitions")


if __name__ == "__main__":
    main()
