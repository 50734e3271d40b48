"""Code repair <-> world model: what is encoded, the E0 transition dataset, K-fold cross-fitting.

The adapter's parts, each a concept of RSI-Anything's code-repair W1:

* :mod:`.world_encoding` — state s_t (program + public tests with statuses), action a_t (the
  candidate's diff), context c (one public test or the whole suite), outcome o_{t+1} (statuses,
  error classes, runtimes; never candidate code);
* :mod:`.world_transitions` — the E0 transition dataset (``MutationCoder`` candidates executed on
  every public and hidden test, resumable run directory);
* :mod:`.world_rows` — suite and per-public-test rows, the no-leakage check, featurized batches;
* :mod:`.world_crossfit` — K-fold cross-fitting by problem and the verifier-vs-world-model acceptance;
* ``studies/code_repair_world_compare/world_compare.py`` (a study) — encoders (MiniLM, ``lm:default``) x training recipes (listwise KL, staged
  training) against the static verifier, on any transitions run or JSONL file.

This module scores candidates for the protocol (:func:`score_candidates`), re-exports the parts'
public names, and is the command line:
``python -m rsi_workbench.domains.code_repair.world_adapter build|evaluate RUN_DIR``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rsi_workbench.domains.code_repair.sandbox import TestOutcome
from rsi_workbench.domains.code_repair.tasks import RepairTask
from rsi_workbench.domains.code_repair.world_crossfit import (
    CrossFitConfig,
    CrossFitSplit,
    cross_fit_splits,
    evaluate_crossfit,
    format_crossfit,
    torch_seed,
)
from rsi_workbench.domains.code_repair.world_encoding import (
    PROVENANCE_FLAGS,
    STATUS_INDEX,
    SUITE_CONTEXT,
    encode_action,
    encode_state,
    observed_utility,
    outcome_dict,
    outcome_text,
    render_test,
    suite_outcome_text,
    suite_status,
    test_context,
)
from rsi_workbench.domains.code_repair.world_rows import (
    Rows,
    check_no_leakage,
    rows_to_batch,
    transition_rows,
)
from rsi_workbench.domains.code_repair.world_transitions import (
    Transition,
    TransitionConfig,
    build_transitions,
    load_transitions,
    problem_of,
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
    outs = [(outcome_dict(o) if isinstance(o, TestOutcome) else dict(o)) for o in public_outcomes or ()]
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


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m rsi_workbench.domains.code_repair.world_adapter build RUN_DIR`` (resumable)."""
    import argparse

    from rsi_workbench.domains.code_repair.tasks import load_humanevalfix

    ap = argparse.ArgumentParser(prog="world_adapter")
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="execute MutationCoder candidates on HumanEvalFix (E0 transitions)")
    b.add_argument("run_dir")
    b.add_argument("--limit", type=int, default=None, help="first N tasks only")
    b.add_argument("--skip", type=int, default=0, help="leave out the first N tasks (before --limit)")
    b.add_argument("--k", type=int, default=4)
    b.add_argument("--injected", type=int, default=1)
    b.add_argument("--workers", type=int, default=2)
    b.add_argument("--coder", choices=("mutation", "llm"), default="mutation", help="who proposes the k")
    b.add_argument("--model", default="default", help="--coder llm: the model name (default: SmolLM2)")
    b.add_argument("--max-tokens", type=int, default=256, help="--coder llm: tokens per answer")
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
    tasks = load_humanevalfix()[args.skip :][: args.limit]
    coder, name = None, "mutation-sbfl"
    if args.coder == "llm":  # calls recorded in RUN_DIR/coder/seed0 (replayed on resume)
        from rsi_workbench.domains.code_repair.coder_settings import CoderSettings, open_llm_coder
        from rsi_workbench.models.config import ModelConfig

        settings = CoderSettings(
            kind="llm",
            model=ModelConfig(name=args.model, device="cpu", cpu_threads=1),
            max_tokens=args.max_tokens,
        )
        coder, name = open_llm_coder(settings, Path(args.run_dir), 0), f"llm:{args.model}"
    cfg = TransitionConfig(k=args.k, injected_per_problem=args.injected, workers=args.workers, coder=name)
    build_transitions(args.run_dir, tasks, cfg, coder=coder)
    print(f"{args.run_dir}: {len(load_transitions(args.run_dir))} transitions")


if __name__ == "__main__":
    main()


__all__ = [
    "PROVENANCE_FLAGS",
    "STATUS_INDEX",
    "SUITE_CONTEXT",
    "CandidateScores",
    "CrossFitConfig",
    "CrossFitSplit",
    "Rows",
    "Transition",
    "TransitionConfig",
    "build_transitions",
    "check_no_leakage",
    "cross_fit_splits",
    "encode_action",
    "encode_state",
    "evaluate_crossfit",
    "format_crossfit",
    "load_transitions",
    "main",
    "observed_utility",
    "outcome_dict",
    "outcome_text",
    "problem_of",
    "rows_to_batch",
    "score_candidates",
    "suite_outcome_text",
    "suite_status",
    "render_test",
    "test_context",
    "torch_seed",
    "transition_rows",
]
