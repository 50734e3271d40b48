"""Code-repair domain: repair tasks, the hardened execution sandbox (E0 evidence), the built-in
SBFL + mutation ``Coder``, and state signatures for matched comparisons (RSI-Anything, code repair)."""

from __future__ import annotations

from rsi_workbench.domains.code_repair.coder import (
    OPERATORS,
    Mutation,
    MutationCoder,
    RepairFeedback,
    apply_incumbent_rule,
    enumerate_mutations,
    inject_bugs,
    ochiai,
    unified_diff,
)
from rsi_workbench.domains.code_repair.sandbox import (
    STATUSES,
    Isolation,
    Sandbox,
    SandboxLimits,
    SandboxUnavailable,
    Status,
    TestOutcome,
    pass_count,
    probe_isolation,
)
from rsi_workbench.domains.code_repair.signature import (
    StateSignature,
    assert_matched,
    render_context,
    state_signature,
)
from rsi_workbench.domains.code_repair.tasks import (
    RepairTask,
    TaskFileError,
    TestCase,
    load_humaneval_references,
    load_humaneval_tasks,
    load_humanevalfix,
    load_task_file,
    save_task_file,
)

__all__ = [
    "OPERATORS",
    "STATUSES",
    "Isolation",
    "Mutation",
    "MutationCoder",
    "RepairFeedback",
    "RepairTask",
    "Sandbox",
    "SandboxLimits",
    "SandboxUnavailable",
    "StateSignature",
    "Status",
    "TaskFileError",
    "TestCase",
    "TestOutcome",
    "apply_incumbent_rule",
    "assert_matched",
    "enumerate_mutations",
    "inject_bugs",
    "load_humaneval_references",
    "load_humaneval_tasks",
    "load_humanevalfix",
    "load_task_file",
    "ochiai",
    "pass_count",
    "probe_isolation",
    "render_context",
    "save_task_file",
    "state_signature",
    "unified_diff",
]
