"""``discovery_round`` experiment: one DiscoveryRSI improvement round over a finished tabular campaign.

Binds the engine's harness replay and accept-on-dev (:mod:`rsi_workbench.discovery.harness`, eqs.
10-11), credit assignment and credit-weighted fine-tuning to the tabular campaign
(:mod:`rsi_workbench.experiments.discovery.campaign`): credit -> theta+, diagnose -> Psi_cand -> psi+
on dev, Accept_dev over the four pairs, each recorded with its evidence.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, field_validator

from rsi_workbench.config import InputPath, StrictModel
from rsi_workbench.discovery.harness import (
    DevScore,
    Policy,
    dev_score,
    diagnose,
    propose_edits,
    select_dev,
)
from rsi_workbench.discovery.lead import Lead, RuleLead
from rsi_workbench.discovery.records import DiscoveryRecords, load_records
from rsi_workbench.discovery.workflow import Harness
from rsi_workbench.experiments.discovery.llm_roles import THETA_ROLES
from rsi_workbench.experiments.discovery.theta import (
    LoraParams,
    RolesPolicy,
    ThetaRole,
    check_theta_roles,
    make_lead,
    roles_policy,
    theta_model,
    with_adapter,
)
from rsi_workbench.models.usage import with_model_calls
from rsi_workbench.records import Run, child_runs

CHILD_RUN_EVENTS = ("dev_evaluation",)  # the events that finish child runs (records.children)


class SFTParams(StrictModel):
    epochs: int = Field(default=3, ge=1)
    lr: float = Field(default=1e-3, gt=0)
    batch_size: int = Field(default=4, ge=1)
    max_length: int = Field(default=4096, ge=64)
    seed: int = 0
    cpu_threads: int | None = Field(
        default=None, ge=1, description="torch threads on CPU (None: torch's default)"
    )


class ImproveSettings(StrictModel):
    """How an improvement round runs (everything but which campaign and which dev questions)."""

    dev_episodes: int = Field(default=6, ge=1)
    dev_seeds: list[int] = Field(default_factory=lambda: [101], min_length=1)
    n_bootstrap: int = Field(default=100, ge=50)
    outer_folds: int = Field(default=3, ge=2, le=10)
    max_harness_candidates: int = Field(default=2, ge=0)
    min_gain: float = Field(default=0.0, ge=0.0, description="quality margin a challenger must exceed")
    base_model: str = Field(
        default="tiny", description="'tiny' (built from a config) or a local checkpoint dir"
    )
    theta_checkpoint: str | None = Field(
        default=None,
        description="RUN_DIR@SHA256: theta_k's checkpoint artifact when the campaign ran model-backed; "
        "theta+ is then fine-tuned from it (base_model is ignored)",
    )
    sft: SFTParams = SFTParams()
    eta: dict[str, float] | None = None
    theta_roles: list[ThetaRole] = Field(
        default_factory=lambda: list(THETA_ROLES),  # type: ignore[arg-type]
        description="model-backed roles theta+ is trained on and drives (never critique/progress)",
    )
    lora: LoraParams = Field(
        default_factory=LoraParams, description="theta+ of model-backed roles: a LoRA under a token cap"
    )

    @field_validator("theta_roles")
    @classmethod
    def _theta_roles(cls, v: list[str]) -> list[str]:
        return check_theta_roles(v)

    @field_validator("theta_checkpoint")
    @classmethod
    def _checkpoint_ref(cls, v: str | None) -> str | None:
        if v is not None and (v.count("@") != 1 or len(v.split("@")[1]) != 64):
            raise ValueError(f"expected RUN_DIR@SHA256 (64 hex digits), got {v!r}")
        return v


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


def _base_model(name: str) -> tuple[Any, Any]:
    from rsi_workbench.discovery.sft import byte_level_tokenizer, tiny_causal_lm

    if name == "tiny":
        tok = byte_level_tokenizer()
        return tiny_causal_lm(len(tok), seed=0), tok
    from transformers import AutoModelForCausalLM, AutoTokenizer

    p = Path(name)
    if not p.is_dir():
        raise FileNotFoundError(f"base_model: {name!r} is neither 'tiny' nor a local checkpoint directory")
    tok = AutoTokenizer.from_pretrained(p, local_files_only=True)
    if tok.pad_token_id is None:
        tok.pad_token = tok.eos_token
    return AutoModelForCausalLM.from_pretrained(p, local_files_only=True), tok


def _device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


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
    theta = incumbent_policy(config, camp)
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
        dev = DevEvaluation.of(run, config, camp_cfg)
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


def incumbent_policy(config: Config, camp: Run) -> Policy:
    """theta_k: the Lead that ran the campaign (the rule Lead, or the checkpoint named in the config)."""
    from rsi_workbench.discovery.model_lead import load_model_lead

    camp_lead = next((e.payload["lead"] for e in camp.events("campaign_started")), "rule-lead")
    roles = _campaign_config(camp).roles
    if theta_model(roles, list(config.theta_roles)) is not None and not config.theta_checkpoint:
        return roles_policy(roles, list(config.theta_roles))
    if config.theta_checkpoint:
        ck_dir, ck_sha = config.theta_checkpoint.split("@")
        if camp_lead != f"model-lead:{ck_sha[:12]}":
            raise ValueError(
                f"theta_checkpoint: campaign {config.campaign} was led by {camp_lead!r}, "
                f"not by the checkpoint {ck_sha[:12]}"
            )
        return Policy(
            f"theta_k (model-lead {ck_sha[:12]})",
            ck_sha,
            lambda: load_model_lead(ck_dir, ck_sha, _device()),
        )
    if camp_lead.startswith("llm-lead:"):
        raise ValueError(
            f"campaign {config.campaign}: led by the configured model {camp_lead!r} (roles.lead), which "
            f"theta_roles {list(config.theta_roles)} leaves out; add 'lead' to theta_roles"
        )
    if camp_lead != "rule-lead":
        raise ValueError(
            f"campaign {config.campaign}: led by {camp_lead!r}; name its checkpoint in theta_checkpoint"
        )
    return Policy("theta_k (rule-lead)", "rule-lead", RuleLead)


def train_theta_plus(run: Run, config: Config, recs: DiscoveryRecords, theta: Policy | None = None) -> None:
    """Hypothesis credit over the campaign's records, then credit-weighted SFT of theta_k into theta+
    (a LoRA on the roles' model when theta_k is model-backed roles, trained on theta's roles only)."""
    from rsi_workbench.discovery.credit import (
        CreditSettings,
        assign_credit,
        credit_records_from,
        credit_tables,
    )
    from rsi_workbench.discovery.sft import (
        SFTSettings,
        load_checkpoint,
        role_accounting,
        save_checkpoint,
        sft_trajectories_from,
        train_weighted_sft,
    )

    settings = CreditSettings(eta=config.eta)
    credit = assign_credit(credit_records_from(recs), settings)
    tables = credit_tables(credit)
    shas = {
        k: run.artifacts.put_json(v.to_dict(orient="records"), name=f"credit_{k}.json")
        for k, v in tables.items()
    }
    rel_sha = run.artifacts.put_json(credit.release.to_json(), name="training_release.json")
    run.append("credit_assigned", {"tables": shas, "release": rel_sha, "settings": _settings_json(settings)})
    trajs = sft_trajectories_from(recs, credit)
    if isinstance(theta, RolesPolicy):
        _train_lora_theta_plus(run, config, theta, trajs)
        return
    if config.theta_checkpoint:
        ck_dir, ck_sha = config.theta_checkpoint.split("@")
        model, tok = load_checkpoint(Run.open(ck_dir), ck_sha)
    else:
        model, tok = _base_model(config.base_model)
    model.to(_device())
    s = config.sft
    res = train_weighted_sft(
        model,
        tok,
        trajs,
        SFTSettings(s.epochs, s.lr, s.batch_size, s.max_length, s.seed, cpu_threads=s.cpu_threads),
    )
    acc = role_accounting(trajs, tok, res, s.max_length)
    sha = save_checkpoint(run, model.to("cpu"), tok, name="theta_plus")
    run.append(
        "theta_plus",
        {
            "checkpoint": sha,
            "base_model": config.theta_checkpoint or config.base_model,
            "steps": res.steps,
            "losses": res.losses,
            "trained": res.trained,
            "dropped": res.dropped,
            "role_accounting": json.loads(acc.to_json(orient="records")),
        },
    )
    run.commit()


def _train_lora_theta_plus(run: Run, config: Config, theta: RolesPolicy, trajs: list[Any]) -> None:
    """theta+ = LoRA(theta_k's model) on the supported tokens of the trajectories of the theta roles the
    model drove (a rule Generation's transcripts are not theta's: theta+ will not drive it either)."""
    from rsi_workbench.discovery.sft import role_accounting
    from rsi_workbench.experiments.discovery.theta import train_lora

    base = theta_model(theta.roles, list(config.theta_roles))
    assert base is not None
    driven = [r for r in config.theta_roles if theta.roles is not None and r in theta.roles.active()]
    mine = [t for t in trajs if t.role in driven]
    sha, payload, (res, tok, cap) = train_lora(run, base, mine, config.lora, config.sft)
    acc = role_accounting(trajs, tok, res, cap)
    run.append(
        "theta_plus",
        {
            "checkpoint": sha,
            **payload,
            "theta_roles": list(config.theta_roles),
            "trained_roles": driven,
            "steps": res.steps,
            "losses": res.losses,
            "trained": res.trained,
            "dropped": res.dropped,
            "role_accounting": json.loads(acc.to_json(orient="records")),
        },
    )
    run.commit()


def theta_plus_policy(run: Run, theta: Policy | None = None, theta_roles: list[str] | None = None) -> Policy:
    """theta_k+: a model-backed Lead from the round's recorded ``theta_plus`` checkpoint, or theta_k's
    roles with the round's LoRA adapter on theta's roles (the judges keep their model)."""
    from rsi_workbench.discovery.lora import adapter_dir
    from rsi_workbench.discovery.model_lead import ModelLead
    from rsi_workbench.discovery.sft import load_checkpoint

    ev = run.events("theta_plus")[-1].payload
    theta_sha = ev["checkpoint"]
    if ev.get("kind") == "lora":
        assert isinstance(theta, RolesPolicy) and theta.roles is not None
        roles = with_adapter(theta.roles, list(theta_roles or THETA_ROLES), str(adapter_dir(run, theta_sha)))
        return RolesPolicy(f"theta_k+ (LoRA {theta_sha[:12]})", theta_sha, RuleLead, roles=roles)

    def model_lead() -> Lead:
        m, t = load_checkpoint(run, theta_sha, device=_device())
        return ModelLead(m, t, name=f"model-lead:{theta_sha[:12]}")

    return Policy(f"theta_k+ (model-lead {theta_sha[:12]})", theta_sha, model_lead)


def diagnose_and_propose(
    run: Run, config: Config, camp: Run, recs: DiscoveryRecords, psi: Harness, *, record: bool
) -> list[tuple[Harness, str]]:
    """Psi_cand = Propose(psi_k; H_k): harness edits from the campaign's diagnosed failures (recorded once)."""
    diags = diagnose(recs, camp.path, min_comparisons=2)
    cands = propose_edits(psi, diags, config.max_harness_candidates)
    if record:
        run.append("harness_diagnosis", {"diagnoses": [asdict(d) for d in diags]})
        run.append(
            "harness_candidates",
            {
                "incumbent": psi.model_dump(mode="json"),
                "candidates": [{"harness": h.model_dump(mode="json"), "why": w} for h, w in cands],
            },
        )
        run.commit()
    return cands


@dataclass
class DevEvaluation:
    """Dev campaigns on fresh held-out questions under the campaign's matched budget, one per seed.

    A (Lead, harness) pair already evaluated under the same dev config is replayed: its recorded
    dev campaigns are re-scored, nothing is run again.
    """

    run: Run
    config: Config
    dev_cfg: Any  # the campaign's Config with the dev directions, episodes and settings
    dev_digest: str

    @classmethod
    def of(cls, run: Run, config: Config, camp_cfg: Any) -> DevEvaluation:
        dev_cfg = camp_cfg.model_copy(
            update={
                "directions": list(config.dev_directions),
                "episodes": config.dev_episodes,
                "n_bootstrap": config.n_bootstrap,
                "outer_folds": config.outer_folds,
                "noise_control": False,
            }
        )
        dev_digest = hashlib.sha256(
            json.dumps(
                {**dev_cfg.model_dump(mode="json"), "seeds": config.dev_seeds}, sort_keys=True
            ).encode()
        ).hexdigest()[:12]
        return cls(run, config, dev_cfg, dev_digest)

    def evaluate(self, pol: Policy, h: Harness, stage: str) -> DevScore:
        from rsi_workbench.experiments.discovery.campaign import run_campaign

        run = self.run
        key = f"{pol.digest}|{h.digest()}|{self.dev_digest}"
        for e in run.events("dev_evaluation"):
            if e.payload["key"] == key:  # recorded: replay (re-score) its recorded dev campaigns
                sc = dev_score([Path(p) for p in e.payload["score"]["runs"]], pol.name, h.version)
                return replace(sc, replayed=True)
        paths = []
        for seed in self.config.dev_seeds:
            p = run.path / "dev" / f"{pol.digest[:12]}-{h.digest()}-s{seed}"
            upd: dict[str, Any] = {"seed": seed, "harness": h}
            if isinstance(pol, RolesPolicy):
                upd["roles"] = pol.roles
            cfg = self.dev_cfg.model_copy(update=upd)
            run_campaign(cfg, p, resume=p.exists(), lead=make_lead(pol), harness=h, progress=False)
            paths.append(p)
        sc = dev_score(paths, pol.name, h.version)
        run.append(
            "dev_evaluation", {"key": key, "stage": stage, "score": asdict(sc), **child_runs(run, *paths)}
        )
        run.commit()
        return sc


def _settings_json(s: Any) -> dict[str, Any]:
    return json.loads(json.dumps(asdict(s), default=lambda o: dict(o) if hasattr(o, "items") else str(o)))


def report(path: str | Path) -> str:
    """Credit tables, role accounting, diagnoses and the four dev-evaluated pairs with the decision."""
    import pandas as pd

    run = Run.open(path)
    lines = [f"DiscoveryRSI round — {path}", ""]
    wide = pd.option_context("display.width", 250, "display.max_columns", 30, "display.max_rows", 200)
    with wide:
        for section in (_credit_lines, _theta_lines, _harness_lines, _dev_lines, _decision_lines):
            lines += section(run)
    return with_model_calls("\n".join(lines), path)


def _credit_lines(run: Run) -> list[str]:
    """Hypothesis credit (eq. 2-5, 7), the top trajectory weights (eq. 7, 9) and edge admission counts."""
    import pandas as pd

    ca = run.events("credit_assigned")
    if not ca:
        return []
    t = {k: pd.DataFrame(run.artifacts.get_json(v)) for k, v in ca[-1].payload["tables"].items()}
    hyp = t["hypotheses"]
    cols = [
        "hypothesis",
        "mu",
        "sigma",
        "n_effective",
        "s",
        "rank",
        "rho_cov",
        "rho_unc",
        "progress",
        "q",
        "q_tilde",
        "status",
    ]
    tr = t["trajectories"].sort_values("w", ascending=False)
    ed = t["edges"]
    return [
        "hypothesis credit (eq. 2-5, 7):",
        hyp[cols].round(3).to_string(index=False),
        "",
        f"trajectory weights (eq. 7, 9): {int((tr.w > 0).sum())} of {len(tr)} credited trajectories with w > 0; top 10:",
        tr.head(10).round(4).to_string(index=False),
        "",
        "contribution edges: "
        + ", ".join(f"{k}={v}" for k, v in ed.groupby(["admitted", "basis"]).size().items()),
    ]


def _theta_lines(run: Run) -> list[str]:
    """theta+'s training run and the role accounting of its supported tokens (paper Table 4)."""
    import pandas as pd

    tp = run.events("theta_plus")
    if not tp:
        return []
    p = tp[-1].payload
    losses = (
        f"loss {p['losses'][0]:.4f} -> {p['losses'][-1]:.4f}" if p["losses"] else "no step (nothing to train)"
    )
    kind = (
        f"LoRA r={p['lora']['r']} on {p['base_model']}, token cap {p['token_cap']}, roles {p['theta_roles']}"
        if p.get("kind") == "lora"
        else p["base_model"]
    )
    return [
        "",
        f"theta+ ({kind}): {p['steps']} steps, {losses}, checkpoint {p['checkpoint'][:12]}",
        "role accounting (paper Table 4):",
        pd.DataFrame(p["role_accounting"]).to_string(index=False),
    ]


def _harness_lines(run: Run) -> list[str]:
    """The diagnosed failures and the harness candidates proposed from them."""
    hd = run.events("harness_diagnosis")
    if not hd:
        return []
    lines = ["", "harness diagnosis:"]
    lines += [
        f"  {d['kind']}: {d['count']} ({d['rate']:.0%}) — {d['detail']}" for d in hd[-1].payload["diagnoses"]
    ]
    hc = run.events("harness_candidates")[-1].payload
    lines += [f"  candidate {c['harness']['version']}: {c['why']}" for c in hc["candidates"]]
    return lines


def _dev_lines(run: Run) -> list[str]:
    """Every dev evaluation (selection of psi+ and the four accept pairs)."""
    import pandas as pd

    evs = run.events("dev_evaluation")
    if not evs:
        return []
    rows = [
        {"stage": e.payload["stage"], **{k: v for k, v in e.payload["score"].items() if k != "runs"}}
        for e in evs
    ]
    return [
        "",
        "dev evaluations (fresh held-out questions, matched budget):",
        pd.DataFrame(rows).round(3).to_string(index=False),
    ]


def _decision_lines(run: Run) -> list[str]:
    """Accept_dev over the four pairs (eq. 11) and the accepted (theta, psi)."""
    import pandas as pd

    ad = run.events("accept_decision")
    if not ad:
        return []
    d = ad[-1].payload
    four = pd.DataFrame(
        [{k: v for k, v in row.items() if k not in ("runs", "theta", "psi")} for row in d["evidence"]]
    )
    return [
        "",
        "Accept_dev over {theta, theta+} x {psi, psi+} (eq. 11):",
        four.round(3).to_string(index=False),
        f"psi+ = {d['psi_plus']}",
        f"accepted: theta_next = {d['theta_next']}, psi_next = {d['psi_next']['version']}",
    ]
