"""RSIAgent's memory room: memory trees, snapshots, BRS waves, audited commits, DRS, frozen evaluation.

An engine beside protocol, replay and discovery: it imports none of them and no domain. Bindings to
environments (MiniWoB++, code repair) live in the domains (``rsi_workbench.domains.gui.rsiagent``,
``rsi_workbench.domains.code_repair.rsiagent_env``), bound by ``rsi_workbench.experiments.rsiagent``;
model-backed roles are :mod:`rsi_workbench.memory.llm_roles`.
"""

from rsi_workbench.memory.audit import AuditReject, AuditResult, ShingleIndex, shingle_audit
from rsi_workbench.memory.commits import InfraStop
from rsi_workbench.memory.engine import run_rsiagent
from rsi_workbench.memory.evaluation import FrozenMemoryMismatch
from rsi_workbench.memory.handoff import (
    HANDOFF_SCHEMA,
    PROJECT_ID_PATTERN,
    Handoff,
    HandoffError,
    parse_handoff,
)
from rsi_workbench.memory.ledger import LedgerError, LedgerState, read_ledger
from rsi_workbench.memory.result import RsiAgentResult, practice_seed, target_seed
from rsi_workbench.memory.roles import (
    Actor,
    Curriculum,
    CurriculumRequest,
    Environment,
    OutcomeSummary,
    Verifier,
    Workspace,
)
from rsi_workbench.memory.scores import TargetScores, partial_binary
from rsi_workbench.memory.settings import RsiAgentSettings
from rsi_workbench.memory.snapshots import MaterialisedMemory, SnapshotMutated, load_snapshot, store_snapshot
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
    "HANDOFF_SCHEMA",
    "PROJECT_ID_PATTERN",
    "AuditReject",
    "AuditResult",
    "FrozenMemoryMismatch",
    "Handoff",
    "HandoffError",
    "InfraStop",
    "LedgerError",
    "LedgerState",
    "MaterialisedMemory",
    "RsiAgentResult",
    "RsiAgentSettings",
    "ShingleIndex",
    "SnapshotMutated",
    "TargetScores",
    "load_snapshot",
    "parse_handoff",
    "partial_binary",
    "practice_seed",
    "read_ledger",
    "run_rsiagent",
    "shingle_audit",
    "store_snapshot",
    "target_seed",
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
