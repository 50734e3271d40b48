"""Credit-weighted fine-tuning of a causal LM policy theta (DiscoveryRSI eq. 8).

    L(theta) = - sum_i omega_i / |U_i| * sum_{u in U_i} log pi_theta(a_iu | x_iu)

A trajectory is a sequence of text segments; only *target* segments (supported assistant responses
and tool-call arguments) are in U_i; system/user prompts, tool observations and known-failed actions
are context only. Each trajectory is averaged over its own target tokens and weighted by its frozen
omega_i (``credit.TrainingRelease``) -- never renormalized per minibatch. Works with any Hugging Face
causal LM; tests build a tiny one from a config with :func:`byte_level_tokenizer` (no download).
torch / transformers are imported lazily.
"""

from __future__ import annotations

import io
import json
import random
import tarfile
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rsi_workbench.discovery.credit import NEVER_SUPERVISED, ROLES, CreditResult
from rsi_workbench.discovery.records import DiscoveryRecords, RoleTurn

if TYPE_CHECKING:
    import pandas as pd
    import torch

    from rsi_workbench.records import Run


@dataclass(frozen=True)
class Segment:
    """A piece of rendered transcript text; ``target`` marks supervised tokens (in U_i)."""

    text: str
    target: bool = False


@dataclass(frozen=True)
class SFTTrajectory:
    """One training unit: a role-tagged transcript rendered to segments, with its frozen omega_i."""

    id: str
    role: str
    segments: tuple[Segment, ...]
    omega: float = 0.0


# ---------------------------------------------------------------------------------------------
# Rendering: one plain template used for training and for model-backed decisions alike
def render_message(role: str, content: str, tool_call: Mapping[str, Any] | None = None) -> list[Segment]:
    """Context segments for one chat message (system / user / tool observation)."""
    text = f"<|{role}|>\n{content}\n"
    if tool_call:
        text += f'<tool_call name="{tool_call.get("name", "")}">{json.dumps(tool_call.get("arguments", {}), sort_keys=True)}</tool_call>\n'
    return [Segment(text)]


def render_assistant(content: str, tool_call: Mapping[str, Any] | None, *, supervised: bool) -> list[Segment]:
    """An assistant output: its content and tool-call arguments are targets when ``supervised``."""
    segs = [Segment("<|assistant|>\n")]
    if content:
        segs.append(Segment(content, supervised))
        segs.append(Segment("\n"))
    if tool_call:
        segs.append(Segment(f'<tool_call name="{tool_call.get("name", "")}">'))
        segs.append(Segment(json.dumps(tool_call.get("arguments", {}), sort_keys=True), supervised))
        segs.append(Segment("</tool_call>\n"))
    return segs


def assistant_prefix() -> str:
    """The text a model continues from when it is asked for the next assistant output."""
    return "<|assistant|>\n"


# ---------------------------------------------------------------------------------------------
# Tokenization with a target mask
def byte_level_tokenizer() -> Any:
    """A lossless byte-level tokenizer (256 bytes + end/pad tokens) built locally: no download needed."""
    from tokenizers import Tokenizer, decoders, models
    from tokenizers.pre_tokenizers import ByteLevel
    from transformers import PreTrainedTokenizerFast

    vocab = {c: i for i, c in enumerate(sorted(ByteLevel.alphabet()))}
    vocab["<|endoftext|>"] = len(vocab)
    vocab["<|pad|>"] = len(vocab)
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tok.pre_tokenizer = ByteLevel(add_prefix_space=False, use_regex=False)
    tok.decoder = decoders.ByteLevel()
    return PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|endoftext|>", pad_token="<|pad|>")


def tiny_causal_lm(vocab_size: int, seed: int = 0, **overrides: Any) -> Any:
    """A small Llama-architecture causal LM from a config (CPU-sized; no weights downloaded)."""
    import torch
    from transformers import AutoModelForCausalLM, LlamaConfig

    cfg: dict[str, Any] = dict(
        vocab_size=vocab_size,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=4,
        max_position_embeddings=8192,
        tie_word_embeddings=True,
    )
    cfg.update(overrides)
    torch.manual_seed(seed)
    return AutoModelForCausalLM.from_config(LlamaConfig(**cfg))


