"""Proposal reach: how many tasks had at least one proposed candidate that passes every hidden
test within the k x rounds budget, per method and per coder that proposed it.

Computed offline from the metrics-only audits (every proposed candidate executed on the public and
hidden tests, never charged and never visible to selection). It measures the proposer, not the
selection: a method can only keep what its coder reached. Invalid model samples (eq. 7) are never
executed and never count. The same section counts the model's samples by validity and reason.
"""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rsi_workbench.records import Run


def run_reach(path: str | Path) -> dict[str, Any]:
    """One protocol run: tasks reached (any coder and per coder), tasks, and sample counts."""
    run = Run.open(path)
    audits: dict[tuple[str, int | None], list[dict[str, Any]]] = {}
    proposals = []
    tasks: list[str] = []
    for e in run.events():
        if e.kind == "loop_opened":
            tasks = list(e.payload.get("tasks", []))
        elif e.kind == "audit":
            audits[(e.payload["task_id"], e.cycle)] = e.payload["outcomes"]
        elif e.kind == "proposal":
            proposals.append(e)
    reached: dict[str, set[str]] = defaultdict(set)
    samples: Counter[str] = Counter()
    for e in proposals:
        p = e.payload
        outs = audits.get((p["task_id"], e.cycle))
        for c in p["candidates"]:
            meta = p["actions"][c["slot"]].get("meta", {})
            coder = str(meta.get("coder", "mutation"))
            if coder == "llm":
                why = str(meta.get("invalid") or "")
                samples["valid" if not why else why.split(":")[0].split(" of ")[0]] += 1
            if not c["valid"] or outs is None:
                continue
            if outs[c["index"]].get("hidden_all_pass"):
                reached["any"].add(p["task_id"])
                reached[coder].add(p["task_id"])
    return {
        "n_tasks": len(tasks),
        "reached": {k: sorted(v) for k, v in reached.items()},
        "samples": samples,
        "audited": bool(audits),
    }


def reach_lines(runs: Mapping[str, Path], coder_kind: str = "mutation") -> list[str]:
    """The report section: per method, tasks reached (mean over seeds), split by coder."""
    per: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for name, p in runs.items():
        per[name.rsplit("-seed", 1)[0]].append(run_reach(p))
    if not per:
        return []
    if not any(r["audited"] for rs in per.values() for r in rs):  # protocol.audit: false
        return [
            "",
            "proposal reach: not measured (protocol.audit is off: no offline audits of the proposals)",
        ]
    lines = [
        "",
        f"proposal reach (coder: {coder_kind}) — tasks with >= 1 proposed candidate passing all hidden tests "
        "within k x rounds; from metrics-only audits, never charged, never seen by selection:",
    ]
    coders = sorted({c for rs in per.values() for r in rs for c in r["reached"] if c != "any"})
    for method, rs in per.items():
        n = rs[0]["n_tasks"]
        any_ = [len(r["reached"].get("any", [])) for r in rs]
        parts = [f"{c} {statistics.mean(len(r['reached'].get(c, [])) for r in rs):.1f}" for c in coders]
        split = f" (by coder: {', '.join(parts)})" if len(coders) > 1 else ""
        lines.append(
            f"  {method:<16} {statistics.mean(any_):.1f}/{n} tasks (mean of {len(rs)} seed(s)){split}"
        )
    samples: Counter[str] = Counter()
    for rs in per.values():
        for r in rs:
            samples.update(r["samples"])
    if samples:
        total = sum(samples.values())
        kinds = ", ".join(f"{k} {v}" for k, v in samples.most_common())
        lines.append(f"  model samples in proposals, all methods: {total} ({kinds})")
    return lines
