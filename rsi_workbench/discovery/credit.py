"""Hypothesis credit optimization (DiscoveryRSI eq. 2-7, 9): evaluation to bounded trajectory weights.

Three links, each a pure function of typed records and declared thresholds:
  1. evaluation (eq. 2): blinded Critique preferences -> a TrueSkill posterior (mu, sigma, n) per
     hypothesis version, using the ``trueskill`` package; abstentions update nothing;
  2. hypothesis weight (eq. 3-5): conservative score s = mu - kappa*sigma, tie-aware rank within a
     stratum, reliability factors and the bounded transform q; missing assessments stay unknown;
  3. contributor shares and caps (eq. 6-7): only evidenced contribution edges, shares alpha with
     coordination ratio gamma, duplicate suppression, local/global family budgets, w = min(W_max, sum b).
Training weights omega (eq. 9) are then frozen into a :class:`TrainingRelease` for ``sft.py``.
Proposition 1 (allocation <= q~_h, family totals <= C_glob, w in [0, W_max]) holds by construction
and is property-tested.
"""

from __future__ import annotations

import bisect
import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from scipy.stats import norm

from rsi_workbench.discovery.records import DiscoveryRecords, HypothesisVersion, RoleTurn

if TYPE_CHECKING:
    import pandas as pd

Role = Literal["lead", "generation", "evolution", "critique", "compiler", "progress"]
ROLES: tuple[Role, ...] = ("lead", "generation", "evolution", "critique", "compiler", "progress")
WORKER_ROLES: frozenset[str] = frozenset({"generation", "evolution"})  # may hold production edges
NEVER_SUPERVISED: frozenset[str] = frozenset({"critique", "compiler", "progress"})  # context/provenance only
Outcome = Literal["a", "b", "tie", "abstain"]
ProgressLabel = Literal["substantive_progress", "necessary_repair", "duplicate", "insufficient_evidence"]
PROGRESS_LABELS: tuple[str, ...] = (
    "substantive_progress",
    "necessary_repair",
    "duplicate",
    "insufficient_evidence",
)


# ---------------------------------------------------------------------------------------------
# Typed inputs (adapters in ``discovery`` map research-graph records onto these)
@dataclass(frozen=True)
class Comparison:
    """One blinded Critique judgement between hypothesis versions ``a`` and ``b`` (record order matters)."""

    a: str
    b: str
    outcome: Outcome


@dataclass(frozen=True)
class Assessment:
    """Scientific assessment of one hypothesis version: validity, marginal duplicate, Progress label."""

    hypothesis: str
    valid: bool = True
    marginal_duplicate: bool = False
    progress: ProgressLabel | None = None  # ancestor-aware Progress judgement; None = not assessed


@dataclass(frozen=True)
class HypothesisNode:
    """A hypothesis version as the credit pipeline sees it: stratum, publication, families, evidence."""

    id: str
    domain: str = "default"
    round: int = 0
    episode: str = ""
    publisher: str | None = None  # agent id of the direct publisher
    created_at: float = 0.0
    proposal_sha256: str | None = None  # hash of the original proposal text
    support_files: Mapping[str, str] = field(default_factory=dict)  # path -> sha256
    local_family: str | None = None  # lineage family (defaults to the id)
    global_family: str | None = None  # scientific family (defaults to the local family)
    duplicate_key: str | None = None  # content key of a registration; repeats are suppressed

    @property
    def loc(self) -> str:
        return self.local_family or self.id

    @property
    def glob(self) -> str:
        return self.global_family or self.loc


@dataclass(frozen=True)
class TrajectoryNode:
    """A collected agent trajectory (the training unit): role, author, episode, domain, memory group."""

    id: str
    role: Role
    agent: str = ""
    episode: str = ""
    domain: str = "default"
    group: str = "default"  # shared-memory group for eq. 9 balance
    started_at: float = 0.0
    text_sha256s: frozenset[str] = frozenset()  # hashes of proposal texts it wrote
    files: Mapping[str, str] = field(default_factory=dict)  # path -> sha256 of files it wrote


@dataclass(frozen=True)
class Promotion:
    """An exact draft-revision promotion record: the draft written by ``draft_author`` became ``hypothesis``."""

    id: str
    hypothesis: str
    draft_author: str  # trajectory id
    promoted_by: str | None = None  # trajectory id of the promoting Lead, if any


@dataclass(frozen=True)
class Assignment:
    """A Lead work-assignment record; ``hypotheses`` are the versions the assigned work produced."""

    id: str
    hypotheses: frozenset[str]
    lead: str  # trajectory id


Basis = Literal[
    "direct_publication",
    "proposal_text",
    "draft_promotion",
    "support_file",
    "assignment",
    "promotion",
    "shared_episode",
    "lineage",
    "worker_call",
]


