"""DFM-Bench assessment levels computed from the records — never from a generating role's opinion.

Level 1, the hypothesis profile: eight axes on a 1–10 scale with the paper's weights
(importance 20, novelty 20, evidence 15, falsifiability 10, data solvability 10, feasibility 10,
alternatives 10, actionability 5). The rubric (:func:`profile`) reads only executed evidence:

* ``e`` conservative effect = clip(interval lower bound / max(2·threshold, headroom/4)) — an
  effect that closes a quarter of the baseline's remaining headroom (1 − baseline metric), or twice
  the pre-registered minimal important difference if larger, counts in full; ``g`` grounding = clip(added-alone gain over chance
  / (10·threshold)) — whether X carries any information at all (0 if that control was not run);
  value = max(e, 0.6·g·[verdict = weakens]) — a decisive null on an informative X is worth
  knowing (it stops investment), a null on an uninformative X is not.
* importance = 1 + 9·value; novelty = 1 + 9·(1 − overlap with earlier plans)·value;
  evidence = 1 + 9·(e | 0.6·g·clip((threshold − upper)/threshold) | 0.25·clip(lower/threshold))
  for supports | weakens | inconclusive; falsifiability = 1 + 9·(0.4·decidable +
  0.3·criteria recorded before the result + 0.3·decisive verdict); data solvability = 1 + 9·share
  of required data available; feasibility = 1 + 9·share of execution checks passed;
  alternatives = 1 + 9·(controls run / controls offered)·max(beat-the-permutation margin, g);
  actionability = 1 + 9·(1 | 0.6·g | 0.1) for supports | weakens | inconclusive.

Execution readiness (every check passed) is a separate field: a task can be ready and worthless.
Level 2: ancestor-aware progress labels (:func:`judge_progress`). Level 3: development-path scores
on seven dimensions weighted 5/30/20/20/10/10/5 (:func:`path_scores`). Level 4: whole-campaign
allocation (:func:`campaign_allocation`) and operation shares per episode (:func:`operation_shares`).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from rsi_workbench.agents import Preference
from rsi_workbench.discovery.graph import ResearchGraph
from rsi_workbench.discovery.records import OPERATIONS, DiscoveryRecords, HypothesisVersion

if TYPE_CHECKING:
    import pandas as pd

AXIS_WEIGHTS: dict[str, int] = {
    "importance": 20,
    "novelty": 20,
    "evidence": 15,
    "falsifiability": 10,
    "data_solvability": 10,
    "feasibility": 10,
    "alternatives": 10,
    "actionability": 5,
}
# L1 disciplinary connection, L2 technical & knowledge exploration, L3 cumulative progress,
# L4 evidence & inference discipline, L5 scientific continuity & synthesis, L6 stopping decisions,
# L7 budget efficiency — weights 5/30/20/20/10/10/5 (paper, Table 3).
PATH_WEIGHTS: dict[str, int] = {
    "L1_connection": 5,
    "L2_exploration": 30,
    "L3_cumulative_progress": 20,
    "L4_evidence_discipline": 20,
    "L5_continuity_synthesis": 10,
    "L6_stopping": 10,
    "L7_budget_efficiency": 5,
}
DECISIVE = ("supports", "weakens")


def _clip(x: float, lo: float = 0.0, hi: float = 1.0) -> float:
    return max(lo, min(hi, x))


@dataclass(frozen=True)
class RubricInputs:
    """Everything the rubric reads, taken from the compiled task and its execution records."""

    executed: bool
    checks_passed: float
    data_available: float
    decidable: bool
    preregistered: bool
    verdict: str | None
    threshold: float
    delta: float | None = None
    baseline: float | None = None
    ci_lo: float | None = None
    ci_hi: float | None = None
    perm_delta: float | None = None
    alone_gain: float | None = None
    controls_run: int = 0
    controls_offered: int = 2
    overlap: float = 0.0

    @property
    def grounding(self) -> float:
        if self.alone_gain is None:
            return 0.0
        return _clip(self.alone_gain / (10 * self.threshold))

    @property
    def effect(self) -> float:
        if not self.executed or self.ci_lo is None:
            return 0.0
        headroom = 1.0 - self.baseline if self.baseline is not None else 0.0
        return _clip(self.ci_lo / max(2 * self.threshold, headroom / 4))


def profile(x: RubricInputs) -> dict[str, float]:
    """The eight DFM-Bench axes (1–10) from recorded evidence; see the module docstring."""
    e, g = x.effect, x.grounding
    null = x.executed and x.verdict == "weakens"
    value = max(e, 0.6 * g * null)
    if not x.executed:
        strength = 0.0
    elif x.verdict == "supports":
        strength = e
    elif x.verdict == "weakens" and x.ci_hi is not None:
        strength = 0.6 * g * _clip((x.threshold - x.ci_hi) / x.threshold)
    elif x.ci_lo is not None:
        strength = 0.25 * _clip(x.ci_lo / x.threshold)
    else:
        strength = 0.0
    disc = 0.0
    if x.executed and x.perm_delta is not None and x.ci_lo is not None:
        disc = _clip((x.ci_lo - x.perm_delta) / (2 * x.threshold))
    if x.executed:
        disc = max(disc, g)
    act = (
        {"supports": 1.0, "weakens": 0.6 * g, "inconclusive": 0.1}.get(x.verdict or "", 0.0)
        if x.executed
        else 0.0
    )
    axes = {
        "importance": 1 + 9 * value,
        "novelty": 1 + 9 * (1 - _clip(x.overlap)) * value,
        "evidence": 1 + 9 * strength,
        "falsifiability": 1
        + 9 * (0.4 * x.decidable + 0.3 * x.preregistered + 0.3 * (x.executed and x.verdict in DECISIVE)),
        "data_solvability": 1 + 9 * _clip(x.data_available),
        "feasibility": 1 + 9 * (_clip(x.checks_passed) if x.executed else 0.0),
        "alternatives": 1 + 9 * _clip(x.controls_run / max(1, x.controls_offered)) * disc,
        "actionability": 1 + 9 * act,
    }
    return {k: round(v, 4) for k, v in axes.items()}


def weighted(axes: dict[str, float], weights: dict[str, int] | None = None) -> float:
    """Weighted profile on the 1–10 scale (weights renormalised over the axes present)."""
    w = weights or AXIS_WEIGHTS
    total = sum(w[k] for k in axes if k in w)
    return round(sum(w[k] * v for k, v in axes.items() if k in w) / total, 4)


def rubric_inputs(
    task: dict[str, Any] | None,
    execution: dict[str, Any] | None,
    *,
    threshold: float,
    preregistered: bool,
    overlap: float,
    controls_offered: int,
) -> RubricInputs:
    """Assemble rubric inputs from a compiled task and its execution record (dicts of the records)."""
    deps = [d for d in (task or {}).get("dependencies", []) if d.get("required", True)]
    data_available = sum(bool(d["available"]) for d in deps) / len(deps) if deps else 1.0
    ex = execution or {}
    res = ex.get("results", {}) or {}
    executed = ex.get("status") == "ok"
    checks = ex.get("checks", {}) or {}
    controls = res.get("controls", {}) or {}
    return RubricInputs(
        executed=executed,
        checks_passed=(sum(checks.values()) / len(checks)) if checks else 0.0,
        data_available=data_available,
        decidable=bool(checks.get("criteria_decidable", False)),
        preregistered=preregistered,
        verdict=res.get("verdict"),
        threshold=threshold,
        delta=res.get("delta"),
        baseline=res.get("baseline"),
        ci_lo=res.get("ci_lo"),
        ci_hi=res.get("ci_hi"),
        perm_delta=(controls.get("permutation") or {}).get("delta"),
        alone_gain=(controls.get("added_alone") or {}).get("gain_over_chance"),
        controls_run=len(controls),
        controls_offered=controls_offered,
        overlap=overlap,
    )


def plan_overlap(h: HypothesisVersion, earlier: list[HypothesisVersion]) -> float:
    """How much of ``h``'s plan was already tested: max Jaccard of added sets, halved across baselines."""
    spec = h.content.plan.spec
    added, base = set(spec.get("added", [])), set(spec.get("baseline", []))
    best = 0.0
    for o in earlier:
        if o.direction != h.direction:
            continue
        s = o.content.plan.spec
        oa, ob = set(s.get("added", [])), set(s.get("baseline", []))
        if not added | oa:
            continue
        j = len(added & oa) / len(added | oa)
        best = max(best, j if ob == base else 0.5 * j)
    return best


