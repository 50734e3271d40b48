"""The code ranker's pre-registered diagnostic (docs/code-ranker.md) as one command: ``rsi-workbench tasks rank-table CONFIG``.

The config (e.g. ``benchmarks/data/code_ranker/rank_pools.yaml``, whose header is the
pre-registration) names the task source, the pool settings, the rankers, the primary arm and its
rule, and optional contrast task files (programs written for this project, which the model cannot
have memorised). The command builds (or resumes) the pools, runs every ranker on the same pools,
prints one line per ranker and the verdict of the primary arm under the rule:

- **convincing**: top-1 >= ``convincing_top1`` (0.40) with the interval's lower bound above chance
  (0.25) and above the MiniLM verifier's top-1 (so without a verifier arm it cannot be convincing);
- **falsified**: top-1 <= ``falsified_top1`` (0.30) with an interval that excludes 0.40;
- **inconclusive**: anything else.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from rsi_workbench.config import StrictModel
from rsi_workbench.models.config import ModelConfig

Ranker = Literal["lm", "lm_readout", "features_readout", "minilm_verifier", "minilm_world", "random"]


class Rule(StrictModel):
    """The pre-registered decision rule on the primary arm's top-1 recall."""

    chance: float = 0.25
    convincing_top1: float = 0.40
    falsified_top1: float = 0.30
    versus: Ranker = Field(default="minilm_verifier", description="the lower bound must also beat it")


class RankTableConfig(StrictModel):
    """A rank-table config (module doc)."""

    tasks: str = Field(description="a task file, or 'humanevalfix'")
    pools_dir: str = Field(description="where the pools are built (resumable), relative to the config")
    n: int = Field(default=16, ge=4)
    pools_per_task: int = Field(default=4, ge=1)
    pools_seed: int = 0
    seed: int = Field(default=0, description="random ranker, readout folds and bootstrap")
    workers: int = Field(default=1, ge=1)
    limit: int | None = Field(default=None, ge=1)
    rankers: list[Ranker] = Field(min_length=1)
    primary: Ranker = "lm"
    rule: Rule = Field(default_factory=Rule)
    model: ModelConfig = Field(default_factory=ModelConfig)
    contrast: list[str] = Field(default_factory=list, description="task files the primary arm also runs on")
    world: dict[str, Any] = Field(
        default_factory=dict, description="the minilm rankers' world: block (the code-repair experiment's)"
    )


def verdict(primary: list[float], versus: list[float] | None, rule: Rule) -> str:
    """The rule's verdict on the primary arm's (top-1, lo, hi), ``versus``: the other arm's."""
    m, lo, hi = primary
    if any(math.isnan(v) for v in primary):
        return "inconclusive (no pools)"
    if m >= rule.convincing_top1 and lo > rule.chance:
        if versus is None:
            return f"inconclusive (the bar {rule.versus} was not run)"
        if lo > versus[0]:
            return "convincing"
    if m <= rule.falsified_top1 and hi < rule.convincing_top1:
        return "falsified"
    return "inconclusive"


def _resolve(base: Path, p: str) -> str:
    return p if p == "humanevalfix" or Path(p).is_absolute() else str(base / p)


def run_table(
    path: str | Path, *, rankers: list[str] | None = None, limit: int | None = None
) -> tuple[str, dict[str, Any]]:
    """Run the config's rankers (or ``rankers``) on its pools (``limit``: only the first N tasks,
    e.g. a pilot); returns (printed text, summary)."""
    from rsi_workbench.config import read_config_file, validate_config
    from rsi_workbench.domains.code_repair.lm_ranker import LMScorer
    from rsi_workbench.domains.code_repair.rank_pools import ArmUnavailable, run_rank_pools

    base = Path(path).parent
    cfg: RankTableConfig = validate_config(
        read_config_file(path), RankTableConfig, source=str(path), base_dir=base
    )
    pools_dir = Path(cfg.pools_dir) if Path(cfg.pools_dir).is_absolute() else base / cfg.pools_dir
    kw: dict[str, Any] = {"n": cfg.n, "pools_per_task": cfg.pools_per_task, "pools_seed": cfg.pools_seed,
          "limit": limit or cfg.limit, "workers": cfg.workers, "seed": cfg.seed,
          "world": cfg.world}  # fmt: skip
    scorer: LMScorer | None = None
    results: dict[str, Any] = {}
    lines = []
    for r in rankers or cfg.rankers:
        needs = r in ("lm", "lm_readout")
        if needs and scorer is None:
            scorer = LMScorer.from_config(cfg.model, pools_dir / "lm_scores.jsonl", where=f"{path}: model")
        try:
            text, res = run_rank_pools(
                _resolve(base, cfg.tasks), r, pools_dir=pools_dir, model=scorer if needs else None, **kw
            )
        except ArmUnavailable as e:  # an arm that cannot run here: said, and the others still run
            lines.append(f"[{r}]\nnot run: {e}")
            continue
        results[r] = res
        lines.append(f"[{r}]\n{text}")
    for c in cfg.contrast:
        cdir = pools_dir.parent / f"{pools_dir.name}-contrast-{Path(c).stem}"
        text, res = run_rank_pools(
            _resolve(base, c), cfg.primary, pools_dir=cdir,
            model=scorer or (LMScorer.from_config(cfg.model) if cfg.primary in ("lm", "lm_readout") else None), **kw,
        )  # fmt: skip
        results[f"contrast:{c}"] = res
        lines.append(f"[{cfg.primary} on the contrast tasks {c}]\n{text}")
    if cfg.primary in results:
        versus = results.get(cfg.rule.versus, {}).get("top1_recall")
        v = verdict(results[cfg.primary]["top1_recall"], versus, cfg.rule)
        lines.append(f"verdict ({cfg.primary}, pre-registered rule): {v}")
        results["verdict"] = v
    return "\n".join(lines), {"config": cfg.model_dump(mode="json"), "results": results}


def save_table(path: str | Path, summary: dict[str, Any]) -> None:
    """Write a rank-table summary as JSON (``--save``)."""
    Path(path).write_text(json.dumps(summary, indent=1, sort_keys=True) + "\n")


__all__ = ["RankTableConfig", "Rule", "run_table", "save_table", "verdict"]
