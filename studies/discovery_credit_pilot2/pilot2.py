"""DiscoveryRSI credit information, second pilot (issue 48 items 4-5): state-dependent planted directions.

    nice -n 10 python studies/discovery_credit_pilot2/pilot2.py run CONFIG OUT [--chunk N]
    python studies/discovery_credit_pilot2/pilot2.py summarize OUT --config CONFIG --out FILE
    python studies/discovery_credit_pilot2/pilot2.py table FILE

``run`` reads a ``discovery_credit`` config and runs: the training campaigns (ε-random behaviour Lead),
theta+ per arm fitted twice from the same decisions — without the eq. 7 family budgets (``nocaps``)
and with the paper's (``caps``; only ``credit`` and ``shuffled`` differ) — and the dev campaigns, in
the order uniform, oracle, then credit and shuffled without and with the budgets. A dev campaign whose
arm would make exactly the decisions of a campaign already run on the same (direction, seed) — every
decision recomputed on that campaign's recorded states — is not run: its row is that campaign's (the
campaign is a deterministic function of its Lead's decisions). At most ``--chunk`` new campaigns are
started per call; every campaign is a resumable run, finished ones are marked, so call ``run`` again
until it prints ``finished``.

``summarize`` writes the compact summary: training decisions, ρ(ω, oracle) / ρ(ω, episode) per
family-budget setting (the precondition ρ(ω, oracle) ≥ 0.3), every dev row, the paired differences
by (direction, seed) with bootstrap intervals on the dev metric (``l1_weighted_mean``) and on the
dev campaigns' mean planted oracle value, and how often the arms' operation probabilities differ
enough for one shared random draw to split them (training states and the dev states the uniform arm
visited). ``table`` prints it again from the file alone.
"""

from __future__ import annotations

import argparse
import datetime
import json
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
CAPS = {"nocaps": False, "caps": True}
# (label, arm, caps setting of its fit): uniform and oracle do not depend on the family budgets
DEV_ARMS = (
    ("uniform", "uniform", "nocaps"),
    ("oracle", "oracle", "nocaps"),
    ("credit", "credit", "nocaps"),
    ("shuffled", "shuffled", "nocaps"),
    ("credit_caps", "credit", "caps"),
    ("shuffled_caps", "shuffled", "caps"),
)
COMPARISONS = (
    ("oracle", "uniform"),
    ("credit", "uniform"),
    ("credit", "shuffled"),
    ("credit_caps", "uniform"),
    ("credit_caps", "shuffled_caps"),
)


def _slug(d: str) -> str:
    return d.replace("/", "__")


def _config(path: str) -> Any:
    from rsi_workbench.cli import load_experiment_config

    return load_experiment_config(Path(path))


def _campaign(cfg: Any, direction: str, seed: int, episodes: int, dev: bool) -> Any:
    upd: dict[str, Any] = {"directions": [direction], "seed": seed, "episodes": episodes}
    if dev:
        upd["noise_control"] = False
    return cfg.campaign.model_copy(update=upd)


def _done(path: Path) -> bool:
    return (path / "pilot_done.json").exists()


def _mark(path: Path, info: dict[str, Any]) -> None:
    (path / "pilot_done.json").write_text(json.dumps(info, sort_keys=True))


def _train_paths(cfg: Any, out: Path) -> list[Path]:
    return [out / "train" / f"{_slug(d)}-s{s}" for d in cfg.train_directions for s in cfg.train_seeds]


def _fit(cfg: Any, out: Path) -> None:
    """theta+ per arm and family-budget setting, from the training decisions (written once)."""
    from rsi_workbench.domains.tabular.credit import arm_weights
    from rsi_workbench.domains.tabular.credit_policy import fit_policy
    from rsi_workbench.experiments.discovery.credit_info import decision_samples

    for key, caps in CAPS.items():
        folder = out / "policies" / key
        if (folder / "samples.json").exists():
            continue
        folder.mkdir(parents=True, exist_ok=True)
        rows = [r for p in _train_paths(cfg, out) for r in decision_samples(p, caps)]
        for arm in ("uniform", "oracle", "credit", "shuffled"):
            w = arm_weights(rows, arm, cfg.policy.shuffle_seed)
            pol = fit_policy(
                [r["features"] for r in rows],
                [r["operation"] for r in rows],
                w,
                C=cfg.policy.C,
                seed=cfg.policy.seed,
            )
            pol.meta.update({"arm": arm, "family_caps": caps})
            (folder / f"{arm}.json").write_text(json.dumps(pol.to_json(), sort_keys=True))
        (folder / "samples.json").write_text(json.dumps(rows, sort_keys=True))