@dataclass(frozen=True)
class ContributionClaim:
    """A candidate contribution edge with the evidence it rests on (``ref``: record id or file path)."""

    trajectory: str
    hypothesis: str
    basis: Basis
    ref: str | None = None


@dataclass(frozen=True)
class ContributionEdge:
    """An admitted edge: ``kind`` is coordination (L_h) or production (P_h)."""

    trajectory: str
    hypothesis: str
    kind: Literal["coordination", "production"]
    basis: str
    ref: str | None = None


# ---------------------------------------------------------------------------------------------
# Settings (paper defaults)
@dataclass(frozen=True)
class TrueSkillSettings:
    """TrueSkill environment for eq. 2; the library's defaults (mu0=25, sigma0=25/3, beta=25/6, tau=sigma0/100)."""

    mu0: float = 25.0
    sigma0: float = 25.0 / 3.0
    beta: float = 25.0 / 6.0
    tau: float = 25.0 / 300.0
    draw_probability: float = 0.10

    @property
    def draw_margin(self) -> float:
        """The paper's epsilon for this draw probability (two players)."""
        return draw_margin_from_probability(self.draw_probability, self.beta)


@dataclass(frozen=True)
class WeightSettings:
    """Eq. 3-5 constants: kappa, nu, sigma_ref, [q_min, q_max], lambda_p."""

    kappa: float = 2.0
    nu: float = 2.0
    sigma_ref: float = 8.3333
    q_min: float = 0.5
    q_max: float = 2.0
    lambda_p: float = 0.25


@dataclass(frozen=True)
class ShareSettings:
    """Eq. 6-7 constants: coordination ratio gamma, family budgets C_loc / C_glob, cap W_max."""

    gamma: float = 0.2
    c_loc: float = 2.0
    c_glob: float = 2.0
    w_max: float = 2.0


# ---------------------------------------------------------------------------------------------
# Eq. 2: TrueSkill evaluation
def draw_margin_from_probability(draw_probability: float, beta: float, n_players: int = 2) -> float:
    """epsilon = Phi^{-1}((p + 1) / 2) * sqrt(n) * beta: the margin ``trueskill`` derives from a draw probability."""
    if not 0.0 <= draw_probability < 1.0:
        raise ValueError(f"draw_probability must be in [0, 1); got {draw_probability}")
    return float(norm.ppf((draw_probability + 1.0) / 2.0) * math.sqrt(n_players) * beta)


def draw_probability_from_margin(draw_margin: float, beta: float, n_players: int = 2) -> float:
    """p = 2 Phi(epsilon / (sqrt(n) beta)) - 1: probability that |t_a - t_b| <= epsilon for equal skills."""
    if draw_margin < 0.0:
        raise ValueError(f"draw_margin must be >= 0; got {draw_margin}")
    return float(2.0 * norm.cdf(draw_margin / (math.sqrt(n_players) * beta)) - 1.0)


@dataclass(frozen=True)
class HypothesisRating:
    """Posterior of eq. 2 for one hypothesis version: mu, sigma and the number of effective comparisons."""

    hypothesis: str
    mu: float
    sigma: float
    n_effective: int


def rate_hypotheses(
    comparisons: Iterable[Comparison],
    hypotheses: Iterable[str] = (),
    settings: TrueSkillSettings = TrueSkillSettings(),
) -> dict[str, HypothesisRating]:
    """Run eq. 2 over Critique judgements in record order; preferences and ties update both, abstains nothing."""
    import trueskill

    env = trueskill.TrueSkill(
        mu=settings.mu0,
        sigma=settings.sigma0,
        beta=settings.beta,
        tau=settings.tau,
        draw_probability=settings.draw_probability,
    )
    ratings: dict[str, trueskill.Rating] = {}
    n: dict[str, int] = defaultdict(int)
    for h in hypotheses:
        ratings.setdefault(h, env.create_rating())
    for c in comparisons:
        if c.outcome not in ("a", "b", "tie", "abstain"):
            raise ValueError(f"comparison {c}: outcome must be one of a, b, tie, abstain")
        if c.a == c.b:
            raise ValueError(f"comparison {c}: a hypothesis cannot be compared with itself")
        ra = ratings.setdefault(c.a, env.create_rating())
        rb = ratings.setdefault(c.b, env.create_rating())
        if c.outcome == "abstain":
            continue  # insufficient evidence: no preference update
        if c.outcome == "b":
            rb, ra = trueskill.rate_1vs1(rb, ra, env=env)
        else:
            ra, rb = trueskill.rate_1vs1(ra, rb, drawn=c.outcome == "tie", env=env)
        ratings[c.a], ratings[c.b] = ra, rb
        n[c.a] += 1
        n[c.b] += 1
    return {h: HypothesisRating(h, float(r.mu), float(r.sigma), n[h]) for h, r in ratings.items()}


