"""Training objective of the world model (paper, code-repair W1):

    loss = representation + ce + 0.1 * runtime + 0.2 * ranking

``representation`` = prediction + orthogonality + factor activity + encoder variance (JEPACore);
``ce`` = 5-class cross-entropy on the row's readout (per-test or whole-suite) plus binary
cross-entropy of the suite pass-fraction channel; ``runtime`` = smooth-L1 of the softplus runtime;
``ranking`` = mean relu(0.1 - p_good + p_bad) over pairs in the same group that differ in AC.
"""

from __future__ import annotations

import torch
from torch.nn import functional as F

from rsi_workbench.world.data import TransitionBatch

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