def _policy(out: Path, arm: str, caps: str) -> Any:
    from rsi_workbench.domains.tabular.credit_policy import OperationPolicy

    return OperationPolicy.from_json(json.loads((out / "policies" / caps / f"{arm}.json").read_text()))


def _lead(out: Path, label: str, arm: str, caps: str) -> Any:
    from rsi_workbench.domains.tabular.credit_policy import PolicyLead

    return PolicyLead(_policy(out, arm, caps), name=f"theta+:{label}")


def _states(path: Path) -> list[tuple[Any, Any]]:
    """(state the Lead saw, recorded decision) for every valid decision of a finished campaign."""
    from rsi_workbench.config import validate_config
    from rsi_workbench.discovery.records import completed_events, load_records
    from rsi_workbench.domains.tabular.credit import records_before
    from rsi_workbench.experiments.discovery import campaign as camp_mod
    from rsi_workbench.records import Run

    run = Run.open(path)
    recs = load_records(run)
    cfg = validate_config(run.config, camp_mod.Config, source=str(path / "config.json"))
    events = completed_events(run.events())
    out = []
    for dec in recs.lead_decisions:
        state = camp_mod.lead_state(records_before(events, dec.episode), cfg, cfg.harness, dec.episode)
        out.append((state, dec))
    return out


def _same_decisions(lead: Any, path: Path) -> bool:
    """Whether ``lead`` makes, on every recorded state of the campaign at ``path``, the recorded
    decision through its own policy (not its rule-Lead fallback), so its campaign would be identical."""
    import random

    for state, dec in _states(path):
        if not dec.valid or dec.fallback:
            return False
        mine = lead.decide(state, random.Random(0))
        if not mine.rationale.startswith("policy p="):
            return False
        if (mine.operation, tuple(mine.parents), mine.direction) != (
            dec.operation,
            tuple(dec.parents),
            dec.direction,
        ):
            return False
    return True


def cmd_run(args: argparse.Namespace) -> int:
    from rsi_workbench.domains.tabular.credit_policy import EpsilonLead
    from rsi_workbench.experiments.discovery import campaign as camp_mod

    cfg = _config(args.config)
    out = Path(args.out)
    left = args.chunk if args.chunk is not None else -1
    for d in cfg.train_directions:
        for s in cfg.train_seeds:
            path = out / "train" / f"{_slug(d)}-s{s}"
            if _done(path):
                continue
            if left == 0:
                print(f"{out}: chunk used; not finished: run again")
                return 0
            left -= 1
            camp_mod.run_campaign(
                _campaign(cfg, d, s, cfg.train_episodes, False),
                path,
                resume=path.exists(),
                lead=EpsilonLead(cfg.epsilon),
                progress=False,
            )
            _mark(path, {"direction": d, "seed": s})
            print(f"train {path.name}", flush=True)
    _fit(cfg, out)
    for label, arm, caps in DEV_ARMS:
        lead = _lead(out, label, arm, caps)
        for d in cfg.dev_directions:
            for s in cfg.dev_seeds:
                path = out / "dev" / label / f"{_slug(d)}-s{s}"
                if _done(path):
                    continue
                same = next(
                    (
                        other
                        for other, *_ in DEV_ARMS
                        if other != label
                        and _done(out / "dev" / other / path.name)
                        and "same_as"
                        not in json.loads((out / "dev" / other / path.name / "pilot_done.json").read_text())
                        and _same_decisions(lead, out / "dev" / other / path.name)
                    ),
                    None,
                )
                if same is not None:
                    path.mkdir(parents=True, exist_ok=True)
                    _mark(path, {"arm": label, "direction": d, "seed": s, "same_as": same})
                    print(f"dev {label} {path.name}: same decisions as {same}", flush=True)
                    continue
                if left == 0:
                    print(f"{out}: chunk used; not finished: run again")
                    return 0
                left -= 1
                camp_mod.run_campaign(
                    _campaign(cfg, d, s, cfg.dev_episodes, True),
                    path,
                    resume=path.exists(),
                    lead=lead,
                    progress=False,
                )
                _mark(path, {"arm": label, "direction": d, "seed": s})
                print(f"dev {label} {path.name}", flush=True)
    print(f"{out}: finished")
    return 0