# ---------------------------------------------------------------------------------------------
# Eq. 3-5: bounded hypothesis weight
def conservative_score(mu: float, sigma: float, kappa: float = 2.0) -> float:
    """s_h = mu_h - kappa * sigma_h (eq. 3): the Phi(-kappa) posterior quantile."""
    return mu - kappa * sigma


def tie_aware_rank(score: float, stratum_scores: Sequence[float], *, presorted: bool = False) -> float:
    """r_h (eq. 3): (#{s_k < s_h} + 1/2 #{s_k = s_h}) / |S|, where S includes h itself."""
    if not stratum_scores:
        raise ValueError("stratum is empty")
    ordered = stratum_scores if presorted else sorted(stratum_scores)
    below = bisect.bisect_left(ordered, score)
    equal = bisect.bisect_right(ordered, score) - below
    return (below + 0.5 * equal) / len(ordered)


def coverage_reliability(n_effective: int, nu: float = 2.0) -> float:
    """rho_cov = n / (n + nu) (eq. 4)."""
    return n_effective / (n_effective + nu)


def uncertainty_reliability(sigma: float, sigma_ref: float = 8.3333) -> float:
    """rho_unc = 1 / (1 + sigma / sigma_ref) (eq. 4)."""
    return 1.0 / (1.0 + sigma / sigma_ref)


def bounded_weight(
    rank: float,
    rho_cov: float,
    rho_unc: float,
    valid: bool,
    progress: bool,
    s: WeightSettings = WeightSettings(),
) -> float:
    """q_h = v_h min{q_max, q_min + (q_max - q_min) r rho_cov rho_unc + lambda_p p_h} (eq. 5)."""
    if not valid:
        return 0.0
    return min(
        s.q_max, s.q_min + (s.q_max - s.q_min) * rank * rho_cov * rho_unc + s.lambda_p * float(progress)
    )


@dataclass(frozen=True)
class HypothesisWeight:
    """Eq. 3-5 for one hypothesis. ``q`` is None when unknown (no assessment or no effective comparison)."""

    hypothesis: str
    stratum: str
    mu: float
    sigma: float
    n_effective: int
    s: float
    rank: float | None
    rho_cov: float
    rho_unc: float
    valid: bool | None  # v_h; None = unknown
    progress: bool | None  # p_h; None = no Progress judgement recorded
    q: float | None
    status: Literal["scored", "invalid", "unknown"]


def default_stratum(h: HypothesisNode) -> str:
    """Default stratum S: hypotheses of the same domain and round."""
    return f"{h.domain}/round{h.round}"


def hypothesis_weights(
    ratings: Mapping[str, HypothesisRating],
    assessments: Iterable[Assessment],
    hypotheses: Mapping[str, HypothesisNode] | None = None,
    settings: WeightSettings = WeightSettings(),
    stratum: Callable[[HypothesisNode], str] = default_stratum,
) -> dict[str, HypothesisWeight]:
    """Eq. 3-5 for every rated hypothesis; ranks are taken among valid, scored peers of the same stratum.

    v_h = 1 needs a documented valid assessment, at least one effective comparison and no marginal
    duplicate judgement; a hypothesis with no assessment or no comparison is ``unknown`` (q = None),
    never zero.
    """
    by_h: dict[str, Assessment] = {}
    for a in assessments:
        prev = by_h.get(a.hypothesis)
        if prev is None:
            by_h[a.hypothesis] = a
        else:  # several assessments: invalid/duplicate anywhere wins; keep the most informative progress
            by_h[a.hypothesis] = Assessment(
                a.hypothesis,
                valid=prev.valid and a.valid,
                marginal_duplicate=prev.marginal_duplicate or a.marginal_duplicate,
                progress=_merge_progress(prev.progress, a.progress),
            )
    nodes = hypotheses or {}
    strata: dict[str, str] = {h: stratum(nodes.get(h) or HypothesisNode(h)) for h in ratings}
    scores = {h: conservative_score(r.mu, r.sigma, settings.kappa) for h, r in ratings.items()}
    invalid = {h for h, a in by_h.items() if not a.valid or a.marginal_duplicate or a.progress == "duplicate"}
    known = {h for h, r in ratings.items() if r.n_effective > 0 and h in by_h and h not in invalid}
    peers: dict[str, list[float]] = defaultdict(list)
    for h in known:
        peers[strata[h]].append(scores[h])
    for v in peers.values():
        v.sort()
    out: dict[str, HypothesisWeight] = {}
    for h, r in ratings.items():
        got = by_h.get(h)
        rc = coverage_reliability(r.n_effective, settings.nu)
        ru = uncertainty_reliability(r.sigma, settings.sigma_ref)
        progress = (
            None
            if got is None or got.progress is None
            else got.progress in ("substantive_progress", "necessary_repair")
        )
        if h in invalid:
            out[h] = HypothesisWeight(
                h,
                strata[h],
                r.mu,
                r.sigma,
                r.n_effective,
                scores[h],
                None,
                rc,
                ru,
                False,
                progress,
                0.0,
                "invalid",
            )
        elif h not in known:
            out[h] = HypothesisWeight(
                h,
                strata[h],
                r.mu,
                r.sigma,
                r.n_effective,
                scores[h],
                None,
                rc,
                ru,
                None,
                progress,
                None,
                "unknown",
            )
        else:
            rank = tie_aware_rank(scores[h], peers[strata[h]], presorted=True)
            q = bounded_weight(rank, rc, ru, True, bool(progress), settings)
            out[h] = HypothesisWeight(
                h,
                strata[h],
                r.mu,
                r.sigma,
                r.n_effective,
                scores[h],
                rank,
                rc,
                ru,
                True,
                progress,
                q,
                "scored",
            )
    return out


