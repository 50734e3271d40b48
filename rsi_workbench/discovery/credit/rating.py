"""Eq. 2: blinded Critique preferences -> a TrueSkill posterior (mu, sigma, n) per hypothesis version.

Uses the ``trueskill`` package; preferences and ties update both versions, abstentions update nothing.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from scipy.stats import norm

from rsi_workbench.discovery.credit.inputs import Comparison


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