@dataclass(frozen=True)
class Encoded:
    """Token ids of one trajectory and its target mask (True where the token is in U_i)."""

    id: str
    role: str
    input_ids: list[int]
    target: list[bool]
    omega: float

    @property
    def n_targets(self) -> int:
        return sum(self.target)


def encode(traj: SFTTrajectory, tokenizer: Any, max_length: int = 4096) -> Encoded:
    """Tokenize segment by segment (so the mask is exact for any tokenizer); an end token closes each
    target span. Over-long transcripts keep their tail (the latest decisions)."""
    ids: list[int] = []
    tgt: list[bool] = []
    eos = tokenizer.eos_token_id
    segs = traj.segments
    for k, s in enumerate(segs):
        t = tokenizer(s.text, add_special_tokens=False)["input_ids"]
        ids += t
        tgt += [s.target] * len(t)
        next_is_target = k + 1 < len(segs) and segs[k + 1].target
        if s.target and not next_is_target and eos is not None and t:
            ids.append(eos)
            tgt.append(True)
    if len(ids) > max_length:
        ids, tgt = ids[-max_length:], tgt[-max_length:]
    if tgt:
        tgt[0] = False  # the first token has no context to be predicted from
    return Encoded(traj.id, traj.role, ids, tgt, traj.omega)


# ---------------------------------------------------------------------------------------------
# Eq. 8
def weighted_sft_loss(
    logits: torch.Tensor, input_ids: torch.Tensor, target: torch.Tensor, omega: torch.Tensor
) -> torch.Tensor:
    """sum_i omega_i / |U_i| sum_{u in U_i} -log p(a_iu | x_iu) over a batch (eq. 8, no renormalization).

    ``target[b, t]`` marks token t of sequence b as supervised; logits at t-1 predict it. Positions
    outside the mask enter through ``torch.where`` and so contribute exactly zero gradient.
    """
    import torch
    import torch.nn.functional as F

    logp = F.log_softmax(logits[:, :-1].float(), dim=-1)
    nll = -logp.gather(-1, input_ids[:, 1:].unsqueeze(-1)).squeeze(-1)
    mask = target[:, 1:]
    nll = torch.where(mask, nll, torch.zeros_like(nll))
    n = mask.sum(dim=1).clamp(min=1)
    return (omega * nll.sum(dim=1) / n).sum()


def _batch(items: Sequence[Encoded], pad_id: int, device: Any) -> tuple[Any, Any, Any, Any]:
    import torch

    L = max(len(e.input_ids) for e in items)
    ids = torch.full((len(items), L), pad_id, dtype=torch.long)
    att = torch.zeros((len(items), L), dtype=torch.long)
    tgt = torch.zeros((len(items), L), dtype=torch.bool)
    for b, e in enumerate(items):
        n = len(e.input_ids)
        ids[b, :n] = torch.tensor(e.input_ids)
        att[b, :n] = 1
        tgt[b, :n] = torch.tensor(e.target)
    om = torch.tensor([e.omega for e in items], dtype=torch.float32)
    return ids.to(device), att.to(device), tgt.to(device), om.to(device)


def trajectory_loss(model: Any, items: Sequence[Encoded], pad_id: int) -> torch.Tensor:
    """Eq. 8 summed over ``items`` under ``model``."""
    device = next(model.parameters()).device
    ids, att, tgt, om = _batch(items, pad_id, device)
    logits = model(input_ids=ids, attention_mask=att).logits
    return weighted_sft_loss(logits, ids, tgt, om)


@dataclass(frozen=True)
class SFTSettings:
    """Optimization settings; ``loss_scale`` is one constant for the whole release (readable losses)."""

    epochs: int = 1
    lr: float = 1e-3
    batch_size: int = 4
    max_length: int = 4096
    seed: int = 0
    weight_decay: float = 0.0
    loss_scale: float | None = None  # default: number of trained trajectories
    cpu_threads: int | None = None  # torch threads while training on CPU (None: torch's default)