def _merge_progress(a: ProgressLabel | None, b: ProgressLabel | None) -> ProgressLabel | None:
    order = {
        None: 0,
        "insufficient_evidence": 1,
        "substantive_progress": 2,
        "necessary_repair": 2,
        "duplicate": 3,
    }
    return a if order[a] >= order[b] else b


# ---------------------------------------------------------------------------------------------
# Eq. 6: evidenced contribution edges
@dataclass(frozen=True)
class EdgeDecision:
    """Why a contribution claim was admitted or rejected (written to the records for audit)."""

    claim: ContributionClaim
    admitted: bool
    kind: Literal["coordination", "production"] | None
    reason: str


def admit_edges(
    claims: Iterable[ContributionClaim],
    trajectories: Mapping[str, TrajectoryNode],
    hypotheses: Mapping[str, HypothesisNode],
    promotions: Mapping[str, Promotion] = {},  # noqa: B006 - read-only default
    assignments: Mapping[str, Assignment] = {},  # noqa: B006
) -> list[EdgeDecision]:
    """Check each claim against the records; only publication, documented production and Lead coordination count.

    Direct publication needs publisher, episode and creation-time lineage to match; documented production
    needs the original proposal text hash, an exact draft promotion record, or a hash-and-path matched
    support file; Lead coordination needs an assignment or a publication/promotion record. Sharing an
    episode, appearing in the lineage or completing a worker call earns nothing.
    """
    out: list[EdgeDecision] = []
    for c in claims:
        t, h = trajectories.get(c.trajectory), hypotheses.get(c.hypothesis)
        if t is None or h is None:
            missing = "trajectory" if t is None else "hypothesis"
            out.append(EdgeDecision(c, False, None, f"unknown {missing}"))
            continue
        if t.role in NEVER_SUPERVISED:
            out.append(EdgeDecision(c, False, None, f"{t.role} records are context or provenance only"))
            continue
        ok, reason = _check(c, t, h, promotions, assignments)
        kind: Literal["coordination", "production"] | None = None
        if ok:
            kind = "coordination" if t.role == "lead" else "production"
        out.append(EdgeDecision(c, ok, kind, reason))
    return out


def _check(
    c: ContributionClaim,
    t: TrajectoryNode,
    h: HypothesisNode,
    promotions: Mapping[str, Promotion],
    assignments: Mapping[str, Assignment],
) -> tuple[bool, str]:
    lead = t.role == "lead"
    if c.basis == "direct_publication":
        if h.publisher != t.agent:
            return False, "publisher does not match the trajectory's agent"
        if h.episode != t.episode:
            return False, "episode does not match"
        if t.started_at > h.created_at:
            return False, "trajectory started after the hypothesis was created"
        return True, "Lead publication record (coordination only)" if lead else "direct publication"
    if c.basis == "proposal_text":
        if lead:
            return False, "Lead authorship unresolved: coordination needs an assignment or promotion record"
        if h.proposal_sha256 is None or h.proposal_sha256 not in t.text_sha256s:
            return False, "proposal text hash not written by the trajectory"
        if c.ref is not None and c.ref != h.proposal_sha256:
            return False, "claimed proposal text is not the hypothesis's original proposal"
        return True, "original proposal text"
    if c.basis == "support_file":
        if lead:
            return False, "Lead authorship unresolved: coordination needs an assignment or promotion record"
        path = c.ref or ""
        if path not in h.support_files or t.files.get(path) != h.support_files[path]:
            return False, "support file hash and path do not match"
        return True, "hash-and-path matched support file"
    if c.basis in ("draft_promotion", "promotion"):
        p = promotions.get(c.ref or "")
        if p is None or p.hypothesis != h.id:
            return False, "no matching promotion record"
        if lead and p.promoted_by == t.id:
            return True, "Lead promotion record"
        if not lead and p.draft_author == t.id:
            return True, "exact draft promotion"
        return False, "promotion record names another trajectory"
    if c.basis == "assignment":
        a = assignments.get(c.ref or "")
        if not lead:
            return False, "assignments credit only the coordinating Lead"
        if a is None or h.id not in a.hypotheses or a.lead != t.id:
            return False, "no matching assignment record"
        return True, "Lead work assignment"
    return False, f"{c.basis} earns no credit edge"


