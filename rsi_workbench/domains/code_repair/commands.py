"""``rsi-workbench tasks ...``: validate repair-task files (and, later, run the oracle reference)."""

from __future__ import annotations

import argparse
import sys
from collections import Counter


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
    print(
        f"{args.file}: {len(tasks)} task(s) valid; {n_pub} public and {n_hid} hidden tests "
        f"({', '.join(f'{k}: {v}' for k, v in sorted(kinds.items()))}); "
        f"{sum(t.reference is not None for t in tasks)} with a reference"
    )
    if not args.run:
        return 0
    from rsi_workbench.domains.code_repair.sandbox import Sandbox, Status

    sb = Sandbox()
    bad = 0
    for t in tasks:
        buggy = sb.run_suite(t.program, [*t.public_tests, *t.hidden_tests], t.entry_point)
        line = f"  {t.task_id}: program passes {sum(o.status == Status.AC for o in buggy)}/{len(buggy)}"
        if t.reference is not None:
            ref = sb.run_suite(t.reference, [*t.public_tests, *t.hidden_tests], t.entry_point)
            failed = [o for o in ref if o.status != Status.AC]
            line += f"; reference passes {len(ref) - len(failed)}/{len(ref)}"
            if failed:
                bad += 1
                line += f"  <- reference fails {failed[0].test_id}: {failed[0].status} {failed[0].message}"
        print(line)
    return 1 if bad else 0


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``tasks validate FILE`` to the ``rsi-workbench`` command line."""
    p = subparsers.add_parser("tasks", help="code-repair task files (see README, 'Code-repair tasks')")
    sub = p.add_subparsers(dest="tasks_command", required=True, metavar="SUBCOMMAND")
    v = sub.add_parser("validate", help="validate a JSONL repair-task file (errors name line and field)")
    v.add_argument("file")
    v.add_argument("--run", action="store_true", help="also run program and reference in the sandbox")
    v.set_defaults(func=cmd_tasks_validate)
