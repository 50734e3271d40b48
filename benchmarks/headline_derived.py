"""Headline rows derived from committed compact summaries (no run directory), issues 32–34.

    RSI_WORKBENCH_DATA=/work/shared/datasets python benchmarks/headline_derived.py   # rewrite the 4 files
    python benchmarks/headline.py --write

Four pre-registered experiments keep their per-unit results in their own compact files, not in a run
directory that ``headline.py --summarize`` could read. This script reads those committed files and
writes one headline summary each (``benchmarks/data/headline/<name>.json``, the format of
``docs/results.md``); the descriptive fields (experiment, paper, rule) are fixed below:

* ``code_ranker``: per task, the top-1 (ties 1/m) of ``lm`` on each of its pools, recomputed with
  ``rank_pools``' own functions from the committed pools and ``lm_scores.jsonl`` (no model is loaded;
  a missing score is an error); it must equal ``full_summary.json``'s top-1 and interval. The MiniLM
  arms' per-pool scores are not committed, so ``lm`` is compared with the chance level 0.25 per pool.
* ``reactions_transfer``: prior_protocol_l0 and gp_ei best yield @20 per seed on each of the six
  targets (``benchmarks/data/reactions_transfer/<target>@20.json``), pooled: the unit is the seed, its
  values the six targets.
* ``dreaming_diverse``: best@240 of dreaming_diverse and portfolio (π0) per seed
  (``benchmarks/data/dreaming_diverse/full/seed-*.json``).
* ``discovery_credit``: l1_weighted_mean of the credit and uniform arms per (direction, seed)
  (``benchmarks/data/discovery_credit/preregistered.json``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks" / "data" / "headline"
RANKER = ROOT / "benchmarks" / "data" / "code_ranker"
TRANSFER = ROOT / "benchmarks" / "data" / "reactions_transfer"
DIVERSE = ROOT / "benchmarks" / "data" / "dreaming_diverse" / "full"
CREDIT = ROOT / "benchmarks" / "data" / "discovery_credit" / "preregistered.json"
TARGETS = ("perera-1a+2a", "perera-1a+2b", "perera-1b+2b", "perera-1b+2c", "perera-1c+2c", "perera-1d+2c")


def _rel(p: Path) -> str:
    return str(p.relative_to(ROOT))


def code_ranker() -> dict[str, Any]:
    """Per-task top-1 of ``lm`` (and the chance arm), checked against ``full_summary.json``."""
    from rsi_workbench.domains.code_repair.lm_ranker import LMScorer
    from rsi_workbench.domains.code_repair.pools import load_pools, load_source
    from rsi_workbench.domains.code_repair.rank_pools import rank_scores, top1
    from rsi_workbench.metrics.bootstrap import cluster_interval

    pools_dir = RANKER / "humanevalfix"
    summ = json.loads((RANKER / "full_summary.json").read_text())["results"]
    data, rows = load_pools(pools_dir)
    loaded, _, sha = load_source(str(data["manifest"]["tasks"]))
    if sha != data["manifest"]["tasks_sha256"]:
        raise SystemExit(f"{pools_dir / 'manifest.json'}: the task file's sha256 differs ({sha})")

    def no_model() -> Any:
        raise SystemExit(f"{pools_dir / 'lm_scores.jsonl'}: a Δ log p score is missing (no model is loaded)")

    scorer = LMScorer(None, summ["lm"]["scoring"]["model"], pools_dir / "lm_scores.jsonl", load=no_model)
    scores = rank_scores("lm", data, rows, {t.task_id: t for t in loaded}, scorer=scorer, seed=0)
    per_task: dict[str, list[float]] = {}
    for p in data["pools"]:
        s = [scores[p["task_id"]][i] for i in p["candidates"]]
        per_task.setdefault(p["task_id"], []).append(top1(s, p["candidates"].index(p["fix"])))
    got = list(cluster_interval(per_task, seed=0))
    if got != summ["lm"]["top1_recall"]:
        raise SystemExit(f"recomputed lm top-1 {got} != full_summary.json's {summ['lm']['top1_recall']}")
    verifier = float(summ["minilm_verifier"]["top1_recall"][0])
    return {
        "arms": {"lm": per_task, "chance": {t: [0.25] * len(v) for t, v in per_task.items()}},
        "min_lower": round(100.0 * (verifier - 0.25), 4),
        "verifier": verifier,
    }


def transfer(at: int = 20) -> dict[str, dict[str, list[float]]]:
    """{arm: {seed: [value on each of the six targets, in TARGETS order]}} at ``at`` experiments."""
    arms: dict[str, dict[str, list[float]]] = {"prior_protocol_l0": {}, "gp_ei": {}}
    files = [json.loads((TRANSFER / f"{t}@{at}.json").read_text()) for t in TARGETS]
    seeds = sorted(set.intersection(*(set(f["arms"]["gp_ei"]) for f in files)), key=int)
    for arm in arms:
        for sd in seeds:
            arms[arm][sd] = [float(f["arms"][arm][sd][0]) for f in files]
    return arms


def diverse(at: int = 240) -> dict[str, dict[str, list[float]]]:
    """{arm: {seed: [best@at]}} of dreaming_diverse and portfolio, from the per-seed summaries."""
    from rsi_workbench.domains.math.fidelity import best_of

    arms: dict[str, dict[str, list[float]]] = {"dreaming_diverse": {}, "portfolio": {}}
    for p in sorted(DIVERSE.glob("seed-*.json"), key=lambda q: int(q.stem.split("-")[1])):
        s = json.loads(p.read_text())
        vals = {a: best_of(s, a, at) for a in arms}
        if all(v is not None for v in vals.values()):
            for a, v in vals.items():
                arms[a][str(s["seed"])] = [float(v)]  # type: ignore[arg-type]
    return arms


def credit() -> dict[str, dict[str, list[float]]]:
    """{arm: {"direction|seed": [l1_weighted_mean]}} of the credit and uniform arms."""
    arms: dict[str, dict[str, list[float]]] = {"credit": {}, "uniform": {}}
    for r in json.loads(CREDIT.read_text())["rows"]:
        if r["arm"] in arms:
            arms[r["arm"]][f"{r['direction']}|{r['seed']}"] = [float(r["l1_weighted_mean"])]
    return arms


def rows() -> dict[str, dict[str, Any]]:
    """The four summaries, by file name."""
    cr = code_ranker()
    dv_meta = json.loads((DIVERSE / "meta.json").read_text())
    cd = json.loads(CREDIT.read_text())
    tr20 = json.loads((TRANSFER / f"{TARGETS[0]}@20.json").read_text())
    common = {"status": "verified", "scale": "headline", "kind": "paired", "date": "2026-12-02"}
    return {
        "code_ranker.json": {
            "order": 3.5,
            "system": "RSI-Anything",
            "experiment": "code-ranker diagnostic (issue 33, pre-registered in `rank_pools.yaml`): raw Δ log p of "
            "SmolLM2-135M (`lm`) ranking 220 HumanEvalFix pools of 4 (55 tasks, one fix per pool), top-1 recall "
            "(ties 1/m) against chance 0.25 — the MiniLM verifier's per-pool scores are not committed, so it "
            f"enters only the rule ({cr['verifier']:.3f})",
            **common,
            "config": "benchmarks/data/code_ranker/rank_pools.yaml",
            "command": "rsi-workbench tasks rank-table benchmarks/data/code_ranker/rank_pools.yaml "
            "--save benchmarks/data/code_ranker/full_summary.json",
            "commit": "4d546ef",
            "values_from": "python benchmarks/headline_derived.py: per-pool top-1 recomputed with rank_pools' "
            "rank_scores/top1 from the committed pools.json, candidates.jsonl and lm_scores.jsonl (no model); "
            "equals full_summary.json's lm top-1 0.532 [0.432, 0.627] exactly",
            "code_note": "the run's commit as RESULTS.md's code-ranker section gives it; summary committed in 9cfffc3",
            "compare": ["lm", "chance"],
            "unit": "tasks",
            "interval": "bootstrap",
            "scale_factor": 100.0,
            "value_unit": "pp",
            "digits": 1,
            "arms": cr["arms"],
            "preregistered": {
                "rule": "convincing: lm top-1 ≥ 0.40 AND its interval's lower bound > 0.25 AND > the MiniLM "
                f"verifier's top-1 ({cr['verifier']:.4f}); encoded here as lower end of lm − chance > "
                f"{cr['min_lower']:g} pp (the ≥ 0.40 clause is read from the mean shown)",
                "min_lower": cr["min_lower"],
            },
            "paper": {
                "figure": "candidate-ranking accuracy 66.5% (static verifier) → 72.8% (adaptive world model); "
                "five-class Brier 0.488 → 0.358",
                "source": "rsi-anything.md, section 代码修复, the text after 表 3 (paper Fig. 3c)",
                "comparable": False,
                "why": "pairwise ranking accuracy of a trained world model on 200 CodeContests problems; here "
                "top-1 in pools of 4 of an untrained LM's likelihood on HumanEvalFix (contamination possible)",
            },
        },
        "reactions_transfer.json": {
            "order": 5.5,
            "system": "RSI-Anything",
            "experiment": "reactions transfer priors (issue 32, pre-registered `transfer.yaml`, 6 Perera targets × "
            "50 seeds): prior + protocol (λ = 0) vs GP-EI from scratch, best yield @20, pooled over the six "
            "targets (declared here: unit = seed, its values = the six targets)",
            **common,
            "config": "configs/reactions/transfer.yaml",
            "command": "python benchmarks/reactions_transfer.py run --targets TARGETS --first-seed SEED --seeds 10 "
            "--out runs/reactions-transfer/CHUNK; python benchmarks/reactions_transfer.py summarise "
            "runs/reactions-transfer/CHUNK --into benchmarks/data/reactions_transfer --chunk NAME",
            "commit": tr20["commit"],
            "values_from": "python benchmarks/headline_derived.py: benchmarks/data/reactions_transfer/<target>@20.json "
            "(per-seed best_curve[19] of every arm)",
            "compare": ["prior_protocol_l0", "gp_ei"],
            "unit": "seeds",
            "interval": "bootstrap",
            "scale_factor": 1.0,
            "value_unit": "yield points",
            "digits": 2,
            "arms": transfer(20),
            "preregistered": {
                "rule": tr20["preregistered"]["rule"] + ". The rule is per target (≥ 4 of 6, at 10 and 20): "
                "this pooled row can only read 'met' when its lower end exceeds +5; per target "
                "(`reactions_transfer.py table`) clause (a) holds on 0 of 6",
                "min_lower": 5.0,
            },
            "paper": {
                "figure": "GC screen, 20 experiments: best observed yield 93.0% vs BO 87.5% (+5.5 pp)",
                "source": "rsi-anything.md, section 反应优化 (paper Fig. 6b–c)",
                "comparable": False,
                "why": "a pretrained ReactionT5 prior on the Pd–NHC–DMS GC screen; here a prior from sibling "
                "Perera campaigns on six other reactant pairs (the rule's +5 is taken from this figure)",
            },
        },
        "dreaming_diverse.json": {
            "order": 6.7,
            "system": "Dream-RSI",
            "experiment": "diverse dreaming (issue 34, pre-registered `diverse_autocorrelation.yaml`, autocorrelation "
            "m = 60, 10 seeds × 240 calls): dreaming_diverse vs its π0 (`portfolio`), best valid score (−C1) @240",
            **common,
            "config": dv_meta["config"],
            "command": "nice -n 19 rsi-workbench run configs/dreaming/diverse_autocorrelation.yaml --out runs/diverse-full",
            "commit": dv_meta["commit"],
            "values_from": "python benchmarks/headline_derived.py: best_at['240'] of benchmarks/data/dreaming_diverse/"
            "full/seed-*.json (written by `" + dv_meta["command"] + "`)",
            "compare": ["dreaming_diverse", "portfolio"],
            "unit": "seeds",
            "interval": "t",
            "scale_factor": 1.0,
            "value_unit": "",
            "digits": 6,
            "arms": diverse(240),
            "preregistered": {
                "rule": "convincing when all of (a) dreaming_diverse's mean within or above the winning fixed "
                "family's CI, (b) dreaming_diverse − portfolio seed-paired CI above 0, (c) the winner deployed in "
                "≥ 70% of rounds, (d) replay fidelity ρ ≥ 0.6; encoded here: clause (b). Full reading "
                "(`dreaming_diverse.py verdict`): neither",
                "min_lower": 0.0,
            },
            "paper": {
                "figure": "Table 1, autocorrelation (lower is better): Dream-RSI 1.456375 vs SimpleTES 1.453675",
                "source": "dream-rsi.md, 表 1 (paper Table 1)",
                "comparable": False,
                "why": "the paper has no dreamer-vs-π0 comparison; its systems use LLM agents (< 1,000 "
                "generations), here built-in exploration families",
            },
        },
        "discovery_credit.json": {
            "order": 8.7,
            "system": "DiscoveryRSI",
            "experiment": "credit information (issue 34, pre-registered `credit_information.yaml`, 12 planted "
            "directions × 3 seeds): θ⁺ fitted credit-weighted vs uniform-weighted, dev l1_weighted_mean",
            **common,
            "config": cd["config"],
            "command": cd["command"],
            "commit": cd["commit"],
            "values_from": "python benchmarks/headline_derived.py: rows of benchmarks/data/discovery_credit/"
            "preregistered.json (" + cd["values_from"] + ")",
            "compare": ["credit", "uniform"],
            "unit": "(direction, seed) pairs",
            "interval": "bootstrap",
            "scale_factor": 1.0,
            "value_unit": "",
            "digits": 3,
            "arms": credit(),
            "preregistered": {
                "rule": "convincing: credit − uniform ≥ +0.3 with its interval above 0, AND credit − shuffled "
                "interval above 0, AND restart share falls and evolve + repair rises; falsified: credit − "
                "shuffled interval within ±0.3; encoded here: credit − uniform interval above 0. Full reading "
                "(`discovery_credit.py table`): falsified (credit ≈ shuffled placebo)",
                "min_lower": 0.0,
            },
            "paper": {
                "figure": "hypothesis quality Q 4.86 → 5.18 after the first credit-trained round (表2, Fig. 4b); "
                "restart share 21.7% → 5.8% (表3, Fig. 5a)",
                "source": "discoveryrsi.md, RQ1 表2 and RQ2 表3",
                "comparable": False,
                "why": "a 27B model fine-tuned on credit-weighted tokens, judged by an LLM on 8 axes, with no "
                "uniform-weight ablation; here a logistic operation policy and rule roles on planted directions",
            },
        },
    }


def main() -> int:
    """Write the four summaries."""
    for name, body in rows().items():
        (OUT / name).write_text(json.dumps(body, indent=1, ensure_ascii=False) + "\n")
        print(f"wrote {_rel(OUT / name)}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    raise SystemExit(main())