def contributor_shares(edges: Iterable[ContributionEdge], gamma: float = 0.2) -> dict[str, dict[str, float]]:
    """alpha_ih (eq. 6): gamma/|L_h| to coordinators, (1 - gamma)/|P_h| to producers; empty pools stay unallocated."""
    coord: dict[str, set[str]] = defaultdict(set)
    prod: dict[str, set[str]] = defaultdict(set)
    for e in edges:  # sets: a duplicated edge counts once
        (coord if e.kind == "coordination" else prod)[e.hypothesis].add(e.trajectory)
    alpha: dict[str, dict[str, float]] = defaultdict(dict)
    for h in set(coord) | set(prod):
        for i in coord.get(h, ()):
            alpha[h][i] = alpha[h].get(i, 0.0) + gamma / len(coord[h])
        for i in prod.get(h, ()):
            alpha[h][i] = alpha[h].get(i, 0.0) + (1.0 - gamma) / len(prod[h])
    return dict(alpha)


# ---------------------------------------------------------------------------------------------
# Eq. 7: duplicate suppression, family budgets, trajectory weights
@dataclass(frozen=True)
class CappedWeight:
    """q~_h: q after duplicate suppression and the local then global family budgets."""

    hypothesis: str
    q: float
    q_tilde: float
    suppressed_duplicate_of: str | None
    local_scale: float
    global_scale: float


def family_caps(
    q: Mapping[str, float], hypotheses: Mapping[str, HypothesisNode], c_loc: float = 2.0, c_glob: float = 2.0
) -> dict[str, CappedWeight]:
    """Suppress repeated registrations (same ``duplicate_key``; the earliest keeps credit), then scale each
    local lineage family to total <= C_loc and each global scientific family to total <= C_glob."""
    nodes = {h: hypotheses.get(h) or HypothesisNode(h) for h in q}
    first: dict[str, str] = {}
    dup_of: dict[str, str | None] = {}
    for h in sorted(q, key=lambda h: (nodes[h].created_at, h)):
        key = nodes[h].duplicate_key
        if key is not None and key in first:
            dup_of[h] = first[key]
        else:
            dup_of[h] = None
            if key is not None:
                first[key] = h
    q0 = {h: (0.0 if dup_of[h] else max(0.0, v)) for h, v in q.items()}
    loc_tot: dict[str, float] = defaultdict(float)
    for h, v in q0.items():
        loc_tot[nodes[h].loc] += v
    loc_scale = {f: (min(1.0, c_loc / t) if t > 0 else 1.0) for f, t in loc_tot.items()}
    q1 = {h: v * loc_scale[nodes[h].loc] for h, v in q0.items()}
    glob_tot: dict[str, float] = defaultdict(float)
    for h, v in q1.items():
        glob_tot[nodes[h].glob] += v
    glob_scale = {f: (min(1.0, c_glob / t) if t > 0 else 1.0) for f, t in glob_tot.items()}
    return {
        h: CappedWeight(
            h,
            q[h],
            q1[h] * glob_scale[nodes[h].glob],
            dup_of[h],
            loc_scale[nodes[h].loc],
            glob_scale[nodes[h].glob],
        )
        for h in q
    }


def trajectory_weights(
    alpha: Mapping[str, Mapping[str, float]], q_tilde: Mapping[str, float], w_max: float = 2.0
) -> tuple[dict[str, float], dict[tuple[str, str], float]]:
    """b_ih = alpha_ih q~_h and w_i = min(W_max, sum_h b_ih) (eq. 7); returns (w, b)."""
    b: dict[tuple[str, str], float] = {}
    total: dict[str, float] = defaultdict(float)
    for h, shares in alpha.items():
        qt = q_tilde.get(h, 0.0)
        for i, a in shares.items():
            b[(i, h)] = a * qt
            total[i] += a * qt
    return {i: min(w_max, v) for i, v in total.items()}, b


