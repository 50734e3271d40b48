"""``discovery_round`` experiment: one DiscoveryRSI improvement round over a finished tabular campaign.

Binds the engine's harness replay and accept-on-dev (:mod:`rsi_workbench.discovery.harness`, eqs.
10-11), credit assignment and credit-weighted fine-tuning to the tabular campaign
(:mod:`rsi_workbench.experiments.discovery.campaign`): credit -> theta+, diagnose -> Psi_cand -> psi+
on dev, Accept_dev over the four pairs, each recorded with its evidence.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from rsi_workbench.config import InputPath
from rsi_workbench.discovery.harness import select_dev
from rsi_workbench.discovery.records import load_records
from rsi_workbench.domains.tabular.improve import (
    DevEvaluation,
    ImproveSettings,
    SFTParams,
    credit_lines,
    decision_lines,
    dev_lines,
    diagnose_and_propose,
    harness_lines,
    incumbent_policy,
    theta_lines,
    theta_plus_policy,
    train_theta_plus,
)
from rsi_workbench.experiments.discovery.campaign import run_campaign
from rsi_workbench.models.usage import with_model_calls
from rsi_workbench.records import Run

CHILD_RUN_EVENTS = ("dev_evaluation",)  # the events that finish child runs (records.children)

__all__ = [
    "CHILD_RUN_EVENTS",
    "Config",
    "DevEvaluation",
    "ImproveSettings",
    "SFTParams",
    "report",
    "run_experiment",
]


class Config(ImproveSettings):
    """One improvement round over a finished campaign (``campaign``: its run directory)."""

    experiment: Literal["discovery_round"] = "discovery_round"
    campaign: InputPath = Field(
        description="the finished campaign's run directory (relative: to the config file)"
    )
    dev_directions: list[str] = Field(min_length=1, description="held-out dataset/outcome pairs")


def _campaign_config(run: Run) -> Any:
    from rsi_workbench.config import validate_config
    from rsi_workbench.experiments.discovery.campaign import Config as CampaignConfig

    return validate_config(run.config, CampaignConfig, source=str(run.path / "config.json"))


def run_experiment(config: Config, out: Path, *, resume: bool = False) -> Path:
    """Credit -> theta+ ; diagnose -> Psi_cand -> psi+ on dev ; Accept_dev over the four pairs."""
    out = Path(out)
    camp = Run.open(config.campaign)
    camp_cfg = _campaign_config(camp)
    overlap = set(config.dev_directions) & set(camp_cfg.directions)
    if overlap:
        raise ValueError(
            f"dev_directions: {sorted(overlap)} were used by the campaign {config.campaign}; "
            f"the dev set must be fresh questions (campaign used {camp_cfg.directions})"
        )
    theta = incumbent_policy(config, camp, camp_cfg.roles)
    run = Run.create(out, config, kind="discovery_round", exist_ok=resume, exclusive=True)
    with run:
        done = {e.kind: e for e in run.events()}
        recs = load_records(camp)
        # (1) credit and theta+ ------------------------------------------------------------------
        if "theta_plus" not in done:
            train_theta_plus(run, config, recs, theta)
        theta_plus = theta_plus_policy(run, theta, list(config.theta_roles))
        # (2) diagnose and propose -----------------------------------------------------------------
        psi = camp_cfg.harness
        cands = diagnose_and_propose(run, config, camp, recs, psi, record="harness_candidates" not in done)
        dev = DevEvaluation.of(run, config, camp_cfg, config.dev_directions, run_campaign)
        # (3) psi+ = Select_dev({psi} u Psi_cand | theta) -------------------------------------------
        by_version = {psi.version: psi, **{h.version: h for h, _ in cands}}
        sel = {(theta.digest, v): dev.evaluate(theta, h, "select_harness") for v, h in by_version.items()}
        psi_plus = by_version[select_dev(sel, (theta.digest, psi.version))[1]]
        # (4) Accept_dev({theta, theta+} x {psi, psi+}) ------------------------------------------------
        pairs = {}
        for pol in (theta, theta_plus):
            for h in {psi.version: psi, psi_plus.version: psi_plus}.values():
                pairs[(pol.digest, h.version)] = dev.evaluate(pol, h, "accept")
        chosen = select_dev(pairs, (theta.digest, psi.version), config.min_gain)
        if not run.events("accept_decision"):
            run.append(
                "accept_decision",
                {
                    "theta_next": theta_plus.name if chosen[0] == theta_plus.digest else theta.name,
                    "theta_next_digest": chosen[0],
                    "psi_next": by_version[chosen[1]].model_dump(mode="json"),
                    "psi_plus": psi_plus.version,
                    "min_gain": config.min_gain,
                    "evidence": [{"theta": k[0], "psi": k[1], **asdict(v)} for k, v in pairs.items()],
                    "dev_directions": config.dev_directions,
                    "matched_budget": camp_cfg.budgets.model_dump(),
                },
            )
        run.commit()
    return out


def report(path: str | Path) -> str:
    """Credit tables, role accounting, diagnoses and the four dev-evaluated pairs with the decision."""
    import pandas as pd

    run = Run.open(path)
    lines = [f"DiscoveryRSI round — {path}", ""]
    wide = pd.option_context("display.width", 250, "display.max_columns", 30, "display.max_rows", 200)
    with wide:
        for section in (credit_lines, theta_lines, harness_lines, dev_lines, decision_lines):
            lines += section(run)
    return with_model_calls("\n".join(lines), path)
