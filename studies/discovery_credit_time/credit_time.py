"""Does ω follow when a Lead decision was made, or what it produced? (DiscoveryRSI, arXiv 2610.23839)

Runs small behaviour campaigns (the ε-random Lead, rule roles and judges) on planted synthetic
directions, then for every valid Lead decision prints its eq. 9 weight ω against the episode index,
the judged profile of what its episode published and the planted oracle value; and, per hypothesis,
the pieces of eq. 3-7 against the episode that published it (number of comparisons n, σ, the
conservative score s = μ − 2σ, the rank r, q and q̃), which locate a time trend.

    nice -n 10 python studies/discovery_credit_time/credit_time.py run OUT [--episodes 8] [--seeds 0 1]
        [--directions 16 17 …]
    python studies/discovery_credit_time/credit_time.py report OUT [--no-family-caps] [--json FILE]

Every campaign is a resumable run under OUT; ``report`` needs no compute.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def _campaign_config(direction: str, seed: int, episodes: int) -> Any:
    from rsi_workbench.experiments.discovery import campaign as camp_mod

    harness: dict[str, Any] = {"critique": {"comparisons_per_version": 2}}
    cfg = camp_mod.Config(
        directions=[direction],
        seed=seed,
        episodes=episodes,
        n_bootstrap=50,
        outer_folds=3,
        budgets={"agent_calls": 400, "external_feedback": 40},  # type: ignore[arg-type]
        harness=harness,  # type: ignore[arg-type]
    )
    return cfg


def run(out: Path, directions: list[int], seeds: list[int], episodes: int, epsilon: float) -> None:
    from rsi_workbench.domains.tabular.credit_policy import EpsilonLead
    from rsi_workbench.experiments.discovery import campaign as camp_mod

    for i in directions:
        d = f"synthetic-planted-{i:02d}/outcome"
        for s in seeds:
            path = out / f"d{i:02d}-s{s}"
            if (path / "done.json").exists():
                continue
            cfg = _campaign_config(d, s, episodes)
            camp_mod.run_campaign(cfg, path, resume=path.exists(), lead=EpsilonLead(epsilon), progress=False)
            (path / "done.json").write_text("{}")
            print(f"done {path.name}", flush=True)


def rows_and_records(
    out: Path, caps: bool = True
) -> tuple[list[dict[str, Any]], dict[str, Any], list[dict[str, Any]]]:
    """Decision samples (with ω), records per campaign, and per-hypothesis eq. 3-7 pieces."""
    from rsi_workbench.discovery.credit import assign_credit, credit_records_from
    from rsi_workbench.discovery.records import load_records
    from rsi_workbench.domains.tabular.oracle import hypothesis_oracle_value
    from rsi_workbench.experiments.discovery.credit_info import decision_samples

    rows: list[dict[str, Any]] = []
    recs_by: dict[str, Any] = {}
    hyp_rows: list[dict[str, Any]] = []
    for path in sorted(p for p in out.iterdir() if (p / "done.json").exists()):
        recs = load_records(path)
        recs_by[path.name] = recs
        res = assign_credit(credit_records_from(recs), credit_settings(caps))
        for r in decision_samples(path):
            r["omega"] = float(res.release.omega.get(r["trajectory"], 0.0))
            rows.append(r)
        for h in recs.hypotheses:
            hw, cw = res.weights.get(h.hypothesis_id), res.capped.get(h.hypothesis_id)
            hyp_rows.append(
                {
                    "campaign": path.name,
                    "episode": h.episode,
                    "n": hw.n_effective if hw else 0,
                    "sigma": hw.sigma if hw else math.nan,
                    "s": hw.s if hw else math.nan,
                    "rank": hw.rank if hw and hw.rank is not None else math.nan,
                    "q": hw.q if hw and hw.q is not None else math.nan,
                    "q_tilde": cw.q_tilde if cw else math.nan,
                    "oracle": hypothesis_oracle_value(h),
                }
            )
    return rows, recs_by, hyp_rows


def credit_settings(caps: bool) -> Any:
    """The paper's constants, or the same without the eq. 7 family budgets (C_loc = C_glob = inf)."""
    from rsi_workbench.discovery.credit import CreditSettings, ShareSettings

    if caps:
        return CreditSettings()
    return CreditSettings(shares=ShareSettings(c_loc=math.inf, c_glob=math.inf))


def report(out: Path, caps: bool = True) -> dict[str, Any]:
    from rsi_workbench.domains.tabular.oracle import _rho, omega_tracking

    rows, recs_by, hyp = rows_and_records(out, caps)
    summary: dict[str, Any] = {"campaigns": len(recs_by), "family_caps": caps}
    summary["omega"] = omega_tracking(rows, recs_by)
    pieces = {}
    for k in ("n", "sigma", "s", "rank", "q", "q_tilde"):
        p = [h for h in hyp if not (isinstance(h[k], float) and math.isnan(h[k]))]
        pieces[k] = {
            "rho_episode": _rho([float(h["episode"]) for h in p], [float(h[k]) for h in p]),
            "rho_oracle": _rho(
                [float(h["oracle"]) for h in p if h["oracle"] is not None],
                [float(h[k]) for h in p if h["oracle"] is not None],
            ),
        }
    summary["per_hypothesis"] = pieces
    by_ep: dict[int, list[int]] = {}
    for h in hyp:
        by_ep.setdefault(int(h["episode"]), []).append(int(h["n"]))
    summary["precondition_rho_oracle_ge_0.3"] = bool(summary["omega"]["rho_oracle"] >= 0.3)
    summary["splits"] = splits(rows)
    summary["mean_comparisons_by_episode"] = {e: statistics.fmean(v) for e, v in sorted(by_ep.items())}
    return summary


def splits(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """theta+ fitted per arm on these decisions, and how often one shared draw splits two arms."""
    from rsi_workbench.domains.tabular.credit import arm_weights, decision_splits
    from rsi_workbench.domains.tabular.credit_policy import fit_policy

    X = [r["features"] for r in rows]
    y = [r["operation"] for r in rows]
    pols = {a: fit_policy(X, y, arm_weights(rows, a, 0)) for a in ("credit", "uniform", "shuffled", "oracle")}
    return decision_splits(pols, X)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("out", type=Path)
    r.add_argument("--directions", type=int, nargs="+", default=[16, 17])
    r.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    r.add_argument("--episodes", type=int, default=8)
    r.add_argument("--epsilon", type=float, default=0.35)
    p = sub.add_parser("report")
    p.add_argument("out", type=Path)
    p.add_argument("--no-family-caps", action="store_true", help="eq. 7 without C_loc / C_glob")
    p.add_argument("--json", type=Path, default=None)
    a = ap.parse_args(argv)
    if a.cmd == "run":
        a.out.mkdir(parents=True, exist_ok=True)
        run(a.out, a.directions, a.seeds, a.episodes, a.epsilon)
        return 0
    s = report(a.out, not a.no_family_caps)
    text = json.dumps(s, indent=1, default=float)
    print(text)
    if a.json:
        a.json.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