# ---------------------------------------------------------------------------------------------
# Eq. 9: frozen training release
@dataclass(frozen=True)
class TrainingRelease:
    """Frozen eq. 9 weights: omega_i per trajectory, with the eta and group denominators it used."""

    omega: Mapping[str, float]
    eta: Mapping[str, float]
    groups_per_domain: Mapping[str, int]
    group_totals: Mapping[str, float]  # "domain/group" -> sum of w in that group

    def to_json(self) -> dict[str, object]:
        return {
            "omega": dict(self.omega),
            "eta": dict(self.eta),
            "groups_per_domain": dict(self.groups_per_domain),
            "group_totals": dict(self.group_totals),
        }

    @classmethod
    def from_json(cls, d: Mapping[str, object]) -> TrainingRelease:
        return cls(
            dict(d["omega"]),  # type: ignore[call-overload]
            dict(d["eta"]),  # type: ignore[call-overload]
            dict(d["groups_per_domain"]),  # type: ignore[call-overload]
            dict(d["group_totals"]),  # type: ignore[call-overload]
        )


def training_weights(
    w: Mapping[str, float],
    trajectories: Mapping[str, TrajectoryNode],
    eta: Mapping[str, float] | None = None,
) -> TrainingRelease:
    """omega_i = eta_d/|G_d| * w_i / sum_{k in (d, g)} w_k (eq. 9), frozen once for a training release.

    Only trajectories with w_i > 0 enter; ``eta`` defaults to uniform over the domains present and must
    sum to 1. The result is never renormalized per minibatch.
    """
    live = {i: v for i, v in w.items() if v > 0.0}
    for i in live:
        if i not in trajectories:
            raise ValueError(f"trajectory weight for unknown trajectory {i!r}")
    domains = sorted({trajectories[i].domain for i in live})
    if eta is None:
        eta = {d: 1.0 / len(domains) for d in domains} if domains else {}
    else:
        if not math.isclose(sum(eta.values()), 1.0, abs_tol=1e-9):
            raise ValueError(
                f"eta: domain coefficients must sum to 1; got {sum(eta.values())} from {dict(eta)}"
            )
        missing = [d for d in domains if d not in eta]
        if missing:
            raise ValueError(f"eta: no coefficient for domain(s) {missing}; allowed keys: {sorted(eta)}")
    group_tot: dict[tuple[str, str], float] = defaultdict(float)
    for i, v in live.items():
        t = trajectories[i]
        group_tot[(t.domain, t.group)] += v
    n_groups: dict[str, int] = defaultdict(int)
    for d, _g in group_tot:
        n_groups[d] += 1
    omega = {}
    for i, v in live.items():
        t = trajectories[i]
        omega[i] = eta[t.domain] / n_groups[t.domain] * v / group_tot[(t.domain, t.group)]
    return TrainingRelease(
        omega, dict(eta), dict(n_groups), {f"{d}/{g}": tot for (d, g), tot in group_tot.items()}
    )


# ---------------------------------------------------------------------------------------------
# The whole pipeline
@dataclass(frozen=True)
class CreditSettings:
    """All credit constants in one place (paper defaults)."""

    trueskill: TrueSkillSettings = TrueSkillSettings()
    weight: WeightSettings = WeightSettings()
    shares: ShareSettings = ShareSettings()
    eta: Mapping[str, float] | None = None


@dataclass(frozen=True)
class CreditRecords:
    """Everything the credit pipeline reads from a research graph."""

    hypotheses: Mapping[str, HypothesisNode]
    trajectories: Mapping[str, TrajectoryNode]
    comparisons: Sequence[Comparison]
    assessments: Sequence[Assessment]
    claims: Sequence[ContributionClaim]
    promotions: Mapping[str, Promotion] = field(default_factory=dict)
    assignments: Mapping[str, Assignment] = field(default_factory=dict)


@dataclass(frozen=True)
class CreditResult:
    """Every intermediate table of the pipeline, so a decision can be recomputed and audited."""

    ratings: dict[str, HypothesisRating]
    weights: dict[str, HypothesisWeight]
    edges: list[EdgeDecision]
    alpha: dict[str, dict[str, float]]
    capped: dict[str, CappedWeight]
    b: dict[tuple[str, str], float]
    w: dict[str, float]
    release: TrainingRelease


