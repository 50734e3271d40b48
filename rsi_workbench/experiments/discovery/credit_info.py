"""``discovery_credit`` experiment: does hypothesis credit carry information?

1. *Training data*: one campaign per (training direction, seed) with the ε-random behaviour Lead
   (:class:`~rsi_workbench.domains.tabular.credit_policy.EpsilonLead`), the rule Generation /
   Evolution, the rubric Critique and the rule Progress (the valid, objective judges).
2. *theta+ three ways* (eq. 8 as a multinomial policy over the Lead's structured state): every
   valid behaviour decision is a sample (state rebuilt from the events before its episode, the
   operation it chose), weighted by its Lead trajectory's eq. 9 training weight omega from the
   eq. 2-9 credit pipeline of its campaign (``credit``), by 1 (``uniform``), or by the credit
   weights permuted across decisions (``shuffled``, the placebo). Each policy is a JSON artifact
   with its provenance (weighting, sample table sha256, scikit-learn settings).
3. *Dev*: one campaign per (arm, dev direction, dev seed), the arm's policy leading; arm ``rule``
   (the rule Lead, theta_k) is optional. Dev directions must use datasets the training never did.

Every campaign is an ordinary resumable run under ``<out>/train`` or ``<out>/dev/<arm>``; the
experiment's events record each finished one with its summary row, so a resumed (or chunked:
``max_new_campaigns``) run continues at the first unfinished campaign. The table and the
pre-registered verdict are :mod:`~rsi_workbench.experiments.discovery.credit_report`'s.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, field_validator, model_serializer, model_validator

from rsi_workbench.config import StrictModel
from rsi_workbench.discovery.lead import Lead, validate_lead_decision
from rsi_workbench.discovery.records import (
    completed_events,
    load_records,
)
from rsi_workbench.domains import tabular
from rsi_workbench.domains.tabular.credit import (
    DEFAULT_ARMS,
    FITTED_ARMS,
    Arm,
    PolicySettings,
    arm_lead,
    arm_weights,
    campaign_row,
    fit_arms,
    records_before,
)
from rsi_workbench.domains.tabular.credit_policy import EpsilonLead, state_features
from rsi_workbench.experiments.discovery import campaign as camp_mod
from rsi_workbench.records import Run, child_runs

CHILD_RUN_EVENTS = ("credit_train_campaign", "credit_dev_campaign")

__all__ = [
    "FITTED_ARMS",
    "Arm",
    "Config",
    "PolicySettings",
    "arm_lead",
    "arm_weights",
    "campaign_row",
    "decision_samples",
    "fit_arms",
    "records_before",
    "report",
    "run_experiment",
]


class Config(StrictModel):
    """Training campaigns (behaviour Lead), theta+ three ways, dev campaigns per arm."""

    experiment: Literal["discovery_credit"] = "discovery_credit"
    seed: int = Field(default=0, description="seed of the report's bootstrap intervals")
    train_directions: list[str] = Field(min_length=1)
    train_seeds: list[int] = Field(min_length=1)
    train_episodes: int = Field(default=6, ge=2)
    dev_directions: list[str] = Field(min_length=1)
    dev_seeds: list[int] = Field(min_length=1)
    dev_episodes: int = Field(default=4, ge=2)
    epsilon: float = Field(default=0.35, ge=0.0, le=1.0, description="behaviour Lead's random share")
    arms: list[Arm] = Field(default_factory=lambda: list(DEFAULT_ARMS), min_length=1)
    family_caps: bool | None = Field(
        default=None,
        description="eq. 7 local/global family budgets in omega (unset or true: the paper's; false: "
        "C_loc = C_glob = inf, a declared deviation: with one direction per campaign the caps rank "
        "decisions by family size, not outcome)",
    )

    @model_serializer(mode="wrap")
    def _dump(self, handler: Any) -> dict[str, Any]:  # configs without the option dump as before
        data = handler(self)
        if data.get("family_caps") is None:
            data.pop("family_caps", None)
        return data

    policy: PolicySettings = PolicySettings()
    campaign: camp_mod.Config = Field(
        default_factory=camp_mod.Config,
        description="settings of every campaign (directions, seed, episodes are set per campaign)",
    )

    @field_validator("train_directions", "dev_directions")
    @classmethod
    def _known(cls, v: list[str]) -> list[str]:
        return camp_mod.known_directions(v)

    @field_validator("campaign")
    @classmethod
    def _rule_roles(cls, v: camp_mod.Config) -> camp_mod.Config:
        if v.roles is not None and v.roles.active():
            raise ValueError("campaign.roles: this experiment runs the rule roles and judges only")
        return v

    @model_validator(mode="after")
    def _disjoint(self) -> Config:
        train = {tabular.direction(d).dataset for d in self.train_directions}
        shared = sorted({tabular.direction(d).dataset for d in self.dev_directions} & train)
        if shared:
            raise ValueError(
                f"dev_directions: dataset(s) {shared} are also training datasets; the dev set must be "
                "fresh questions (e.g. synthetic-planted-NN/outcome)"
            )
        return self


def slug(direction: str) -> str:
    """A direction as a folder name."""
    return direction.replace("/", "__")


def credit_settings(family_caps: bool = True) -> Any:
    """The paper's credit constants, or the same without the eq. 7 family budgets."""
    import math

    from rsi_workbench.discovery.credit import CreditSettings, ShareSettings

    return (
        CreditSettings()
        if family_caps
        else CreditSettings(shares=ShareSettings(c_loc=math.inf, c_glob=math.inf))
    )