def _dev_row(out: Path, label: str, direction: str, seed: int) -> dict[str, Any]:
    from rsi_workbench.discovery.records import load_records
    from rsi_workbench.domains.tabular.credit import campaign_row
    from rsi_workbench.domains.tabular.oracle import hypothesis_oracle_value

    path = out / "dev" / label / f"{_slug(direction)}-s{seed}"
    info = json.loads((path / "pilot_done.json").read_text())
    src = out / "dev" / info["same_as"] / path.name if "same_as" in info else path
    row = campaign_row(src)
    vals = [v for h in load_records(src).hypotheses if (v := hypothesis_oracle_value(h)) is not None]
    row["oracle_mean"] = statistics.fmean(vals) if vals else 0.0
    row.pop("s_per_episode", None)
    return {"arm": label, "direction": direction, "seed": seed, "same_as": info.get("same_as"), **row}


def summary(out: Path, config: str, command: str) -> dict[str, Any]:
    from rsi_workbench.discovery.records import load_records
    from rsi_workbench.domains.tabular.credit import decision_splits
    from rsi_workbench.domains.tabular.credit_policy import state_features
    from rsi_workbench.domains.tabular.oracle import omega_tracking

    cfg = _config(config)
    recs = {p.name: load_records(p) for p in _train_paths(cfg, out)}
    training: dict[str, Any] = {}
    for key in CAPS:
        rows = json.loads((out / "policies" / key / "samples.json").read_text())
        t = omega_tracking(rows, recs)
        training[key] = {
            "decisions": len(rows),
            "omega_positive": sum(r["omega"] > 0 for r in rows),
            "rho_omega_oracle": t["rho_oracle"],
            "rho_omega_oracle_within": t["rho_oracle_within"],
            "rho_omega_episode": t["rho_episode"],
            "rho_omega_profile": t["rho_profile"],
            "precondition_met": bool(t["rho_oracle"] >= 0.3),
        }
    rows0 = json.loads((out / "policies" / "nocaps" / "samples.json").read_text())
    ops: dict[str, int] = {}
    for r in rows0:
        ops[r["operation"]] = ops.get(r["operation"], 0) + 1
    training["operations"] = ops
    training["mean_oracle"] = statistics.fmean(r["oracle"] for r in rows0 if r["oracle"] is not None)
    pols = {label: _policy(out, arm, caps) for label, arm, caps in DEV_ARMS}
    train_states = [r["features"] for r in rows0]
    dev_states = [
        state_features(st)
        for d in cfg.dev_directions
        for s in cfg.dev_seeds
        for st, _ in _states(out / "dev" / "uniform" / f"{_slug(d)}-s{s}")
    ]
    splits = {}
    for where, states in (("training_states", train_states), ("dev_states_uniform", dev_states)):
        all_pairs = decision_splits(pols, states)
        splits[where] = {
            f"{a}-{b}": all_pairs.get(f"{a}-{b}") or all_pairs.get(f"{b}-{a}") for a, b in COMPARISONS
        }
    dev = [
        _dev_row(out, label, d, s)
        for label, *_ in DEV_ARMS
        for d in cfg.dev_directions
        for s in cfg.dev_seeds
        if _done(out / "dev" / label / f"{_slug(d)}-s{s}")
    ]
    return {
        "study": "discovery_credit_pilot2",
        "scale": "pilot (not pre-registered, not the result)",
        "config": config,
        "command": command,
        "commit": _commit(),
        "date": datetime.date.today().isoformat(),
        "seed": cfg.seed,
        "training": training,
        "splits": splits,
        "dev": dev,
    }