def assign_credit(records: CreditRecords, settings: CreditSettings = CreditSettings()) -> CreditResult:
    """Eq. 2-7 and 9 end to end: ratings, hypothesis weights, admitted edges, shares, caps, w and omega."""
    ratings = rate_hypotheses(records.comparisons, records.hypotheses, settings.trueskill)
    weights = hypothesis_weights(ratings, records.assessments, records.hypotheses, settings.weight)
    decisions = admit_edges(
        records.claims, records.trajectories, records.hypotheses, records.promotions, records.assignments
    )
    edges = [
        ContributionEdge(d.claim.trajectory, d.claim.hypothesis, d.kind, d.claim.basis, d.claim.ref)
        for d in decisions
        if d.admitted and d.kind is not None
    ]
    alpha = contributor_shares(edges, settings.shares.gamma)
    q = {h: hw.q for h, hw in weights.items() if hw.q is not None}
    capped = family_caps(q, records.hypotheses, settings.shares.c_loc, settings.shares.c_glob)
    w, b = trajectory_weights(alpha, {h: c.q_tilde for h, c in capped.items()}, settings.shares.w_max)
    release = training_weights(w, records.trajectories, settings.eta)
    return CreditResult(ratings, weights, decisions, alpha, capped, b, w, release)


def credit_tables(result: CreditResult) -> dict[str, pd.DataFrame]:
    """Pandas tables of a :class:`CreditResult`: hypotheses (eq. 2-5, 7 caps), edges, trajectories (w, omega)."""
    import pandas as pd

    hyp = pd.DataFrame(
        [
            {
                **{
                    k: getattr(hw, k)
                    for k in ("hypothesis", "stratum", "mu", "sigma", "n_effective", "s", "rank")
                },
                **{k: getattr(hw, k) for k in ("rho_cov", "rho_unc", "valid", "progress", "q", "status")},
                "q_tilde": result.capped[h].q_tilde if h in result.capped else None,
                "duplicate_of": result.capped[h].suppressed_duplicate_of if h in result.capped else None,
            }
            for h, hw in result.weights.items()
        ]
    )
    edges = pd.DataFrame(
        [
            {
                "trajectory": d.claim.trajectory,
                "hypothesis": d.claim.hypothesis,
                "basis": d.claim.basis,
                "admitted": d.admitted,
                "kind": d.kind,
                "alpha": result.alpha.get(d.claim.hypothesis, {}).get(d.claim.trajectory)
                if d.admitted
                else None,
                "reason": d.reason,
            }
            for d in result.edges
        ]
    )
    traj = pd.DataFrame(
        [{"trajectory": i, "w": v, "omega": result.release.omega.get(i, 0.0)} for i, v in result.w.items()]
    )
    return {"hypotheses": hyp, "edges": edges, "trajectories": traj}


# ---------------------------------------------------------------------------------------------
# Adapter: research-graph records (discovery.records) -> credit inputs
def _sha(text: str) -> str:
    import hashlib

    return hashlib.sha256(text.encode()).hexdigest()