# -- blinded critique ---------------------------------------------------------------------------
FORBIDDEN_IN_DOSSIER = frozenset(
    {"hypothesis_id", "parents", "operation", "family", "version", "episode", "publisher", "model"}
    | {"trajectory_id", "draft_id", "lead", "author", "role", "round", "created_at"}
)


def blinded_dossier(h: HypothesisVersion, inputs: RubricInputs) -> dict[str, Any]:
    """What the Critique sees: the scientific content and its evidence — no identity, no lineage."""
    c = h.content
    return {
        "claim": {
            "statement": c.claim.statement,
            "population": c.claim.population,
            "observable": c.claim.observable,
        },
        "plan": {
            "comparison": c.plan.comparison,
            "controls": list(c.plan.controls),
            "analysis": c.plan.analysis,
        },
        "criteria": c.criteria.model_dump(mode="json"),
        "alternatives": c.alternatives.model_dump(mode="json"),
        "evidence": asdict(inputs),
    }


@dataclass
class BlindedCritique:
    """Built-in blinded Critique (an ``agents.Judge``): rubric scores of two dossiers, tie or abstain.

    Abstains when the two investigations are not comparable (different population, observable or
    metric) or neither has executed evidence; novelty is left out because judging it needs the
    graph, which a blinded critic does not see.
    """

    tie_margin: float = 0.25
    name: str = "rubric-critique"

    def score(self, dossier: dict[str, Any]) -> float:
        axes = profile(RubricInputs(**dossier["evidence"]))
        axes.pop("novelty")
        return weighted(axes)

    def compare(self, a: Any, b: Any, context: Any = None) -> Preference:
        ca, cb = a["claim"], b["claim"]
        comparable = (
            ca["population"] == cb["population"]
            and ca["observable"] == cb["observable"]
            and a["criteria"]["metric"] == b["criteria"]["metric"]
        )
        if not comparable or not (a["evidence"]["executed"] or b["evidence"]["executed"]):
            return "abstain"
        sa, sb = self.score(a), self.score(b)
        if abs(sa - sb) < self.tie_margin:
            return "tie"
        return "a" if sa > sb else "b"


