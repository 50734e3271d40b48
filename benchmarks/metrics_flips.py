"""Which reliability verdicts and gate decisions flip between metrics versions (``rsi_workbench.metrics``).

Two views, printed as Markdown tables:

1. **re-run**: the same config run twice, once per metrics version (``protocol: {metrics_version: 1}``
   for code repair, ``metrics_version: 1`` at the top of a reactions config). Every recorded decision
   (run, cycle, kind) is compared; a flip in a later cycle may follow from an earlier one.
2. **recomputed**: the version-1 run's own recorded reliability inputs recomputed with version 2 by
   the gate tuner's functions (same thresholds, same units), so a flip there is the rule change alone.

    python benchmarks/metrics_flips.py OLD_EXPERIMENT NEW_EXPERIMENT [--all]
    python benchmarks/metrics_flips.py --run CONFIG --out DIR [--all]

``--run`` runs CONFIG twice, into DIR/v1 and DIR/v2, with only ``metrics_version`` changed (an
existing DIR/vN is reused); code repair's v2 run starts from v1's execution cache, so both see the
same sandbox outcomes. ``--all`` lists every compared decision, not only the flips.
"""

from __future__ import annotations

import argparse
import copy
import shutil
import sys
from pathlib import Path
from typing import Any

from rsi_workbench.metrics import METRICS_VERSION, ece, metrics_version_of
from rsi_workbench.viz.gates import gate_inputs, recompute
from rsi_workbench.viz.protocol import ProtocolRun, load_protocol_runs


def _gate(payload: dict[str, Any]) -> str:
    return "skip" if payload.get("skipped") else ("pass" if payload.get("passed") else "fail")


def recorded_decisions(run: ProtocolRun) -> dict[tuple[int, str], tuple[str, str]]:
    """(cycle, decision) -> (outcome, detail) for every reliability verdict, trigger and gate recorded."""
    out: dict[tuple[int, str], tuple[str, str]] = {}
    for k in run.cycles:
        for e in run.of("reliability", k):
            m = e.payload.get("metrics", {})
            detail = ", ".join(f"{n}={v:.4f}" for n, v in m.items() if isinstance(v, float))
            out[(k, "reliability")] = (e.payload["verdict"], detail)
        for e in run.of("adaptation_trigger", k):
            out[(k, "adaptation")] = ("on" if e.payload["triggered"] else "off", "")
        for e in run.of("gate", k):
            p = e.payload
            m = {**{f"cur.{a}": b for a, b in (p.get("current") or {}).items()}}
            m.update({f"new.{a}": b for a, b in (p.get("proposed") or {}).items()})
            detail = ", ".join(f"{n}={v:.4f}" for n, v in m.items() if isinstance(v, float))
            out[(k, f"{p['gate']}_gate")] = (_gate(p), detail)
    return out


def _runs(path: Path) -> dict[str, ProtocolRun]:
    return {str(r.path.relative_to(path)) if r.path != path else ".": r for r in load_protocol_runs(path)}


def rerun_flips(old: Path, new: Path, show_all: bool) -> tuple[list[str], int, int]:
    a, b = _runs(old), _runs(new)
    rows, compared, flipped = [], 0, 0
    for name in sorted(set(a) & set(b)):
        da, db = recorded_decisions(a[name]), recorded_decisions(b[name])
        for key in sorted(set(da) | set(db)):
            oa, ob = da.get(key, ("—", "")), db.get(key, ("—", ""))
            compared += 1
            flip = oa[0] != ob[0]
            flipped += flip
            if flip or show_all:
                mark = "**flips**" if flip else ""
                rows.append(
                    f"| {name} | {key[0]} | {key[1]} | {oa[0]} | {ob[0]} | {mark} | {oa[1]} → {ob[1]} |"
                )
    return rows, compared, flipped