@dataclass
class SFTResult:
    """What a fine-tuning run did: steps, losses, which trajectories were trained or dropped and why."""

    steps: int
    losses: list[float]
    trained: list[str]
    dropped: dict[str, str] = field(default_factory=dict)
    encoded: list[Encoded] = field(default_factory=list)


def train_weighted_sft(
    model: Any,
    tokenizer: Any,
    trajectories: Iterable[SFTTrajectory],
    settings: SFTSettings = SFTSettings(),
    *,
    progress: bool = True,
) -> SFTResult:
    """Fine-tune ``model`` in place on eq. 8. Trajectories with omega = 0 or no target token exit training."""
    import torch
    from tqdm.auto import tqdm

    kept: list[Encoded] = []
    dropped: dict[str, str] = {}
    for t in trajectories:
        if t.role not in ROLES:
            raise ValueError(f"trajectory {t.id}: role {t.role!r} is not one of {ROLES}")
        if t.omega <= 0.0:
            dropped[t.id] = "omega = 0"
            continue
        e = encode(t, tokenizer, settings.max_length)
        if e.n_targets == 0:
            dropped[t.id] = "no eligible target token"
            continue
        kept.append(e)
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    scale = settings.loss_scale if settings.loss_scale is not None else float(max(1, len(kept)))
    rng = random.Random(settings.seed)
    torch.manual_seed(settings.seed)
    threads = torch.get_num_threads()
    if settings.cpu_threads and next(model.parameters()).device.type == "cpu":
        torch.set_num_threads(settings.cpu_threads)
    opt = torch.optim.AdamW(model.parameters(), lr=settings.lr, weight_decay=settings.weight_decay)
    model.train()
    losses: list[float] = []
    n_batches = (len(kept) + settings.batch_size - 1) // settings.batch_size
    bar = tqdm(total=settings.epochs * n_batches, desc="weighted SFT", disable=not progress)
    for _ in range(settings.epochs):
        order = list(range(len(kept)))
        rng.shuffle(order)
        for s in range(0, len(order), settings.batch_size):
            items = [kept[k] for k in order[s : s + settings.batch_size]]
            loss = trajectory_loss(model, items, pad_id) * scale
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            losses.append(float(loss.detach()))
            bar.update(1)
            bar.set_postfix(loss=f"{losses[-1]:.4f}")
    bar.close()
    torch.set_num_threads(threads)
    model.eval()
    return SFTResult(len(losses), losses, [e.id for e in kept], dropped, kept)


# ---------------------------------------------------------------------------------------------
# Role accounting (paper Table 4)
def role_accounting(
    collected: Iterable[SFTTrajectory],
    tokenizer: Any,
    result: SFTResult | None = None,
    max_length: int = 4096,
) -> pd.DataFrame:
    """Per role: trajectories collected vs trained, sequence vs supervised tokens of the trained ones.

    Critique, Compiler and Progress records are context or provenance only: 0 trained, no tokens.
    """
    import pandas as pd

    trained = {e.id: e for e in (result.encoded if result else [])}
    rows: dict[str, dict[str, Any]] = {
        r: {"role": r, "collected": 0, "trained": 0, "sequence_tokens": 0, "supervised_tokens": 0}
        for r in ROLES
    }
    for t in collected:
        row = rows[t.role]
        row["collected"] += 1
        e = trained.get(t.id)
        if e is None and result is None and t.omega > 0:
            e = encode(t, tokenizer, max_length)
            e = e if e.n_targets else None
        if e is not None:
            row["trained"] += 1
            row["sequence_tokens"] += len(e.input_ids)
            row["supervised_tokens"] += e.n_targets
    df = pd.DataFrame(list(rows.values()))
    total = {
        "role": "total",
        **{k: int(df[k].sum()) for k in ("collected", "trained", "sequence_tokens", "supervised_tokens")},
    }
    df = pd.concat([df, pd.DataFrame([total])], ignore_index=True)
    df["supervised_share"] = (
        df["supervised_tokens"] / df["sequence_tokens"].where(df["sequence_tokens"] > 0)
    ).round(4)
    df["sequence_tokens"] = df["sequence_tokens"].astype(object).where(df["trained"] > 0, "—")
    return df


