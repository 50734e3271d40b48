"""RSIAgent's memory room: memory trees, snapshots, BRS waves, audited commits, DRS, frozen evaluation.

An engine beside protocol, replay and discovery: it imports none of them and no domain. Bindings to
environments (MiniWoB++, code repair) live in ``rsi_workbench.experiments.rsiagent``.
"""

from rsi_workbench.memory.roles import (
    Actor,
    Curriculum,
    CurriculumRequest,
    Environment,
    OutcomeSummary,
    Verifier,
    Workspace,
)
from rsi_workbench.memory.tree import (
    EMPTY,
    MemoryDiff,
    MemoryPathError,
    MemoryTree,
    canonical_json,
    check_relpath,
)
from rsi_workbench.memory.types import (
    Attempt,
    Evidence,
    InfraFailure,
    MemoryAccess,
    Phase,
    Project,
    ProjectRejected,
    VerdictKind,
    VerifierReport,
)

__all__ = [
    "EMPTY",
    "Actor",
    "Attempt",
    "Curriculum",
    "CurriculumRequest",
    "Environment",
    "Evidence",
    "InfraFailure",
    "MemoryAccess",
    "MemoryDiff",
    "MemoryPathError",
    "MemoryTree",
    "OutcomeSummary",
    "Phase",
    "Project",
    "ProjectRejected",
    "VerdictKind",
    "Verifier",
    "VerifierReport",
    "Workspace",
    "canonical_json",
    "check_relpath",
]