def decision_samples(path: Path, family_caps: bool = True) -> list[dict[str, Any]]:
    """One row per valid, non-fallback Lead decision of a campaign: its state features, operation,
    Lead trajectory, that trajectory's eq. 9 weight omega (0 when the credit gave it none) and, on a
    planted synthetic direction, the oracle value of what its episode published (else None)."""
    from rsi_workbench.config import validate_config
    from rsi_workbench.discovery.credit import assign_credit, credit_records_from
    from rsi_workbench.domains.tabular.oracle import episode_oracle_values

    run = Run.open(path)
    recs = load_records(run)
    omega = assign_credit(credit_records_from(recs), credit_settings(family_caps)).release.omega
    oracle = episode_oracle_values(recs)
    cfg: camp_mod.Config = validate_config(run.config, camp_mod.Config, source=str(path / "config.json"))
    events = completed_events(run.events())
    rows = []
    for dec in recs.lead_decisions:
        if not dec.valid or dec.fallback:
            continue
        state = camp_mod.lead_state(records_before(events, dec.episode), cfg, cfg.harness, dec.episode)
        from rsi_workbench.discovery.lead import LeadDecision

        # the rebuilt state must accept the recorded decision, or the samples would be wrong
        validate_lead_decision(LeadDecision(dec.operation, tuple(dec.parents), dec.direction), state)
        rows.append(
            {
                "campaign": path.name,
                "direction": dec.direction,
                "seed": cfg.seed,
                "episode": dec.episode,
                "trajectory": dec.trajectory_id,
                "operation": dec.operation,
                "omega": float(omega.get(dec.trajectory_id, 0.0)),
                "oracle": oracle.get(dec.episode),
                "features": state_features(state),
            }
        )
    return rows


def _campaign(config: Config, direction: str, seed: int, episodes: int, *, dev: bool) -> camp_mod.Config:
    upd: dict[str, Any] = {"directions": [direction], "seed": seed, "episodes": episodes}
    if dev:
        upd["noise_control"] = False
    return config.campaign.model_copy(update=upd)


def run_experiment(
    config: Config, out: Path, *, resume: bool = False, max_new_campaigns: int | None = None
) -> Path:
    """Training campaigns, theta+ three ways, dev campaigns; at most ``max_new_campaigns`` campaigns
    are started by this call (None: all), so a long run can be done in resumable chunks."""
    out = Path(out)
    run = Run.create(out, config, kind="discovery_credit", exist_ok=resume, exclusive=True)
    left = [max_new_campaigns if max_new_campaigns is not None else -1]

    def take() -> bool:
        if left[0] == 0:
            return False
        left[0] -= 1
        return True

    with run:
        done = {e.payload["path"] for e in run.events() if e.kind in CHILD_RUN_EVENTS}
        train_paths = []
        for d in config.train_directions:
            for s in config.train_seeds:
                rel = f"train/{slug(d)}-s{s}"
                train_paths.append(out / rel)
                if rel in done:
                    continue
                if not take():
                    return out
                _one(
                    run,
                    out,
                    rel,
                    _campaign(config, d, s, config.train_episodes, dev=False),
                    EpsilonLead(config.epsilon),
                    "credit_train_campaign",
                    {"direction": d, "seed": s},
                )
        if not run.events("theta_plus_policies"):
            rows = [r for p in train_paths for r in decision_samples(p, config.family_caps is not False)]
            fit_arms(run, rows, config.arms, config.policy)
        for arm in config.arms:
            lead = arm_lead(run, arm, config.policy.decode)
            for d in config.dev_directions:
                for s in config.dev_seeds:
                    rel = f"dev/{arm}/{slug(d)}-s{s}"
                    if rel in done:
                        continue
                    if not take():
                        return out
                    _one(
                        run,
                        out,
                        rel,
                        _campaign(config, d, s, config.dev_episodes, dev=True),
                        lead,
                        "credit_dev_campaign",
                        {"arm": arm, "direction": d, "seed": s},
                    )
        if not run.events("credit_finished"):
            run.append("credit_finished", {"dev_campaigns": len(run.events("credit_dev_campaign"))})
        run.commit()
    return out


def _one(
    run: Run, out: Path, rel: str, cfg: camp_mod.Config, lead: Lead, kind: str, key: dict[str, Any]
) -> None:
    path = out / rel
    t0 = time.perf_counter()
    camp_mod.run_campaign(cfg, path, resume=path.exists(), lead=lead, harness=cfg.harness, progress=False)
    row = {**key, "lead": lead.name, **campaign_row(path), "wall_s": time.perf_counter() - t0}
    run.append(kind, {"path": rel, "row": row, **child_runs(run, path)})
    run.commit()


def report(path: str | Path) -> str:
    """Training data, theta+ fits, per-arm dev means and the paired comparisons with the verdict."""
    from rsi_workbench.experiments.discovery.credit_report import run_report

    return run_report(Path(path))
