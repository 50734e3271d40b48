"""``discovery_rounds`` experiment: closed DiscoveryRSI rounds, R0 -> improvement round -> R1 -> ...

Eq. 11's rediscovery loop as one resumable experiment. Round k runs a campaign
(:mod:`~rsi_workbench.experiments.discovery.campaign`) with the accepted (theta_k, psi_k) on round k's
fresh directions, then an improvement round (:mod:`~rsi_workbench.experiments.discovery.round`):
credit -> theta_k+, harness replay -> psi_k+, Accept_dev over {theta_k, theta_k+} x {psi_k, psi_k+} on
round k's dev directions. The accepted pair runs round k+1. Every round's directions are fresh and
every dev set disjoint, by dataset: no dataset is used twice anywhere in the experiment (checked).

Layout: ``<out>/R<k>/campaign`` and ``<out>/R<k>/improve`` are ordinary runs (each resumable); the
experiment's own events record each finished stage and the accepted pair, so ``resume`` continues
at the first unfinished stage.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from rsi_workbench.config import StrictModel
from rsi_workbench.domains import tabular
from rsi_workbench.domains.tabular.improve import accepted
from rsi_workbench.domains.tabular.llm_roles import Roles
from rsi_workbench.experiments.discovery import campaign as camp_mod
from rsi_workbench.experiments.discovery import round as round_mod
from rsi_workbench.records import Run, child_runs

CHILD_RUN_EVENTS = ("rounds_campaign", "rounds_accepted")  # events that finish a child run (records.children)

_PER_ROUND = ("directions", "round", "seed")  # the rounds set these in each round's campaign


class RoundSplit(StrictModel):
    """Round k's questions: the campaign's fresh directions and the disjoint dev directions."""

    directions: list[str] = Field(min_length=1)
    dev_directions: list[str] = Field(min_length=1)

    @field_validator("directions", "dev_directions")
    @classmethod
    def _known(cls, v: list[str]) -> list[str]:
        return camp_mod.known_directions(v)


class Config(StrictModel):
    """Shared campaign and improvement settings, and the per-round split of directions."""

    experiment: Literal["discovery_rounds"] = "discovery_rounds"
    seed: int = 0
    campaign: camp_mod.Config = Field(
        default_factory=camp_mod.Config,
        description="campaign settings of every round (directions and round come from `rounds`)",
    )
    improve: round_mod.ImproveSettings = Field(default_factory=round_mod.ImproveSettings)
    improve_last: bool = Field(default=True, description="run the improvement round after the last campaign")
    rounds: list[RoundSplit] = Field(min_length=1)

    @field_validator("campaign")
    @classmethod  # the frozen config.json keeps the block's defaults for these keys; rounds override them
    def _no_split_in_campaign(cls, v: camp_mod.Config) -> camp_mod.Config:
        default = camp_mod.Config()
        for key in _PER_ROUND:
            if key in v.model_fields_set and getattr(v, key) != getattr(default, key):
                raise ValueError(f"{key}: set per round in `rounds` (and `seed` at the top), not here")
        return v

    @model_validator(mode="after")
    def _fresh_and_disjoint(self) -> Config:
        seen: dict[str, str] = {}
        for k, r in enumerate(self.rounds):
            for where, dirs in (("directions", r.directions), ("dev_directions", r.dev_directions)):
                for ds in dict.fromkeys(tabular.direction(d).dataset for d in dirs):
                    here = f"rounds[{k}].{where}"
                    if ds in seen and seen[ds] != here:
                        raise ValueError(
                            f"{here}: dataset {ds} is already used by {seen[ds]}; every round needs fresh "
                            "directions and a disjoint dev set (datasets: "
                            + ", ".join(sorted({d.dataset for d in tabular.DIRECTIONS.values()}))
                            + ")"
                        )
                    seen[ds] = here
        return self


def _stage_done(run: Run, kind: str, k: int) -> dict[str, Any] | None:
    return next((e.payload for e in run.events(kind) if int(e.payload["round"]) == k), None)


def run_experiment(config: Config, out: Path, *, resume: bool = False) -> Path:
    """Round by round: campaign R_k with (theta_k, psi_k), then credit + harness round -> (theta_k+1, psi_k+1)."""
    from rsi_workbench.discovery.model_lead import load_model_lead
    from rsi_workbench.discovery.workflow import Harness

    out = Path(out)
    run = Run.create(out, config, kind="discovery_rounds", exist_ok=resume, exclusive=True)
    with run:
        roles = config.campaign.roles
        theta: dict[str, Any] = {
            "name": "theta_0",
            "roles": roles.model_dump(mode="json") if roles else None,
            "checkpoint": None,
        }
        psi = config.campaign.harness
        for k, split in enumerate(config.rounds):
            camp_dir = out / f"R{k}" / "campaign"
            ccfg = config.campaign.model_copy(
                update={
                    "seed": config.seed,
                    "round": k,
                    "directions": list(split.directions),
                    "harness": psi,
                    "roles": Roles.model_validate(theta["roles"]) if theta["roles"] else None,
                }
            )
            if _stage_done(run, "rounds_campaign", k) is None:
                ck = theta["checkpoint"]
                lead = load_model_lead(*ck.split("@")) if ck else None
                camp_mod.run_campaign(
                    ccfg, camp_dir, resume=camp_dir.exists(), lead=lead, harness=psi, progress=False
                )
                run.append(
                    "rounds_campaign",
                    {
                        "round": k,
                        "path": f"R{k}/campaign",
                        "theta": theta,
                        "psi": psi.version,
                        **child_runs(out, camp_dir),
                    },
                )
                run.commit()
            if k == len(config.rounds) - 1 and not config.improve_last:
                break
            imp_dir = out / f"R{k}" / "improve"
            done = _stage_done(run, "rounds_accepted", k)
            if done is None:
                rcfg = round_mod.Config(
                    **config.improve.model_dump(exclude={"theta_checkpoint"}),
                    campaign=str(camp_dir),
                    dev_directions=list(split.dev_directions),
                    theta_checkpoint=theta["checkpoint"],
                )
                round_mod.run_experiment(rcfg, imp_dir, resume=imp_dir.exists())
                done = {"round": k, "path": f"R{k}/improve", **accepted(imp_dir, theta)}
                run.append("rounds_accepted", {**done, **child_runs(out, imp_dir)})
                run.commit()
            theta, psi = done["theta"], Harness.model_validate(done["psi"])
        run.commit()
    return out


def report(path: str | Path) -> str:
    """Per round: the split, the campaign's DFM-Bench summary, the acceptance table with dev path
    scores, the accepted pair; then the path deltas between consecutive rounds."""
    from rsi_workbench.experiments.discovery.rounds_report import rounds_report

    return rounds_report(Path(path))
