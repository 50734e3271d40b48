"""theta when the research roles are language models: the policy over the model-backed roles, and
theta+ as a LoRA adapter on their shared model (DiscoveryRSI eq. 8 and 11 with ``roles:``).

As in the paper, theta is the one model behind the Lead, Generation and Evolution turns
(:data:`~rsi_workbench.domains.tabular.llm_roles.THETA_ROLES`): theta+ is trained on those
roles' supported tokens only and drives only those roles in the next campaign. Critique and Progress
keep their own model (never the adapter): a theta+ that graded its own proposals would make the
acceptance test meaningless. On CPU theta+ is a LoRA on the base model with a declared token cap
(``LoraParams.token_cap`` tokens per trajectory, tail kept).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from rsi_workbench.config import StrictModel
from rsi_workbench.discovery.harness import Policy
from rsi_workbench.discovery.lead import Lead, RuleLead
from rsi_workbench.domains.tabular.llm_roles import THETA_ROLES, Roles
from rsi_workbench.models import ModelConfig
from rsi_workbench.records import Run

ThetaRole = Literal["lead", "generation", "evolution", "critique", "progress"]


class LoraParams(StrictModel):
    """theta+ for model-backed roles: a LoRA on their shared model, trained under a token cap."""

    r: int = Field(default=8, ge=1, le=256)
    alpha: int = Field(default=16, ge=1)
    token_cap: int = Field(
        default=512, ge=64, le=8192, description="tokens per trajectory (longer ones keep their tail)"
    )


def check_theta_roles(v: list[str]) -> list[str]:
    """theta+ is trained on and drives only Lead, Generation and Evolution turns."""
    bad = [r for r in v if r not in THETA_ROLES]
    if bad:
        raise ValueError(
            f"{bad}: theta+ is never trained on nor drives Critique or Progress (it would grade its own "
            f"proposals); allowed: {list(THETA_ROLES)}"
        )
    return v


@dataclass
class RolesPolicy(Policy):
    """theta as model-backed roles: a dev campaign runs with ``roles`` (no Lead object)."""

    roles: Roles | None = None


def _plain(cfg: ModelConfig) -> ModelConfig:
    return cfg.model_copy(update={"replay": False, "replay_from": None})


def theta_model(roles: Roles | None, theta_roles: list[str]) -> ModelConfig | None:
    """The one model the campaign's theta roles share (None when none of them is model-backed)."""
    active = roles.active() if roles else {}
    cfgs = {r: active[r].model for r in theta_roles if r in active}
    if not cfgs:
        return None
    if len({_plain(c).model_dump_json() for c in cfgs.values()}) > 1:
        raise ValueError(
            f"roles {sorted(cfgs)}: theta is one model; these theta roles name different models "
            "(give lead, generation and evolution the same model block)"
        )
    return next(iter(cfgs.values()))


def roles_policy(roles: Roles, theta_roles: list[str], name: str = "theta_k") -> RolesPolicy:
    """theta_k: the campaign's model-backed roles; its digest hashes the theta roles' model blocks."""
    active = roles.active()
    blob = json.dumps(
        {r: _plain(active[r].model).model_dump(mode="json") for r in theta_roles if r in active},
        sort_keys=True,
    )
    cfg = theta_model(roles, theta_roles)
    tag = f"{cfg.name}+{Path(cfg.adapter).name}" if cfg and cfg.adapter else (cfg.name if cfg else "rules")
    digest = "roles-" + hashlib.sha256(blob.encode()).hexdigest()
    return RolesPolicy(f"{name} (roles on {tag})", digest, RuleLead, roles=roles)


def with_adapter(roles: Roles, theta_roles: list[str], adapter: str) -> Roles:
    """The same roles with theta+'s adapter on every model-backed theta role (judges untouched)."""
    active = roles.active()
    upd = {
        r: active[r].model_copy(update={"model": active[r].model.model_copy(update={"adapter": adapter})})
        for r in theta_roles
        if r in active
    }
    return roles.model_copy(update=upd)


def train_lora(
    run: Run, base: ModelConfig, trajs: list[Any], lora: LoraParams, sft: Any
) -> tuple[str, dict[str, Any], Any]:
    """LoRA SFT (eq. 8) on ``base`` (continuing its adapter if it has one); returns the adapter
    artifact's sha256, the event payload and the training result."""
    from rsi_workbench.discovery.lora import lora_model, save_adapter, trainable_parameters
    from rsi_workbench.discovery.sft import SFTSettings, train_weighted_sft
    from rsi_workbench.models.local import TransformersLM

    lm = TransformersLM.load(base.model_copy(update={"adapter": None, "device": "cpu", "dtype": "fp32"}))
    model = lora_model(lm.model, r=lora.r, alpha=lora.alpha, adapter=base.adapter)
    tok = lm.tokenizer
    if tok.pad_token_id is None:
        tok.pad_token = tok.eos_token
    settings = SFTSettings(
        sft.epochs,
        sft.lr,
        sft.batch_size,
        min(sft.max_length, lora.token_cap),
        sft.seed,
        cpu_threads=sft.cpu_threads,
    )
    res = train_weighted_sft(model, tok, trajs, settings, progress=False)
    sha = save_adapter(run, model, name="theta_plus_lora")
    payload = {
        "kind": "lora",
        "base_model": base.name,
        "base_adapter": base.adapter,
        "lora": lora.model_dump(),
        "trainable_parameters": trainable_parameters(model),
        "token_cap": settings.max_length,
    }
    return sha, payload, (res, tok, settings.max_length)


def make_lead(pol: Policy) -> Lead | None:
    """The Lead object a dev campaign gets: none for model-backed roles (the config's roles lead)."""
    return None if isinstance(pol, RolesPolicy) else pol.make()
