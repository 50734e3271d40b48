"""The tabular domain bound to the DiscoveryRSI engine: a plan's ``spec`` is a tabular ``AnalysisSpec``.

:class:`TabularResearch` implements the engine's
:class:`rsi_workbench.discovery.episode.ResearchDomain`: which data a direction records, what a
spec's defects are, how it compiles to a nested model comparison that really runs, and which
sources (dataset, fixed split file, unavailable dependencies) a hypothesis version uses.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rsi_workbench.discovery.graph import ResearchGraph
from rsi_workbench.discovery.lead import LeadDecision
from rsi_workbench.discovery.records import DiscoveryRecords, HypothesisVersion, SourceRecord, SupportLink
from rsi_workbench.discovery.roles import ToolError
from rsi_workbench.domains import tabular
from rsi_workbench.records import Run

DOMAIN = "tabular"


def spec_of(h: HypothesisVersion) -> tabular.AnalysisSpec:
    """The tabular analysis a hypothesis version's plan specifies."""
    return tabular.AnalysisSpec.from_dict(h.content.plan.spec)


@dataclass
class TabularResearch:
    """The tabular domain as the episode workflow sees it (a ``ResearchDomain``): the analyses'
    bootstrap resamples, outer folds and split seed, and whether episode 0 adds a pure-noise control."""

    execute: Callable[[dict[str, Any], str], dict[str, Any]]  # module-level, so a process pool can run it
    n_bootstrap: int = 400
    outer_folds: int = 5
    split_seed: int = 0
    noise_control: bool = True
    name: str = DOMAIN
    controls_offered: int = len(tabular.CONTROLS)

    def defects(self, h: HypothesisVersion, status: str | None) -> list[str]:
        return tabular.spec_defects(spec_of(h), status)

    def added(self, h: HypothesisVersion) -> tuple[str, ...]:
        return tuple(spec_of(h).added)

    def inspect_data(self, direction: str, groups: list[str]) -> dict[str, Any]:
        summary = tabular.data_summary(direction, groups)
        missing = [g for g, v in summary["groups"].items() if not v["available"]]
        if missing:
            raise ToolError(f"not recorded in this cohort: {missing} ({summary['unavailable']})")
        return summary

    def validate_plan(self, spec: dict[str, Any]) -> None:
        tabular.validate_spec(spec)

    def worker_context(
        self, role: str, dec: LeadDecision, recs: DiscoveryRecords, graph: ResearchGraph, episode: int
    ) -> dict[str, Any]:
        """Generation: what was tried in the direction, the run settings, the noise control of episode 0;
        Evolution: the spec keys of the parents' lineage (so an evolve does not repeat an ancestor)."""
        if role == "generation":
            tried = {
                (spec_of(h).baseline, spec_of(h).added)
                for h in recs.hypotheses
                if h.direction == dec.direction
            }
            settings = {
                "n_bootstrap": self.n_bootstrap,
                "outer_folds": self.outer_folds,
                "split_seed": self.split_seed,
            }
            return {"tried": tried, "control": self.noise_control and episode == 0, "settings": settings}
        lineage = set(dec.parents).union(*(graph.ancestors(p) for p in dec.parents))
        return {"lineage_keys": {tabular.spec_key(spec_of(graph.nodes[x])) for x in lineage}}

    def compile_task(self, h: HypothesisVersion, task_id: str) -> dict[str, Any]:
        return tabular.compile_task(spec_of(h), task_id=task_id)

    def run_blocked(self, task: dict[str, Any], workdir: Path) -> dict[str, Any]:
        return tabular.run_task(task, workdir)

    def link_sources(self, run: Run, recs: DiscoveryRecords, h: HypothesisVersion, episode: int) -> None:
        """Dataset, split file and missing-data dependencies as linked sources (shared, not lineage)."""
        spec, hid, ep = spec_of(h), h.hypothesis_id, episode
        known = {s.source_id for s in recs.sources}
        d = tabular.direction(spec.direction)
        links: list[tuple[str, str]] = []
        ds_id = f"dataset:{d.dataset}"
        if ds_id not in known:
            frame, _ = tabular.load_direction(spec.direction)
            sha = hashlib.sha256(frame.to_csv().encode()).hexdigest()
            rec = SourceRecord(
                source_id=ds_id, source_kind="dataset", name=d.dataset, sha256=sha, detail=d.population
            )
            run.append(rec, cycle=ep)
            recs.sources.append(rec)
        links.append((ds_id, "uses_data"))
        split_bytes = tabular.analysis.splits_csv(spec.direction, spec.outer_folds, spec.split_seed)
        split_sha = run.artifacts.put(split_bytes, name=f"splits-{d.dataset}-{d.outcome}.csv")
        sp_id = f"split:{spec.direction}:{spec.outer_folds}:{spec.split_seed}"
        if sp_id not in known:
            rec = SourceRecord(
                source_id=sp_id,
                source_kind="artifact",
                name=f"fixed patient-level splits for {spec.direction}",
                sha256=split_sha,
                path=f"artifacts/{split_sha}",
            )
            run.append(rec, cycle=ep)
            recs.sources.append(rec)
        links.append((sp_id, "uses_split"))
        for g in list(spec.required_groups()) + list(spec.deferred):
            if d.available(g):
                continue
            dep_id = f"dependency:{spec.direction}:{g}"
            if dep_id not in {s.source_id for s in recs.sources}:
                rec = SourceRecord(
                    source_id=dep_id,
                    source_kind="dependency",
                    name=g,
                    available=False,
                    detail=d.unavailable.get(g, ""),
                )
                run.append(rec, cycle=ep)
                recs.sources.append(rec)
            links.append((dep_id, "cites"))
        for sid, rel in links:
            run.append(SupportLink(hypothesis_id=hid, source_id=sid, relation=rel), cycle=ep)  # type: ignore[arg-type]


def noise_controls(recs: DiscoveryRecords) -> list[str]:
    """The deliberate pure-noise controls among a campaign's hypothesis versions."""
    return [
        h.hypothesis_id
        for h in recs.hypotheses
        if tabular.NOISE_GROUP in h.content.plan.spec.get("added", [])
    ]


def known_directions(v: list[str]) -> list[str]:
    """``v`` if every entry names a tabular direction, else a ValueError listing the allowed ones."""
    known = set(tabular.DIRECTIONS) | set(tabular.SYNTHETIC_DIRECTIONS) | set(tabular.STATEFUL_DIRECTIONS)
    bad = [d for d in v if d not in known]
    if bad:
        raise ValueError(
            f"unknown direction(s) {bad}; allowed: {sorted(tabular.DIRECTIONS)}, the synthetic "
            f"{sorted(tabular.SYNTHETIC_DIRECTIONS)} and the stateful synthetic-stateful-00.."
            f"{len(tabular.STATEFUL_DIRECTIONS) - 1:02d}/outcome"
        )
    return v
