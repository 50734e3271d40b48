"""How a DiscoveryRSI improvement round improves theta and psi on a finished tabular campaign.

The pieces the ``discovery_round`` experiment runs (DiscoveryRSI eqs. 8-11), each reading its own
settings block (:class:`ImproveSettings`): theta_k (:func:`incumbent_policy`), hypothesis credit and
credit-weighted SFT into theta+ (:func:`train_theta_plus`: a full fine-tune, or a LoRA on the
model-backed roles' shared model), theta+ as a policy (:func:`theta_plus_policy`), and the harness
candidates from the campaign's diagnosed failures (:func:`diagnose_and_propose`), the dev
evaluation of (Lead, harness) pairs (:class:`DevEvaluation`); and what a round recorded, as report
sections and tables (``*_lines``, :func:`acceptance_table`, :func:`selection_table`).
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from pydantic import Field, field_validator

from rsi_workbench.config import StrictModel
from rsi_workbench.discovery.assess import PATH_WEIGHTS, path_scores
from rsi_workbench.discovery.harness import DevScore, Policy, dev_score, diagnose, propose_edits
from rsi_workbench.discovery.lead import Lead, RuleLead
from rsi_workbench.discovery.records import DiscoveryRecords, load_records
from rsi_workbench.discovery.workflow import Harness
from rsi_workbench.domains.tabular.llm_roles import THETA_ROLES, Roles
from rsi_workbench.domains.tabular.theta import (
    LoraParams,
    RolesPolicy,
    ThetaRole,
    check_theta_roles,
    make_lead,
    roles_policy,
    theta_model,
    train_lora,
    with_adapter,
)
from rsi_workbench.records import Run, child_runs


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


def base_model(name: str) -> tuple[Any, Any]:
    """The model theta+ is fine-tuned from: the tiny byte-level LM, or a local checkpoint directory."""
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


def device() -> str:
    """Where training and a model Lead run: ``cuda`` when there is one."""
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def incumbent_policy(config: ImproveSettings, camp: Run, roles: Roles | None) -> Policy:
    """theta_k: the Lead that ran the campaign ``camp`` with its ``roles:`` (the rule Lead, the
    model-backed roles, or the checkpoint named in ``theta_checkpoint``)."""
    from rsi_workbench.discovery.model_lead import load_model_lead

    camp_lead = next((e.payload["lead"] for e in camp.events("campaign_started")), "rule-lead")
    if (
        roles is not None
        and theta_model(roles, list(config.theta_roles)) is not None
        and not config.theta_checkpoint
    ):
        return roles_policy(roles, list(config.theta_roles))
    if config.theta_checkpoint:
        ck_dir, ck_sha = config.theta_checkpoint.split("@")
        if camp_lead != f"model-lead:{ck_sha[:12]}":
            raise ValueError(
                f"theta_checkpoint: campaign {camp.path} was led by {camp_lead!r}, "
                f"not by the checkpoint {ck_sha[:12]}"
            )
        return Policy(
            f"theta_k (model-lead {ck_sha[:12]})",
            ck_sha,
            lambda: load_model_lead(ck_dir, ck_sha, device()),
        )
    if camp_lead.startswith("llm-lead:"):
        raise ValueError(
            f"campaign {camp.path}: led by the configured model {camp_lead!r} (roles.lead), which "
            f"theta_roles {list(config.theta_roles)} leaves out; add 'lead' to theta_roles"
        )
    if camp_lead != "rule-lead":
        raise ValueError(
            f"campaign {camp.path}: led by {camp_lead!r}; name its checkpoint in theta_checkpoint"
        )
    return Policy("theta_k (rule-lead)", "rule-lead", RuleLead)


def train_theta_plus(
    run: Run, config: ImproveSettings, recs: DiscoveryRecords, theta: Policy | None = None
) -> None:
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
    run.append("credit_assigned", {"tables": shas, "release": rel_sha, "settings": settings_json(settings)})
    trajs = sft_trajectories_from(recs, credit)
    if isinstance(theta, RolesPolicy):
        _train_lora_theta_plus(run, config, theta, trajs)
        return
    if config.theta_checkpoint:
        ck_dir, ck_sha = config.theta_checkpoint.split("@")
        model, tok = load_checkpoint(Run.open(ck_dir), ck_sha)
    else:
        model, tok = base_model(config.base_model)
    model.to(device())
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


def _train_lora_theta_plus(run: Run, config: ImproveSettings, theta: RolesPolicy, trajs: list[Any]) -> None:
    """theta+ = LoRA(theta_k's model) on the supported tokens of the trajectories of the theta roles the
    model drove (a rule Generation's transcripts are not theta's: theta+ will not drive it either)."""
    from rsi_workbench.discovery.sft import role_accounting

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
        m, t = load_checkpoint(run, theta_sha, device=device())
        return ModelLead(m, t, name=f"model-lead:{theta_sha[:12]}")

    return Policy(f"theta_k+ (model-lead {theta_sha[:12]})", theta_sha, model_lead)


def diagnose_and_propose(
    run: Run, config: ImproveSettings, camp: Run, recs: DiscoveryRecords, psi: Harness, *, record: bool
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


def settings_json(s: Any) -> dict[str, Any]:
    return json.loads(json.dumps(asdict(s), default=lambda o: dict(o) if hasattr(o, "items") else str(o)))


@dataclass
class DevEvaluation:
    """Dev campaigns on fresh held-out questions under the campaign's matched budget, one per seed.

    A (Lead, harness) pair already evaluated under the same dev config is replayed: its recorded
    dev campaigns are re-scored, nothing is run again.
    """

    run: Run
    config: ImproveSettings
    dev_cfg: Any  # the campaign's Config with the dev directions, episodes and settings
    dev_digest: str
    run_campaign: Callable[..., Path]  # the campaign experiment's ``run_campaign``

    @classmethod
    def of(
        cls,
        run: Run,
        config: ImproveSettings,
        camp_cfg: Any,
        dev_directions: list[str],
        run_campaign: Callable[..., Path],
    ) -> DevEvaluation:
        dev_cfg = camp_cfg.model_copy(
            update={
                "directions": list(dev_directions),
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
        return cls(run, config, dev_cfg, dev_digest, run_campaign)

    def evaluate(self, pol: Policy, h: Harness, stage: str) -> DevScore:
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
            self.run_campaign(cfg, p, resume=p.exists(), lead=make_lead(pol), harness=h, progress=False)
            paths.append(p)
        sc = dev_score(paths, pol.name, h.version)
        run.append(
            "dev_evaluation", {"key": key, "stage": stage, "score": asdict(sc), **child_runs(run, *paths)}
        )
        run.commit()
        return sc


def credit_lines(run: Run) -> list[str]:
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


def theta_lines(run: Run) -> list[str]:
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


def harness_lines(run: Run) -> list[str]:
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


def dev_lines(run: Run) -> list[str]:
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


def decision_lines(run: Run) -> list[str]:
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


def accepted(improve_dir: Path, theta: dict[str, Any]) -> dict[str, Any]:
    """theta_{k+1} from a finished improvement round: unchanged, or theta_k+ (checkpoint or adapter)."""
    from rsi_workbench.discovery.lora import adapter_dir

    r = Run.open(improve_dir)
    dec = r.events("accept_decision")[-1].payload
    tp = r.events("theta_plus")[-1].payload
    nxt = {**theta, "name": theta["name"], "plus": False}
    if dec["theta_next_digest"] == tp["checkpoint"]:
        nxt = {"name": dec["theta_next"], "plus": True}
        if tp.get("kind") == "lora":
            roles = with_adapter(
                Roles.model_validate(theta["roles"]), tp["theta_roles"], str(adapter_dir(r, tp["checkpoint"]))
            )
            nxt.update(roles=roles.model_dump(mode="json"), checkpoint=None)
        else:
            nxt.update(roles=theta["roles"], checkpoint=f"{improve_dir}@{tp['checkpoint']}")
    return {"theta": nxt, "psi": dec["psi_next"]}


# -- the tables of a discovery_rounds experiment ----------------------------------------------------
def campaign_summary(path: Path) -> dict[str, Any]:
    """One campaign: size, mean weighted profile, mean path score (and its seven dimensions), turns
    and failed turns by role, live and replayed model calls."""
    recs = load_records(path)
    ps = path_scores(recs)
    turns = Counter(t.role for t in recs.turns)
    failed = Counter(t.role for t in recs.turns if t.failed)
    r = Run.open(path)
    return {
        "episodes": len(recs.episodes),
        "hypotheses": len(recs.hypotheses),
        "profile": _mean([p.weighted for p in recs.profiles]),
        "path_score": float(ps["path_score"].mean()) if len(ps) else float("nan"),
        **{d: float(ps[d].mean()) if len(ps) else float("nan") for d in PATH_WEIGHTS},
        "failed_turns": {k: f"{failed[k]}/{n}" for k, n in sorted(turns.items())},
        "critiques": len(recs.critiques),
        "progress_labels": len(recs.progress),
        "model_calls": len(r.events("model_call")),
        "model_replays": len(r.events("model_replay")),
    }


def _mean(xs: list[float]) -> float:
    return sum(xs) / len(xs) if xs else float("nan")


def dev_path_score(runs: list[str]) -> float:
    """Mean DFM-Bench path score over a pair's dev campaigns."""
    vals = []
    for p in runs:
        ps = path_scores(load_records(Path(p)))
        if len(ps):
            vals.append(float(ps["path_score"].mean()))
    return _mean(vals)


def acceptance_table(improve_dir: Path) -> tuple[Any, dict[str, Any]]:
    """Accept_dev's four pairs with their dev path scores and Δpath against the incumbent pair."""
    import pandas as pd

    dec = Run.open(improve_dir).events("accept_decision")[-1].payload
    rows = []
    for e in dec["evidence"]:
        rows.append(
            {
                "theta": e["lead"],
                "psi": e["harness"],
                "value": e["value"],
                "quality": e["quality"],
                "best": e["best"],
                "reliability": e["reliability"],
                "invalid": e["invalid_decisions"],
                "agent_calls": e["agent_calls"],
                "path": dev_path_score(list(e["runs"])),
                "accepted": e["theta"] == dec["theta_next_digest"]
                and e["harness"] == dec["psi_next"]["version"],
            }
        )
    df = pd.DataFrame(rows)
    if len(df):
        df["d_path"] = df["path"] - df["path"].iloc[0]  # the first pair is the incumbent (theta_k, psi_k)
    return df, dec


def selection_table(improve_dir: Path) -> Any:
    """Select_dev of psi+ (eq. 10): the incumbent harness and each candidate under theta_k, on dev."""
    import pandas as pd

    rows = [
        {
            "psi": e.payload["score"]["harness"],
            "value": e.payload["score"]["value"],
            "quality": e.payload["score"]["quality"],
            "path": dev_path_score(list(e.payload["score"]["runs"])),
        }
        for e in Run.open(improve_dir).events("dev_evaluation")
        if e.payload["stage"] == "select_harness"
    ]
    return pd.DataFrame(rows)