def ece_changes(old: Path, version: int) -> tuple[int, int, float]:
    """(verdicts whose ECE differs, class-readout verdicts, max |ΔECE|): recorded vs ``version``'s bins."""
    changed, n, worst = 0, 0, 0.0
    for run in _runs(old).values():
        gi = gate_inputs(run)
        for c in gi.cycles:
            rec = (c.reliability or {}).get("metrics", {}).get("ece")
            if gi.regression is not None or rec is None:
                continue
            mine = [u for u in c.units if u[1] == c.reliability["version"]]  # type: ignore[index]
            new = ece([u[2] for u in mine], [u[3] for u in mine], version=version)
            n += 1
            changed += abs(new - rec) > 1e-12
            worst = max(worst, abs(new - rec))
    return changed, n, worst


def recomputed_flips(old: Path, version: int, show_all: bool) -> tuple[list[str], int, int]:
    rows, compared, flipped = [], 0, 0
    for name, run in sorted(_runs(old).items()):
        gi = gate_inputs(run)
        for d in recompute(gi, gi.declared, metrics_version=version):
            if d.decision != "reliability":
                continue  # gates compare recorded metrics; only reliability recomputes ECE
            compared += 1
            flipped += d.flipped
            if d.flipped or show_all:
                rows.append(f"| {name} | {d.cycle} | {d.recorded} | {d.recomputed} | {d.reasons} |")
    return rows, compared, flipped


def run_both(config: Path, out: Path) -> tuple[Path, Path]:
    """Run ``config`` with metrics version 1 and 2 (nothing else changed) into ``out/v1``, ``out/v2``."""
    from rsi_workbench.cli import experiment_module, load_experiment_config
    from rsi_workbench.config import validate_config

    cfg = load_experiment_config(config)
    mod = experiment_module(cfg.experiment)
    paths = []
    for v in (1, 2):
        data = copy.deepcopy(cfg.model_dump(mode="json"))
        if "protocol" in mod.Config.model_fields:
            data["protocol"]["metrics_version"] = v
        elif "metrics_version" in mod.Config.model_fields:
            data["metrics_version"] = v
        else:
            raise SystemExit(f"{config}: a {cfg.experiment} experiment records no metrics_version")
        path = out / f"v{v}"
        paths.append(path)
        if (path / "config.json").exists():
            continue
        path.mkdir(parents=True, exist_ok=True)
        cache = out / "v1" / "exec_cache.jsonl"
        if v == 2 and cache.exists():
            shutil.copy(cache, path / "exec_cache.jsonl")
        mod.run_experiment(validate_config(data, mod.Config, source=str(config)), path, resume=False)
    return paths[0], paths[1]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("old", type=Path, nargs="?", help="experiment made with the old metrics version")
    ap.add_argument("new", type=Path, nargs="?", help="the same config made with the new metrics version")
    ap.add_argument("--run", type=Path, help="config to run under both versions (with --out)")
    ap.add_argument("--out", type=Path, help="where --run writes v1/ and v2/")
    ap.add_argument("--all", action="store_true", help="list every compared decision, not only flips")
    args = ap.parse_args(argv)
    if args.run:
        if not args.out:
            ap.error("--run needs --out")
        args.old, args.new = run_both(args.run, args.out)
    elif not (args.old and args.new):
        ap.error("give OLD_EXPERIMENT NEW_EXPERIMENT, or --run CONFIG --out DIR")
    va = {metrics_version_of(r.settings) for r in _runs(args.old).values()}
    vb = {metrics_version_of(r.settings) for r in _runs(args.new).values()}
    print(f"# metrics flips: {args.old} (version {sorted(va)}) vs {args.new} (version {sorted(vb)})\n")
    rows, n, f = rerun_flips(args.old, args.new, args.all)
    print(f"## re-run: {f} of {n} recorded decisions differ\n")
    if rows:
        print("| run | cycle | decision | old | new | | metrics old → new |\n|---|---:|---|---|---|---|---|")
        print("\n".join(rows))
    target = max(vb) if vb else METRICS_VERSION
    rows, n, f = recomputed_flips(args.old, target, args.all)
    print(f"\n## recomputed: {f} of {n} reliability verdicts of {args.old} flip under version {target}\n")
    if rows:
        print("| run | cycle | recorded | recomputed | reasons |\n|---|---:|---|---|---|")
        print("\n".join(rows))
    changed, n, worst = ece_changes(args.old, target)
    print(
        f"\nECE under version {target}: {changed} of {n} class-readout verdicts change, max |ΔECE| = {worst:.2g}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