def check_blinded(dossier: dict[str, Any], ids: set[str]) -> None:
    """Raise if a dossier carries an identity/lineage field or mentions a hypothesis/trajectory id."""
    import json

    def walk(o: Any) -> None:
        if isinstance(o, dict):
            bad = FORBIDDEN_IN_DOSSIER & set(o)
            if bad:
                raise ValueError(f"dossier leaks identity/lineage fields {sorted(bad)}")
            for v in o.values():
                walk(v)
        elif isinstance(o, list):
            for v in o:
                walk(v)

    walk(dossier)
    text = json.dumps(dossier)
    leaked = [i for i in ids if i and i in text]
    if leaked:
        raise ValueError(f"dossier mentions ids {leaked[:5]}")


# -- level 2: ancestor-aware progress -----------------------------------------------------------
def judge_progress(
    *,
    operation: str,
    executed: bool,
    weighted_child: float,
    weighted_predecessors: list[float],
    fingerprint: str,
    earlier_fingerprints: set[str],
    defects_child: list[str],
    defects_predecessors: list[str],
    margin: float,
) -> tuple[str, list[str]]:
    """Label a revision against its true predecessor(s): progress, repair, duplicate or insufficient."""
    if fingerprint in earlier_fingerprints:
        return "duplicate", ["the compiled analysis repeats an earlier one in the graph"]
    fixed = sorted(set(defects_predecessors) - set(defects_child))
    if operation == "repair" and fixed and executed:
        return "necessary_repair", [f"fixed: {', '.join(fixed)}"]
    if not executed:
        return "insufficient_evidence", ["no executed evidence for this version"]
    best = max(weighted_predecessors, default=1.0)
    if weighted_child - best >= margin:
        return "substantive_progress", [f"weighted profile {best:.2f} -> {weighted_child:.2f}"]
    return "insufficient_evidence", [f"weighted profile {best:.2f} -> {weighted_child:.2f} (< +{margin})"]