# ---------------------------------------------------------------------------------------------
# Checkpoints as run artifacts
def save_checkpoint(run: Run, model: Any, tokenizer: Any, *, name: str = "theta_plus", **meta: Any) -> str:
    """Save model + tokenizer (``save_pretrained``) as one tar artifact of ``run``; returns its sha256."""
    return run.artifacts.put(saved_tar(model, tokenizer), name=f"{name}.tar", **meta)


def saved_tar(*objs: Any) -> bytes:
    """The files ``save_pretrained`` writes for each of ``objs`` (model, tokenizer, peft adapter) as
    one deterministic tar (sorted names, zero mtimes)."""
    buf = io.BytesIO()
    with tempfile.TemporaryDirectory() as d:
        for obj in objs:
            obj.save_pretrained(d)
        with tarfile.open(fileobj=buf, mode="w") as tar:
            for p in sorted(Path(d).rglob("*")):
                if p.is_file():
                    info = tar.gettarinfo(str(p), arcname=str(p.relative_to(d)))
                    info.mtime = 0
                    with open(p, "rb") as f:
                        tar.addfile(info, f)
    return buf.getvalue()


def load_checkpoint(run: Run, sha: str, device: str | None = None) -> tuple[Any, Any]:
    """Load a checkpoint artifact saved by :func:`save_checkpoint` (sha256-verified) -> (model, tokenizer)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    data = run.artifacts.get(sha)
    with tempfile.TemporaryDirectory() as d:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r") as tar:
            tar.extractall(d, filter="data")
        model: Any = AutoModelForCausalLM.from_pretrained(d)
        tok = AutoTokenizer.from_pretrained(d)
    if device:
        model.to(device)
    model.eval()
    return model, tok


# ---------------------------------------------------------------------------------------------
# Adapter: role-tagged transcripts (discovery.records.RoleTurn) -> SFT trajectories
def sft_trajectories_from(recs: DiscoveryRecords, credit: CreditResult) -> list[SFTTrajectory]:
    """Every collected trajectory, rendered from its role turns, with omega from the frozen release.

    A turn's output is a target only if the trajectory holds credit (omega > 0), the turn is not a
    known-failed action, the role is one that may be supervised, and the turn references either no
    hypothesis or at least one hypothesis this trajectory was credited for (b_ih > 0). Everything
    else -- prompts, tool observations, failed actions, Critique/Compiler/Progress turns -- is context.
    """
    credited: dict[str, set[str]] = {}
    for (i, h), b in credit.b.items():
        if b > 0:
            credited.setdefault(i, set()).add(h)
    by_traj: dict[str, list[RoleTurn]] = {}
    for t in recs.turns:
        by_traj.setdefault(t.trajectory_id, []).append(t)
    out = []
    for tid, turns in by_traj.items():
        turns = sorted(turns, key=lambda t: t.turn)
        role = turns[0].role
        omega = float(credit.release.omega.get(tid, 0.0))
        mine = credited.get(tid, set())
        segs: list[Segment] = []
        seen = 0
        for t in turns:
            for m in t.messages_in[seen:]:
                if m.get("role") == "assistant":
                    segs += render_assistant(m.get("content") or "", m.get("tool_call"), supervised=False)
                else:
                    segs += render_message(m.get("role", "user"), m.get("content") or "", m.get("tool_call"))
            supported = (
                omega > 0
                and not t.failed
                and role not in NEVER_SUPERVISED
                and (not t.hypothesis_ids or bool(mine.intersection(t.hypothesis_ids)))
            )
            segs += render_assistant(
                t.output.get("content") or "", t.output.get("tool_call"), supervised=supported
            )
            seen = len(t.messages_in) + 1
        out.append(SFTTrajectory(tid, role, tuple(segs), omega))
    return out