def credit_records_from(
    recs: DiscoveryRecords,
    *,
    group: str = "campaign",
    global_family: Callable[[HypothesisVersion], str] | None = None,
) -> CreditRecords:
    """Map a run's typed records onto the credit pipeline's inputs.

    Hypothesis versions become nodes (local family = lineage family; global family = the research
    direction unless given; duplicate key = the compiled task's fingerprint, so a re-registered
    identical analysis is suppressed); role turns become trajectories (all in one shared-memory
    ``group``); critiques become comparisons in record order; profiles and Progress labels become
    assessments; contribution records become claims, one per piece of evidence they carry.
    """
    gfam = global_family or (lambda h: f"{h.domain}/{h.direction}")
    drafts = {d.draft_id: d for d in recs.drafts}
    fingerprint: dict[str, str] = {}
    for task in recs.tasks:
        fingerprint.setdefault(task.hypothesis_id, task.fingerprint)
    sources = {s.source_id: s for s in recs.sources}
    support: dict[str, dict[str, str]] = defaultdict(dict)
    for link in recs.support_links:
        src = sources.get(link.source_id)
        if link.relation == "supporting_file" and src is not None and src.path and src.sha256:
            support[link.hypothesis_id][src.path] = src.sha256
    read: dict[str, dict[str, str]] = defaultdict(dict)  # trajectory -> files it read (tool observations)
    for t in recs.turns:
        for m in t.messages_in:
            if m.get("role") == "tool":
                for f in _files_in(m.get("content", "")):
                    read[t.trajectory_id][f["path"]] = f["sha256"]
    hyps: dict[str, HypothesisNode] = {}
    episode_domain: dict[int, str] = {}
    for h in recs.hypotheses:
        draft = drafts.get(h.draft_id)
        if draft is not None:
            support[h.hypothesis_id].setdefault(draft.path, draft.sha256)
        support[h.hypothesis_id].update(read.get(h.publisher, {}))
        hyps[h.hypothesis_id] = HypothesisNode(
            h.hypothesis_id,
            domain=h.domain,
            round=h.round,
            episode=str(h.episode),
            publisher=h.publisher,
            created_at=h.created_at,
            proposal_sha256=_sha(draft.proposal_text) if draft is not None else None,
            support_files=dict(support[h.hypothesis_id]),
            local_family=h.family,
            global_family=gfam(h),
            duplicate_key=fingerprint.get(h.hypothesis_id),
        )
        episode_domain.setdefault(h.episode, h.domain)
    texts: dict[str, set[str]] = defaultdict(set)
    files: dict[str, dict[str, str]] = defaultdict(dict)
    for d in recs.drafts:
        texts[d.author].add(_sha(d.proposal_text))
        files[d.author][d.path] = d.sha256
    publisher_of = {h.hypothesis_id: h.publisher for h in recs.hypotheses}
    for e in recs.executions:  # outputs of an executed hypothesis are files its publisher's work produced
        if e.hypothesis_id in publisher_of:
            for sha in e.outputs.values():
                files[publisher_of[e.hypothesis_id]][f"artifacts/{sha}"] = sha
    first_turn: dict[str, RoleTurn] = {}
    for t in recs.turns:
        first_turn.setdefault(t.trajectory_id, t)
    trajs: dict[str, TrajectoryNode] = {}
    for tid, t in first_turn.items():
        trajs[tid] = TrajectoryNode(
            tid,
            t.role,
            agent=tid,
            episode=str(t.episode),
            domain=episode_domain.get(t.episode, "default"),
            group=group,
            started_at=float("-inf"),  # turns carry no clock; a trajectory exists before what it publishes
            text_sha256s=frozenset(texts.get(tid, ())),
            files=dict(files.get(tid, {})),
        )
    promotions = {
        p.promotion_id: Promotion(p.promotion_id, p.hypothesis_id, drafts[p.draft_id].author, p.promoted_by)
        for p in recs.promotions
        if p.draft_id in drafts and drafts[p.draft_id].sha256 == p.draft_sha256
    }
    produced: dict[str, set[str]] = defaultdict(set)  # worker trajectory -> hypotheses it produced
    for h in recs.hypotheses:
        produced[h.publisher].add(h.hypothesis_id)
    for p in promotions.values():
        produced[p.draft_author].add(p.hypothesis)
    assignments = {
        a.assignment_id: Assignment(a.assignment_id, frozenset(produced.get(a.worker, ())), a.lead)
        for a in recs.assignments
    }
    claims: list[ContributionClaim] = []
    for c in recs.contributions:
        ev = c.evidence
        tid, hid = c.trajectory_id, c.hypothesis_id
        if c.contribution == "publish":
            claims.append(ContributionClaim(tid, hid, "direct_publication"))
        if ev.proposal_text is not None:
            claims.append(ContributionClaim(tid, hid, "proposal_text", _sha(ev.proposal_text)))
        for pid in ev.promotion_ids:
            claims.append(
                ContributionClaim(tid, hid, "promotion" if c.role == "lead" else "draft_promotion", pid)
            )
        for f in ev.support_files:
            node = hyps.get(hid)
            ok = node is not None and node.support_files.get(f.get("path", "")) == f.get("sha256")
            claims.append(ContributionClaim(tid, hid, "support_file", f.get("path") if ok else None))
        if ev.assignment_id is not None:
            claims.append(ContributionClaim(tid, hid, "assignment", ev.assignment_id))
        if c.contribution == "coordinate" and ev.assignment_id is None and not ev.promotion_ids:
            claims.append(ContributionClaim(tid, hid, "shared_episode"))
    comparisons = [Comparison(c.a, c.b, c.outcome) for c in recs.critiques]
    assessed: dict[str, Assessment] = {}
    for prof in recs.profiles:
        assessed[prof.hypothesis_id] = Assessment(prof.hypothesis_id, valid=True)
    out_assess = list(assessed.values())
    for pl in recs.progress:
        out_assess.append(
            Assessment(
                pl.hypothesis_id, valid=True, marginal_duplicate=pl.label == "duplicate", progress=pl.label
            )
        )
    return CreditRecords(hyps, trajs, comparisons, out_assess, claims, promotions, assignments)


def _files_in(content: str) -> list[dict[str, str]]:
    """``{"path", "sha256"}`` file references inside a JSON tool observation (any depth)."""
    import json

    try:
        obj = json.loads(content)
    except (ValueError, TypeError):
        return []
    out: list[dict[str, str]] = []
    stack = [obj]
    while stack:
        x = stack.pop()
        if isinstance(x, dict):
            if isinstance(x.get("path"), str) and isinstance(x.get("sha256"), str):
                out.append({"path": x["path"], "sha256": x["sha256"]})
            stack.extend(x.values())
        elif isinstance(x, list):
            stack.extend(x)
    return out