def _commit() -> str:
    try:
        r = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
        return r.stdout.strip()
    except OSError:
        return ""


def table(s: dict[str, Any]) -> str:
    from rsi_workbench.experiments.discovery.credit_report import mean_ci, paired

    lines = [f"{s['study']} — {s['scale']} ({s['config']}, commit {s['commit']}, {s['date']})", ""]
    t = s["training"]
    lines.append(f"training: {t['nocaps']['decisions']} behaviour decisions, operations {t['operations']}")
    for key in CAPS:
        x = t[key]
        lines.append(
            f"  family budgets {'on (paper)' if CAPS[key] else 'off'}: ρ(ω, oracle) {x['rho_omega_oracle']:+.3f} "
            f"(within campaign {x['rho_omega_oracle_within']:+.3f}), ρ(ω, episode) {x['rho_omega_episode']:+.3f}, "
            f"ρ(ω, profile) {x['rho_omega_profile']:+.3f}; {x['omega_positive']} with ω > 0; "
            f"precondition ρ(ω, oracle) ≥ 0.3 {'met' if x['precondition_met'] else 'NOT met'}"
        )
    lines += [
        "",
        "| arm | pairs | l1_weighted_mean | oracle_mean | restart | evolve | repair | crossover | reused |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for label in dict.fromkeys(r["arm"] for r in s["dev"]):
        rs = [r for r in s["dev"] if r["arm"] == label]

        def m(k: str, rs: list[dict[str, Any]] = rs) -> float:
            return statistics.fmean(float(r[k]) for r in rs)

        lines.append(
            f"| {label} | {len(rs)} | {m('l1_weighted_mean'):.3f} | {m('oracle_mean'):.3f} | {m('share_restart'):.0%} | "
            f"{m('share_evolve'):.0%} | {m('share_repair'):.0%} | {m('share_crossover'):.0%} | "
            f"{sum(r['same_as'] is not None for r in rs)} |"
        )
    lines.append("")
    for col in ("l1_weighted_mean", "oracle_mean"):
        for a, b in COMPARISONS:
            diffs = paired(s["dev"], a, b, col)
            m_, lo, hi, n = mean_ci(diffs, int(s.get("seed", 0)))
            if n == 0:
                continue
            ci = "no interval" if lo != lo else f"[{lo:+.3f}, {hi:+.3f}]"
            excl = "" if lo != lo else ("  CI excludes 0" if lo > 0 or hi < 0 else "  CI includes 0")
            same = sum(d == 0 for d in diffs)
            lines.append(f"{a} − {b} ({col}): {m_:+.3f} {ci} (n={n} pairs, {same} identical){excl}")
    lines.append("")
    for where, pairs in s["splits"].items():
        lines.append(
            f"shared-draw split ({where}, {int(next(iter(pairs.values()))['states'])} states): "
            + "; ".join(
                f"{k}: mean {v['mean_split']:.3f}, ≥{v['threshold']:.2f} in {v['share_split_ge_threshold']:.0%}"
                for k, v in pairs.items()
            )
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("config")
    r.add_argument("out")
    r.add_argument("--chunk", type=int, default=None)
    sm = sub.add_parser("summarize")
    sm.add_argument("out")
    sm.add_argument("--config", required=True)
    sm.add_argument("--out", dest="file", required=True)
    tb = sub.add_parser("table")
    tb.add_argument("file")
    a = ap.parse_args(argv)
    if a.cmd == "run":
        return cmd_run(a)
    if a.cmd == "summarize":
        command = "python " + " ".join(
            [
                str(Path(sys.argv[0]).relative_to(ROOT) if Path(sys.argv[0]).is_absolute() else sys.argv[0]),
                *sys.argv[1:],
            ]
        )
        s = summary(Path(a.out), a.config, command)
        Path(a.file).parent.mkdir(parents=True, exist_ok=True)
        Path(a.file).write_text(json.dumps(s, indent=1, sort_keys=True) + "\n")
        print(table(s))
        return 0
    print(table(json.loads(Path(a.file).read_text())))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
