"""Dream-RSI with a diverse candidate set (issue 34): compact per-seed summaries and the tables.

    python studies/dreaming_diverse/dreaming_diverse.py summarize RUN_DIR --out benchmarks/data/dreaming_diverse/pilot
    python studies/dreaming_diverse/dreaming_diverse.py table benchmarks/data/dreaming_diverse/pilot
    python studies/dreaming_diverse/dreaming_diverse.py verdict benchmarks/data/dreaming_diverse/full

``summarize`` writes one ``seed-<s>.json`` per seed whose every arm has finished (a resumable run
summarised chunk by chunk: re-running it adds the seeds finished since) plus ``meta.json`` (config,
commit, what the fidelity declaration was). ``table`` recomputes, from those files alone, each arm's
mean best@budget with a Student-t 95% interval over seeds and each arm minus the best fixed family,
seed-paired, and says whether the families separate. ``verdict`` reads the pre-registered rule of
``configs/dreaming/diverse_autocorrelation.yaml`` (``rsi_workbench.domains.math.fidelity``).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from rsi_workbench.domains.math.candidates import PI0, online_arm
from rsi_workbench.domains.math.fidelity import (
    FidelitySettings,
    fidelity,
    fidelity_lines,
    online_table,
    paired,
    verdict,
    wins_lines,
)
from rsi_workbench.experiments.dreaming.fidelity import seed_summaries

ROOT = Path(__file__).resolve().parents[2]


def summarize(run_dir: Path, out: Path, config: str | None) -> list[int]:
    """Write the summaries of every seed whose arms all finished; the seeds written."""
    from rsi_workbench.records import Run

    run = Run.open(run_dir)
    out.mkdir(parents=True, exist_ok=True)
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=False
    ).stdout.strip()
    meta = {
        "config": config,
        "run_config": run.config,
        "commit": commit,
        "command": f"python studies/dreaming_diverse/dreaming_diverse.py summarize {run_dir} --out {out}",
    }
    (out / "meta.json").write_text(json.dumps(meta, indent=1, sort_keys=True) + "\n")
    arms = list(run.config["arms"])
    done = []
    for s in seed_summaries(run_dir):
        if all(s["arms"].get(a, {}).get("finished") for a in arms):
            (out / f"seed-{s['seed']}.json").write_text(json.dumps(s, sort_keys=True) + "\n")
            done.append(s["seed"])
    return done


def load(folder: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """``meta.json`` and the per-seed summaries of a folder, in seed order."""
    meta = json.loads((folder / "meta.json").read_text())
    sums = [json.loads(p.read_text()) for p in folder.glob("seed-*.json")]
    return meta, sorted(sums, key=lambda s: s["seed"])


def _f(x: float) -> str:
    return "—" if x != x else f"{x:.6f}"


def table(folder: Path, at: int | None = None) -> str:
    """The per-arm table (Markdown), recomputed from the summaries, and the separation reading."""
    meta, sums = load(folder)
    cfg = meta["run_config"]
    at = at or int(cfg["calls"])
    arms = list(cfg["arms"])
    fixed = [a for a in arms if not a.startswith("dreaming")]
    tab = online_table(sums, arms, at)
    best = max(fixed, key=lambda a: tab[a][0] if tab[a][3] else -float("inf"))
    lines = [
        f"{len(sums)} seeds ({', '.join(str(s['seed']) for s in sums)}), best valid score within {at} "
        f"agent calls (higher is better; score = −C1); t 95% intervals over seeds",
        "",
        f"| arm | mean best@{at} [95% CI] | minus {best} (seed-paired) [95% CI] |",
        "|---|---|---|",
    ]
    separated = []
    for a in arms:
        m, lo, hi, n = tab[a]
        if a == best:
            diff = "—"
        else:
            dm, dlo, dhi, dn = paired(sums, a, best, at)
            diff = f"{dm:+.6f} [{dlo:+.6f}, {dhi:+.6f}]"
            if a in fixed and dhi == dhi and dhi < 0:
                separated.append(a)
        lines.append(f"| {a} | {_f(m)} [{_f(lo)}, {_f(hi)}] ({n}) | {diff} |")
    rest = [a for a in fixed if a != best]
    lines += [
        "",
        f"best fixed family: {best}; below it with a seed-paired CI excluding 0: "
        + (", ".join(separated) if separated else "none")
        + f" ({len(separated)} of {len(rest)})",
        "the families separate" if separated else "the families do not separate on these seeds",
    ]
    lines += wins_lines(sums, [a for a in arms if a.startswith("dreaming")])
    return "\n".join(lines) + "\n"


def verdict_text(folder: Path) -> str:
    """The fidelity section and the pre-registered verdict, from the summaries."""
    meta, sums = load(folder)
    cfg = meta["run_config"]
    st = FidelitySettings(**(cfg.get("fidelity") or {}))
    fams = ((cfg.get("dreaming") or {}).get("candidates") or {}).get("families", [])
    missing = [online_arm(f) for f in [PI0, *fams] if online_arm(f) not in cfg["arms"]]
    lines = [f"families without an online arm (left out of ρ): {missing}"] if missing else []
    lines += fidelity_lines(fidelity(sums, st, int(cfg["calls"])))
    lines += ["", *verdict(sums, st, fams, int(cfg["calls"]))]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """The command line (see the module docstring)."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("summarize", help="per-seed summaries of the seeds finished so far")
    s.add_argument("run_dir", type=Path)
    s.add_argument("--out", type=Path, required=True)
    s.add_argument("--config", help="the config file the run was made from (recorded in meta.json)")
    t = sub.add_parser("table", help="the per-arm table from committed summaries")
    t.add_argument("folder", type=Path)
    t.add_argument("--at", type=int, help="best@ this many calls (default: the budget)")
    v = sub.add_parser("verdict", help="replay fidelity and the pre-registered verdict")
    v.add_argument("folder", type=Path)
    a = ap.parse_args(argv)
    if a.cmd == "summarize":
        done = summarize(a.run_dir, a.out, a.config)
        print(f"wrote {len(done)} seed summaries to {a.out}: seeds {done}")
    elif a.cmd == "table":
        sys.stdout.write(table(a.folder, a.at))
    else:
        sys.stdout.write(verdict_text(a.folder))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
