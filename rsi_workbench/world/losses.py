"""Training objective of the world model (paper, code-repair W1):

    loss = representation + ce + 0.1 * runtime + 0.2 * ranking

``representation`` = prediction + orthogonality + factor activity + encoder variance (JEPACore);
``ce`` = 5-class cross-entropy on the row's readout (per-test or whole-suite) plus binary
cross-entropy of the suite pass-fraction channel; ``runtime`` = smooth-L1 of the softplus runtime;
``ranking`` = mean relu(0.1 - p_good + p_bad) over pairs in the same group that differ in AC.

Optional (the paper's recipe, off by default): ``listwise`` = KL(softmax(u_obs / tau) ||
softmax(u_pred / tau)) over each state's candidate pool of whole-suite rows, tau = 0.1, averaged over
the pools that qualify (:func:`listwise_kl`); u = P(all pass) + 0.25 * pass fraction (equation 7).
"""

from __future__ import annotations

import torch
from torch.nn import functional as F

from rsi_workbench.world.data import TransitionBatch
from rsi_workbench.world.model import utility_from

AC = 0


def ranking_hinge(
    p_ac: torch.Tensor, group: torch.Tensor, is_ac: torch.Tensor, margin: float = 0.1
) -> torch.Tensor:
    """mean relu(margin - p_good + p_bad) over (good, bad) pairs of the same group; 0 if none."""
    same = group.unsqueeze(0) == group.unsqueeze(1)
    pair = same & is_ac.unsqueeze(1) & ~is_ac.unsqueeze(0)  # [good, bad]
    if not bool(pair.any()):
        return p_ac.new_zeros(())
    diff = margin - p_ac.unsqueeze(1) + p_ac.unsqueeze(0)
    return F.relu(diff[pair]).mean()


def select_head(
    out: dict[str, torch.Tensor], is_suite: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Status logits (and runtime if any) of the head each row belongs to: suite or per-test."""
    logits = torch.where(is_suite.unsqueeze(1), out["suite_logits"], out["status_logits"])
    runtime = None
    if "runtime" in out:
        runtime = torch.where(is_suite, out["suite_runtime"], out["runtime"])
    return logits, runtime


def outcome_losses(
    out: dict[str, torch.Tensor],
    batch: TransitionBatch,
    *,
    ranking_margin: float = 0.1,
) -> dict[str, torch.Tensor]:
    """ce (+ pass-fraction BCE), runtime smooth-L1 and ranking hinge for a forward output."""
    logits, runtime = select_head(out, batch.is_suite)
    ce = F.cross_entropy(logits.float(), batch.status)
    suite = batch.is_suite & ~torch.isnan(batch.pass_fraction)
    if bool(suite.any()):
        ce = ce + F.binary_cross_entropy_with_logits(
            out["pass_logit"][suite].float(), batch.pass_fraction[suite]
        )
    parts = {"ce": ce}
    if runtime is not None:
        parts["runtime"] = F.smooth_l1_loss(runtime.float(), batch.runtime_s)
    p_ac = logits.float().softmax(-1)[:, AC]
    parts["ranking"] = ranking_hinge(p_ac, batch.group, batch.status == AC, ranking_margin)
    return parts


def listwise_pools(
    group: torch.Tensor, obs_utility: torch.Tensor, pool_size: int | None = 4
) -> tuple[list[torch.Tensor], dict[str, int]]:
    """Row indices of each qualifying pool (rows sharing a group) and the counts of skipped ones.

    A pool qualifies when it has exactly ``pool_size`` rows (any size >= 2 when ``None``) and its
    observed utilities are not all equal; singletons, wrong-sized and tied pools are skipped and
    counted (the paper's pools are four distinct candidates of one state; ties carry no order).
    """
    pools: list[torch.Tensor] = []
    skipped = {"singleton": 0, "size": 0, "tied": 0}
    for g in torch.unique(group).tolist():
        idx = torch.nonzero(group == g).flatten()
        if len(idx) < 2:
            skipped["singleton"] += 1
        elif pool_size is not None and len(idx) != pool_size:
            skipped["size"] += 1
        elif bool((obs_utility[idx] == obs_utility[idx][0]).all()):
            skipped["tied"] += 1
        else:
            pools.append(idx)
    return pools, skipped


def listwise_kl(
    pred_utility: torch.Tensor,
    obs_utility: torch.Tensor,
    group: torch.Tensor,
    tau: float = 0.1,
    pool_size: int | None = 4,
) -> tuple[torch.Tensor, dict[str, int]]:
    """Mean over qualifying pools of KL(p || q), p = softmax(u_obs / tau), q = softmax(u_pred / tau).

    Returns the loss (0 when no pool qualifies) and the pool counts (``pools`` + skipped kinds).
    """
    pools, counts = listwise_pools(group, obs_utility, pool_size)
    counts = {"pools": len(pools), **counts}
    if not pools:
        return pred_utility.new_zeros(()), counts
    kls = []
    for idx in pools:
        p = torch.softmax(obs_utility[idx].float() / tau, -1)
        log_q = torch.log_softmax(pred_utility[idx].float() / tau, -1)
        kls.append((p * (torch.log(p.clamp_min(1e-30)) - log_q)).sum())
    return torch.stack(kls).mean(), counts


def observed_utility_of(batch: TransitionBatch) -> torch.Tensor:
    """Equation 7 on observed suite rows: 1[all pass] + 0.25 * pass fraction (NaN fraction -> 0)."""
    frac = torch.nan_to_num(batch.pass_fraction.float(), nan=0.0)
    return (batch.status == AC).float() + 0.25 * frac


def listwise_loss(
    out: dict[str, torch.Tensor], batch: TransitionBatch, tau: float = 0.1, pool_size: int | None = 4
) -> tuple[torch.Tensor, dict[str, int]]:
    """:func:`listwise_kl` over the batch's whole-suite rows, grouped by state (``batch.group``)."""
    suite = batch.is_suite
    if not bool(suite.any()):
        return out["suite_logits"].new_zeros(()).float(), {"pools": 0}
    p_all = out["suite_logits"][suite].float().softmax(-1)[:, AC]
    pred = utility_from(p_all, torch.sigmoid(out["pass_logit"][suite].float()))
    return listwise_kl(pred, observed_utility_of(batch)[suite], batch.group[suite], tau, pool_size)
