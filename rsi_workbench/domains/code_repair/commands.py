"""``rsi-workbench tasks ...``: validate repair-task files (and, later, run the oracle reference)."""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from typing import Any


def cmd_tasks_validate(args: argparse.Namespace) -> int:
    """Validate a JSONL task file; with ``--run`` also check that each reference passes its tests."""
    from rsi_workbench.domains.code_repair.tasks import TaskFileError, load_task_file

    try:
        tasks = load_task_file(args.file)
    except TaskFileError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    n_pub = sum(len(t.public_tests) for t in tasks)
    n_hid = sum(len(t.hidden_tests) for t in tasks)
    kinds = Counter(x.kind for t in tasks for x in [*t.public_tests, *t.hidden_tests])
    shape = (
        f"{n_pub} public and {n_hid} hidden tests "
        f"({', '.join(f'{k}: {v}' for k, v in sorted(kinds.items()))}); "
        f"{sum(t.reference is not None for t in tasks)} with a reference"
    )
    if not args.run:
        print(f"{args.file}: {len(tasks)} task(s) valid; {shape}")
        return 0
    failing = _run_references(tasks)
    if failing:
        print(
            f"{args.file}: {len(tasks)} task(s) parse ({shape}), but {len(failing)} reference(s) fail "
            f"their own tests: {', '.join(failing)}\n  (a run refuses this file unless its config says "
            "`allow_failing_reference: true`)",
            file=sys.stderr,
        )
        return 1
    print(f"{args.file}: {len(tasks)} task(s) valid; {shape}; every reference passes its tests")
    return 0


def _run_references(tasks: list[Any]) -> list[str]:
    """Run each task's program and reference on all its tests in the sandbox, print a line per task,
    and return the ids of the tasks whose reference fails one of its own tests."""
    from rsi_workbench.domains.code_repair.sandbox import Sandbox, Status

    sb = Sandbox()
    failing = []
    for t in tasks:
        buggy = sb.run_suite(t.program, [*t.public_tests, *t.hidden_tests], t.entry_point)
        line = f"  {t.task_id}: program passes {sum(o.status == Status.AC for o in buggy)}/{len(buggy)}"
        if t.reference is not None:
            ref = sb.run_suite(t.reference, [*t.public_tests, *t.hidden_tests], t.entry_point)
            failed = [o for o in ref if o.status != Status.AC]
            line += f"; reference passes {len(ref) - len(failed)}/{len(ref)}"
            if failed:
                failing.append(t.task_id)
                line += f"  <- reference fails {failed[0].test_id}: {failed[0].status} {failed[0].message}"
        print(line)
    return failing


def cmd_tasks_oracle(args: argparse.Namespace) -> int:
    """Run or resume the oracle-budget reference (all k candidates executed) and print its table."""
    from pathlib import Path

    from rsi_workbench.domains.code_repair.oracle import oracle_report, run_oracle
    from rsi_workbench.domains.code_repair.tasks import load_humanevalfix, load_task_file

    if not args.report_only:
        tasks = load_task_file(args.file) if args.file else load_humanevalfix()
        if args.limit:
            tasks = tasks[: args.limit]
        run_oracle(
            Path(args.out), tasks, seeds=args.seeds, rounds=args.rounds, k=args.k, workers=args.workers
        )
    text = oracle_report(args.out)
    if not args.report_only:  # a run writes its table; viewing (--report-only) never changes the run
        Path(args.out, "report.txt").write_text(text + "\n")
    print(text)
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``tasks validate FILE`` to the ``rsi-workbench`` command line."""
    p = subparsers.add_parser("tasks", help="code-repair task files (format: docs/code-repair-tasks.md)")
    sub = p.add_subparsers(dest="tasks_command", required=True, metavar="SUBCOMMAND")
    v = sub.add_parser("validate", help="validate a JSONL repair-task file (errors name line and field)")
    v.add_argument("file")
    v.add_argument("--run", action="store_true", help="also run program and reference in the sandbox")
    v.set_defaults(func=cmd_tasks_validate)
    o = sub.add_parser(
        "oracle", help="oracle-budget repair reference: MutationCoder, every candidate executed (resumable)"
    )
    o.add_argument("--out", required=True, help="run directory (re-running the same command resumes it)")
    o.add_argument("--file", help="task file (default: the 164 HumanEvalFix Python tasks)")
    o.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    o.add_argument("--rounds", type=int, default=3)
    o.add_argument("-k", type=int, default=4)
    o.add_argument("--workers", type=int, default=2)
    o.add_argument("--limit", type=int, default=0, help="only the first N tasks")
    o.add_argument("--report-only", action="store_true")
    o.set_defaults(func=cmd_tasks_oracle)
