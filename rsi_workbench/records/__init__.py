"""The record spine: run directories, the append-only event log, artifacts and queries."""

from rsi_workbench.records.artifacts import ArtifactCorrupted, ArtifactMissing, ArtifactStore, sha256_bytes
from rsi_workbench.records.compact import compact_run, compact_tree
from rsi_workbench.records.events import (
    SCHEMA_VERSION,
    Event,
    EventLog,
    EventLogError,
    EventPayload,
    TornLineWarning,
    iter_events,
    log_bytes,
    log_exists,
    log_size,
    open_log,
    read_log,
)
from rsi_workbench.records.query import load_events, query
from rsi_workbench.records.run import (
    Run,
    RunError,
    RunLocked,
    default_runs_dir,
    has_events,
    list_runs,
    new_run_id,
    pin_config_additions,
    same_config,
)

__all__ = [
    "pin_config_additions",
    "same_config",
    "SCHEMA_VERSION",
    "ArtifactCorrupted",
    "compact_run",
    "compact_tree",
    "ArtifactMissing",
    "ArtifactStore",
    "Event",
    "EventLog",
    "EventLogError",
    "EventPayload",
    "Run",
    "RunError",
    "RunLocked",
    "TornLineWarning",
    "default_runs_dir",
    "iter_events",
    "has_events",
    "log_bytes",
    "log_exists",
    "log_size",
    "open_log",
    "list_runs",
    "load_events",
    "new_run_id",
    "query",
    "read_log",
    "sha256_bytes",
]
