"""The code-ranker diagnostic's table (issue 33), recomputed from a committed rank-table summary.

    python studies/code_ranker/code_ranker_table.py [benchmarks/data/code_ranker/full_summary.json]

The summary is what ``rsi-workbench tasks rank-table CONFIG --save FILE`` wrote: per ranker the top-1
recall and the within-task AUROC, each ``[value, lo, hi]`` with a task-clustered 95% bootstrap
interval, over the same pools. ``extra`` names further arms run later on the same pools with
their own settings (``minilm_world_head``: the MiniLM world model with head-regime learning rates
and more injected-bug states, its ``world`` block in its entry). The verdict is recomputed here from the primary arm's interval with
the config's pre-registered rule (:func:`rsi_workbench.domains.code_repair.rank_table.verdict`),
not copied from the file.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEFAULT = ROOT / "benchmarks" / "data" / "code_ranker" / "full_summary.json"


def _ci(v: list[float]) -> str:
    return f"{v[0]:.3f} [{v[1]:.3f}, {v[2]:.3f}]"


def table(summary: dict) -> str:
    """The Markdown table and the verdict line."""
    from rsi_workbench.domains.code_repair.rank_table import Rule, verdict

    cfg, res = summary["config"], summary["results"]
    rule = Rule.model_validate(cfg["rule"])
    rows = [
        "| ranker | pools | tasks | top-1 recall [95% CI] | within-task AUROC [95% CI] |",
        "|---|---:|---:|---:|---:|",
    ]
    extra = list(summary.get("extra", []))  # further arms on the same pools (e.g. minilm_world_head)
    for name in [*cfg["rankers"], *extra, *(k for k in res if k.startswith("contrast:"))]:
        r = res.get(name)
        if not isinstance(r, dict) or "top1_recall" not in r:
            rows.append(f"| {name} | — | — | not run | — |")
            continue
        label = name if not name.startswith("contrast:") else f"{r['ranker']} on {Path(name[9:]).parent.name}"
        rows.append(
            f"| {label} | {r['pools']} | {r['tasks']} | {_ci(r['top1_recall'])} | {_ci(r['auroc_within_task'])} |"
        )
    versus = res.get(rule.versus, {}).get("top1_recall")
    v = verdict(res[cfg["primary"]]["top1_recall"], versus, rule)
    rows.append("")
    rows.append(f"verdict ({cfg['primary']}, pre-registered rule, chance {rule.chance}): {v}")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    path = Path(args[0]) if args else DEFAULT
    print(table(json.loads(path.read_text())))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
