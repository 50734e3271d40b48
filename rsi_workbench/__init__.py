"""RSI Workbench: runnable, inspectable recursive self-improvement protocols on one record spine.

The names a researcher starts from, one engine at a time (each is imported on first use, so
``import rsi_workbench`` imports no engine, no torch, pandas or plotly). Runnable from the
repository root (``tests/test_docs_examples.py`` runs it)::

    import tempfile
    import rsi_workbench as rw

    out = tempfile.mkdtemp()
    with rw.Run.create(f"{out}/mine", {"note": "first steps"}) as run:  # records: append-only events
        run.append("note", {"text": "hello"}, cycle=0)
    events = rw.load_events(f"{out}/mine")  # a DataFrame: seq, time, kind, cycle and the payload
    print(events[["seq", "kind", "cycle", "text"]])
    tree = rw.DiscoveryTree.load("examples/discovery_tree/tree.json")  # Dream-RSI: a recorded tree
    print(rw.score_policy([tree], rw.baseline("breadth_first"), W=4, beta1=2e-4, beta2=0.0))

``rw.run_protocol`` runs the protocol engine (the retained-pair loop) in one call and ``rw.Loop``
step by step; ``help(rw.run_protocol)`` has a self-contained domain to run. ``rw.list_runs`` and
``rw.query`` (SQL over every run's events) read the runs below ``runs/``.

Every room keeps its full API in its own package (``rsi_workbench.protocol``, ``.replay``,
``.discovery``, ``.memory``, ``.records``, ``.models``, ``.sandbox``, ``.viz``), each with ``__all__``.

``rsi_workbench.widgets`` is the top-level ``widgets/`` folder of the repository, reached through the
symlink ``rsi_workbench/widgets -> ../widgets`` (so an editable install and a wheel both see it as
an ordinary subpackage, and the import-linter contracts cover it).
"""

from typing import TYPE_CHECKING

from rsi_workbench._lazy import lazy_exports

if TYPE_CHECKING:
    from rsi_workbench.discovery import ResearchDomain, ResearchGraph, campaign_report, run_campaign
    from rsi_workbench.memory import MemoryTree, RsiAgentSettings, run_rsiagent
    from rsi_workbench.models import LLM, ModelConfig, Sampling, open_model
    from rsi_workbench.protocol import (
        BaseEnvironment,
        BasePolicy,
        BasePredictor,
        Environment,
        Loop,
        ProtocolSettings,
        SelectionRule,
        TaskSpec,
        check_protocol_components,
        run_protocol,
        run_report,
    )
    from rsi_workbench.records import Run, list_runs, load_events, query
    from rsi_workbench.replay import (
        DiscoveryTree,
        ExplorationPolicy,
        PortfolioPolicy,
        baseline,
        rescore,
        score_policy,
    )
    from rsi_workbench.sandbox import Limits, obtain_isolation

__version__ = "0.1.0"

_EXPORTS = {
    # protocol (RSI-Anything's retained-pair loop)
    "Loop": "rsi_workbench.protocol",
    "TaskSpec": "rsi_workbench.protocol",
    "ProtocolSettings": "rsi_workbench.protocol",
    "Environment": "rsi_workbench.protocol",
    "BaseEnvironment": "rsi_workbench.protocol",
    "BasePolicy": "rsi_workbench.protocol",
    "BasePredictor": "rsi_workbench.protocol",
    "SelectionRule": "rsi_workbench.protocol",
    "run_report": "rsi_workbench.protocol",
    "run_protocol": "rsi_workbench.protocol",
    "check_protocol_components": "rsi_workbench.protocol",
    # replay (Dream-RSI: discovery trees, replay scores, exploration policies)
    "DiscoveryTree": "rsi_workbench.replay",
    "ExplorationPolicy": "rsi_workbench.replay",
    "PortfolioPolicy": "rsi_workbench.replay",
    "baseline": "rsi_workbench.replay",
    "score_policy": "rsi_workbench.replay",
    "rescore": "rsi_workbench.replay",
    # discovery (DiscoveryRSI: research graph and campaigns)
    "ResearchDomain": "rsi_workbench.discovery",
    "ResearchGraph": "rsi_workbench.discovery",
    "run_campaign": "rsi_workbench.discovery",
    "campaign_report": "rsi_workbench.discovery",
    # memory (RSIAgent's memory engine)
    "run_rsiagent": "rsi_workbench.memory",
    "RsiAgentSettings": "rsi_workbench.memory",
    "MemoryTree": "rsi_workbench.memory",
    # records (the run directory and its append-only events)
    "Run": "rsi_workbench.records",
    "load_events": "rsi_workbench.records",
    "query": "rsi_workbench.records",
    "list_runs": "rsi_workbench.records",
    # models (every call recorded and replayable)
    "LLM": "rsi_workbench.models",
    "ModelConfig": "rsi_workbench.models",
    "Sampling": "rsi_workbench.models",
    "open_model": "rsi_workbench.models",
    # sandbox (one choke point for untrusted code)
    "obtain_isolation": "rsi_workbench.sandbox",
    "Limits": "rsi_workbench.sandbox",
}

__all__ = [
    "__version__",
    "BaseEnvironment",
    "BasePolicy",
    "BasePredictor",
    "DiscoveryTree",
    "Environment",
    "ExplorationPolicy",
    "LLM",
    "Limits",
    "Loop",
    "MemoryTree",
    "ModelConfig",
    "PortfolioPolicy",
    "ProtocolSettings",
    "ResearchDomain",
    "ResearchGraph",
    "RsiAgentSettings",
    "Run",
    "Sampling",
    "SelectionRule",
    "TaskSpec",
    "baseline",
    "campaign_report",
    "check_protocol_components",
    "list_runs",
    "load_events",
    "obtain_isolation",
    "open_model",
    "query",
    "rescore",
    "run_campaign",
    "run_protocol",
    "run_report",
    "run_rsiagent",
    "score_policy",
]

__getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)