# -- tables -------------------------------------------------------------------------------------
def profile_table(recs: DiscoveryRecords) -> pd.DataFrame:
    """Level 1: one row per hypothesis version — the eight axes, weighted score and readiness."""
    import pandas as pd

    hyp = {h.hypothesis_id: h for h in recs.hypotheses}
    rows = []
    for p in recs.profiles:
        h = hyp[p.hypothesis_id]
        rows.append(
            {
                "hypothesis_id": p.hypothesis_id,
                "episode": p.episode,
                "direction": h.direction,
                "operation": h.operation,
                **p.axes,
                "weighted": p.weighted,
                "execution_ready": p.execution_ready,
                "verdict": p.inputs.get("verdict"),
            }
        )
    return pd.DataFrame(rows)


def axis_means(recs: DiscoveryRecords, windows: int = 3) -> pd.DataFrame:
    """Mean of each axis and of the weighted score per window of episodes (like the paper's Table 2)."""
    prof = profile_table(recs)
    if not len(prof):
        return prof
    n_ep = int(prof.episode.max()) + 1
    k = max(1, min(windows, n_ep))
    prof["window"] = [
        f"episodes {i * n_ep // k + 1}-{(i + 1) * n_ep // k}" for i in (prof.episode * k // n_ep)
    ]
    cols = [*AXIS_WEIGHTS, "weighted"]
    out = prof.groupby("window", sort=False)[cols].mean().T
    out.index = [f"{c} ({AXIS_WEIGHTS[c]})" if c in AXIS_WEIGHTS else "weighted Q" for c in cols]
    return out


def progress_table(recs: DiscoveryRecords) -> pd.DataFrame:
    """Level 2: one row per revision with its progress label and predecessors."""
    import pandas as pd

    return pd.DataFrame([p.model_dump(mode="json") for p in recs.progress])


def path_scores(recs: DiscoveryRecords) -> pd.DataFrame:
    """Level 3: seven path dimensions (1–10) and the weighted path score for each leaf's path.

    A path is a leaf with all its ancestors in true lineage order. Each dimension is 1 + 9·x with x:
    L1 connection — measurement groups the path brings together, (n − 1)/4;
    L2 exploration — distinct analyses per version × groups touched/4;
    L3 cumulative progress — ½·share of substantive-progress/necessary-repair labels + ½·(last −
    first weighted profile)/4; L4 evidence discipline — share of versions executed with every
    control and decidable criteria; L5 continuity and synthesis — 0.7·share of revisions built on
    executed parents + 0.3·[a crossover on the path]; L6 stopping — 1 − (trailing duplicate or
    insufficient labels beyond one)/labels; L7 budget efficiency — distinct executed analyses/length.
    """
    import pandas as pd

    g = ResearchGraph.from_records(recs)
    prof = {p.hypothesis_id: p for p in recs.profiles}
    label = {p.hypothesis_id: p.label for p in recs.progress}
    ex = {e.hypothesis_id: e for e in recs.executions}
    rows = []
    for leaf in g.leaves():
        path = g.path_to(leaf)
        nodes = [g.nodes[x] for x in path]
        groups = {grp for n in nodes for grp in n.content.plan.spec.get("added", [])}
        groups |= {grp for n in nodes for grp in n.content.plan.spec.get("baseline", [])}
        fps = [t.fingerprint for t in recs.tasks if t.hypothesis_id in path]
        fp_of = {t.hypothesis_id: t.fingerprint for t in recs.tasks if t.hypothesis_id in path}
        executed = [x for x in path if x in ex and ex[x].status == "ok"]
        labels = [label[x] for x in path if x in label]
        useful = sum(lb in ("substantive_progress", "necessary_repair") for lb in labels)
        w = [prof[x].weighted for x in path if x in prof]
        disciplined = [
            (x in ex and ex[x].status == "ok")
            and prof[x].inputs.get("controls_run", 0) >= prof[x].inputs.get("controls_offered", 2)
            and prof[x].inputs.get("decidable", False)
            for x in path
            if x in prof
        ]
        tail = 0
        for lb in reversed(labels):
            if lb in ("duplicate", "insufficient_evidence"):
                tail += 1
            else:
                break
        continuity = sum(1 for n in nodes[1:] if all(p in ex and ex[p].status == "ok" for p in n.parents))
        synthesis = any(n.operation == "crossover" for n in nodes)
        dims = {
            "L1_connection": 1 + 9 * _clip((len(groups) - 1) / 4),
            "L2_exploration": 1 + 9 * (len(set(fps)) / max(len(path), 1)) * _clip(len(groups) / 4),
            "L3_cumulative_progress": 1
            + 9
            * (
                0.5 * (useful / len(labels) if labels else 0.0)
                + 0.5 * _clip((w[-1] - w[0]) / 4 if w else 0.0)
            ),
            "L4_evidence_discipline": 1 + 9 * (sum(disciplined) / len(disciplined) if disciplined else 0.0),
            "L5_continuity_synthesis": 1
            + 9 * (0.7 * (continuity / (len(nodes) - 1) if len(nodes) > 1 else 0.0) + 0.3 * synthesis),
            "L6_stopping": 1 + 9 * (1 - _clip(max(0, tail - 1) / max(len(labels), 1))),
            "L7_budget_efficiency": 1 + 9 * len({fp_of[x] for x in executed if x in fp_of}) / len(path),
        }
        rows.append(
            {
                "leaf": leaf,
                "direction": g.nodes[leaf].direction,
                "length": len(path),
                "depth": g.depth(leaf),
                **{k: round(v, 3) for k, v in dims.items()},
                "path_score": weighted(dims, PATH_WEIGHTS),
            }
        )
    return pd.DataFrame(rows)


def operation_shares(recs: DiscoveryRecords) -> pd.DataFrame:
    """Level 4: the Lead's operation per episode (one row per episode, one-hot columns)."""
    import pandas as pd

    rows = []
    for d in sorted(recs.lead_decisions, key=lambda d: d.episode):
        if d.fallback or d.valid:
            rows.append({"episode": d.episode, **{op: int(d.operation == op) for op in OPERATIONS}})
    df = pd.DataFrame(rows, columns=["episode", *OPERATIONS])
    return df.drop_duplicates("episode", keep="last").reset_index(drop=True)


def campaign_allocation(
    recs: DiscoveryRecords, budgets: dict[str, dict[str, float]] | None = None
) -> dict[str, Any]:
    """Level 4: breadth, branch synthesis and budget use of the whole campaign (the graph, not paths)."""
    g = ResearchGraph.from_records(recs)
    ops = operation_shares(recs)
    n_ep = max(len(ops), 1)
    directions = {h.direction for h in recs.hypotheses}
    ex = {e.hypothesis_id: e.status for e in recs.executions}
    crossovers = [h for h in recs.hypotheses if h.operation == "crossover"]
    labels = Counter(p.label for p in recs.progress)
    fps = Counter(t.fingerprint for t in recs.tasks)
    out: dict[str, Any] = {
        "episodes": len(ops),
        "hypotheses": len(g.nodes),
        "families": len(g.roots()),
        "directions": len(directions),
        "max_depth": g.max_depth(),
        "lineage_edges": len(g.lineage_edges()),
        "operation_shares": {op: round(float(ops[op].sum()) / n_ep, 3) for op in OPERATIONS}
        if len(ops)
        else {},
        "branch_synthesis": {
            "crossovers": len(crossovers),
            "executed": sum(ex.get(h.hypothesis_id) == "ok" for h in crossovers),
            "substantive": sum(
                p.label == "substantive_progress"
                for p in recs.progress
                if p.hypothesis_id in {h.hypothesis_id for h in crossovers}
            ),
        },
        "progress_labels": dict(labels),
        "executions": dict(Counter(ex.values())),
        "duplicate_analyses": sum(n - 1 for n in fps.values() if n > 1),
        "critiques": dict(Counter(c.outcome for c in recs.critiques)),
    }
    if budgets:
        out["budget_use"] = {
            k: round(v["spent"] / v["initial"], 3) if v["initial"] else 0.0 for k, v in budgets.items()
        }
    return out
