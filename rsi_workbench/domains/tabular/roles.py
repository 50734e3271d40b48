"""Built-in deterministic research roles of the tabular domain (each an ``agents.Proposer``).

Generation proposes new questions in the Lead's direction; Evolution evolves, repairs or crosses over
the assigned parents. Both act through the role session they are handed in ``context["session"]``
(DiscoveryRSI's :class:`rsi_workbench.discovery.roles.Session`), so every tool call is a recorded turn.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, replace
from typing import Any, Protocol

from rsi_workbench.agents import Candidate
from rsi_workbench.domains import tabular
from rsi_workbench.domains.tabular import stateful


class ToolSession(Protocol):
    """The part of a role session these roles use: a recorded tool call."""

    def call(self, name: str, **arguments: Any) -> Any: ...


# -- built-in Generation / Evolution ------------------------------------------------------------
@dataclass
class TabularGeneration:
    """Built-in Generation (an ``agents.Proposer``): new questions in the Lead's direction.

    ``context``: ``{"session", "direction", "tried", "unavailable_rate", "control"}``. The role
    inspects the data through its tool (asking for a group the cohort lacks is a failed action),
    then publishes each hypothesis through ``publish_draft``.
    """

    name: str = "builtin-generation"

    def propose(self, context: dict[str, Any], k: int, rng: random.Random) -> list[Candidate]:
        s: ToolSession = context["session"]
        if stateful.is_stateful(context["direction"]):  # planted: complete, recorded questions
            specs = [stateful.restart_spec(context["direction"], rng, context["tried"]) for _ in range(k)]
        else:
            specs = [
                tabular.restart_spec(
                    context["direction"], rng, context["tried"], unavailable_rate=context["unavailable_rate"]
                )
                for _ in range(k)
            ]
        if context.get("control"):
            specs.append(tabular.control_spec(context["direction"]))
        specs = [replace(spec, **context.get("settings", {})) for spec in specs]
        out = []
        for spec in specs:
            s.call("inspect_data", direction=spec.direction, groups=list(spec.required_groups()))
            content = tabular.hypothesis_content(spec)
            why = "deliberate noise control" if tabular.NOISE_GROUP in spec.added else "new question"
            draft = s.call("publish_draft", content=content, note=why)
            out.append(
                Candidate(
                    json.dumps(content, sort_keys=True), meta={"spec": spec, "draft": draft, "why": why}
                )
            )
        return out


@dataclass
class TabularEvolution:
    """Built-in Evolution (an ``agents.Proposer``): evolve, repair or crossover the assigned parents
    (on a ``synthetic-stateful-NN`` direction, evolve and repair are the planted operators of
    :mod:`~rsi_workbench.domains.tabular.stateful`).

    ``context``: ``{"session", "operation", "parents": [ids], "lineage_keys": set}``; the role
    reads each parent (content, results, defects, metrics file) through ``read_hypothesis``.
    """

    name: str = "builtin-evolution"

    def propose(self, context: dict[str, Any], k: int, rng: random.Random) -> list[Candidate]:
        s: ToolSession = context["session"]
        parents = [s.call("read_hypothesis", hypothesis_id=p) for p in context["parents"]]
        specs = [tabular.AnalysisSpec.from_dict(p["spec"]) for p in parents]
        op = context["operation"]
        if stateful.is_stateful(specs[0].direction) and op in ("evolve", "repair"):
            verdict = (
                (parents[0].get("results") or {}).get("verdict") if parents[0]["status"] == "ok" else None
            )
            if op == "repair":
                spec, changes = stateful.repair_spec(specs[0], verdict, parents[0]["defects"])
                why = "; ".join(changes) or "no defect left to repair"
            else:
                spec, why = stateful.evolve_spec(specs[0], verdict, rng, context["lineage_keys"])
        elif op == "repair":
            spec, changes = tabular.repair_spec(specs[0], parents[0]["defects"])
            why = "; ".join(changes) or "no defect left to repair"
        elif op == "crossover":
            spec, why = tabular.crossover_spec(specs), "combine the parents' added groups"
        else:
            spec, why = tabular.evolve_spec(specs[0], rng, context["lineage_keys"])
        content = tabular.hypothesis_content(spec)
        draft = s.call("publish_draft", content=content, note=why)
        return [
            Candidate(json.dumps(content, sort_keys=True), meta={"spec": spec, "draft": draft, "why": why})
        ]
