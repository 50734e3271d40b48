"""The headline of benchmarks/RESULTS.md is the output of ``python benchmarks/headline.py``, and each
pre-registered outcome is derived from every clause of its written rule."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent


def _headline() -> ModuleType:
    spec = importlib.util.spec_from_file_location("headline", REPO / "benchmarks" / "headline.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules["headline"] = mod
    spec.loader.exec_module(mod)
    return mod


H = _headline()


def test_results_md_opens_with_the_commands_output() -> None:
    text = (REPO / "benchmarks" / "RESULTS.md").read_text()
    assert H.block(text) == H.table(), "run `python benchmarks/headline.py --write` and commit RESULTS.md"
    assert H.block(text, H.HBEGIN, H.HEND) == H.history()
    # the block comes right after the title's section heading, before any other section
    assert text.index(H.BEGIN) < text.index("\n## Records")
    # its first screen: a status line per paper, then the pre-registered table only
    head = H.block(text)
    for paper in ("RSI-Anything", "Dream-RSI", "DiscoveryRSI", "RSIAgent"):
        assert f"**{paper}: " in head
    assert "**unverified**" not in head and "smoke" not in head
    assert H.main(["--check"]) == 0


def test_every_summary_loads_and_unverified_rows_say_so() -> None:
    items = H.summaries()
    assert len(items) >= 6
    systems = {s["system"] for s in items}
    assert {"RSI-Anything", "Dream-RSI", "DiscoveryRSI", "RSIAgent", "RSI-Anything (GUI)"} <= systems
    for s in items:
        r = H.prereg_row(s) if s.get("preregistered") else H.row(s)
        assert ("**unverified**" in r) == (s["status"] == "unverified"), s["_path"]


def _summary(tmp_path: Path, **over: Any) -> dict[str, Any]:
    """A test-double summary: two arms over four seeds."""
    s: dict[str, Any] = {
        "system": "X",
        "experiment": "e",
        "status": "verified",
        "scale": "headline",
        "command": "c",
        "kind": "paired",
        "unit": "seeds",
        "interval": "t",
        "compare": ["a", "b"],
        "arms": {
            "a": {"0": [3], "1": [4], "2": [5], "3": [4]},
            "b": {"0": [1], "1": [1], "2": [2], "3": [1]},
        },
        "paper": {"figure": "f", "source": "s", "comparable": True, "diff": 3.0},
    }
    s.update(over)
    p = tmp_path / "s.json"
    p.write_text(json.dumps(s))
    return H.load(p)


def test_seed_level_t_interval_and_verdict(tmp_path: Path) -> None:
    s = _summary(tmp_path)
    mean, lo, hi, n = H.estimate(s)
    assert (n, mean) == (4, 2.75)
    assert lo > 0 and lo < mean < hi
    v = H.verdict(s, (mean, lo, hi, n))
    assert "a > b (CI excludes 0)" in v and "paper's figure inside the CI" in v


def test_the_gui_seed_level_interval_from_per_seed_counts(tmp_path: Path) -> None:
    arms = {"rsi": {"0": [100], "1": [76], "2": [100]}, "ctl": {"0": [76], "1": [76], "2": [75]}}
    s = _summary(tmp_path, arms=arms, compare=["rsi", "ctl"])
    mean, lo, hi, _ = H.estimate(s)
    assert round(mean, 1) == 16.3 and round(lo, 1) == -18.8 and round(hi, 1) == 51.5
    assert "no difference (CI includes 0)" in H.verdict(s, (mean, lo, hi, 3))


def test_bootstrap_over_units_and_the_other_verdicts(tmp_path: Path) -> None:
    arms = {"a": {f"t{i}": [0, 0] for i in range(8)}, "b": {f"t{i}": [1, 1] for i in range(8)}}
    s = _summary(
        tmp_path,
        arms=arms,
        interval="bootstrap",
        unit="tasks",
        scale="smoke",
        status="unverified",
        unverified_reason="gone",
        paper={"figure": "f", "source": "s", "comparable": False, "why": "other benchmark"},
    )
    est = H.estimate(s)
    assert est[:3] == (-1.0, -1.0, -1.0)
    v = H.verdict(s, est)
    assert v.startswith("**unverified**: gone; smoke, not a headline; a < b (CI excludes 0)")
    assert v.endswith("not comparable: other benchmark")


def test_malformed_summaries_name_the_file_and_field(tmp_path: Path) -> None:
    p = tmp_path / "bad.json"
    p.write_text(json.dumps({"system": "X"}))
    with pytest.raises(H.SummaryError, match=r"bad\.json: missing field 'experiment'"):
        H.load(p)
    with pytest.raises(H.SummaryError, match="unverified_reason"):
        _summary(tmp_path, status="unverified")
    with pytest.raises(H.SummaryError, match="compare names arm 'z'"):
        _summary(tmp_path, compare=["a", "z"])


def test_summarize_gui_reads_per_seed_success_of_the_retained_pairs(tmp_path: Path) -> None:
    from rsi_workbench.records import Run

    run = Run.create(tmp_path / "gui", {"experiment": "gui"})
    outcomes = {"p-rsi-0": [1, 1, 1, 0], "p-ctl": [1, 0, 0, 0], "p-rsi-1": [1, 1, 0, 0]}
    for pair, succ in outcomes.items():
        for i, ok in enumerate(succ):
            run.append(
                "test_episode", {"pair": pair, "test_seed": i, "success": bool(ok), "infra_failure": False}
            )
    run.append("test_episode", {"pair": "p-ctl", "test_seed": 9, "success": True, "infra_failure": True})
    for seed, rsi in ((0, "p-rsi-0"), (1, "p-rsi-1")):
        run.append("tier", {"seed": seed, "method": "rsi", "tier": 1, "pair": rsi})
        run.append("tier", {"seed": seed, "method": "ctl", "tier": 1, "pair": "p-ctl"})
        run.append("tier", {"seed": seed, "method": "rsi", "tier": 0, "pair": "p-ctl"})
    run.commit()
    body = H.summarize_gui(tmp_path / "gui", "rsi", "ctl", 1)
    assert body["arms"] == {"rsi": {"0": [0.75], "1": [0.5]}, "ctl": {"0": [0.25], "1": [0.25]}}
    assert body["tiers"]["rsi"] == {"0": [0.25, 0.75], "1": [0.25, 0.5]}  # every tier, in order
    assert (body["unit"], body["interval"]) == ("seeds", "t")
    with pytest.raises(H.SummaryError, match="no tested tier 2"):
        H.summarize_gui(tmp_path / "gui", "rsi", "ctl", 2)


def test_fewer_than_three_units_give_no_interval_and_a_sign_count(tmp_path: Path) -> None:
    arms = {"a": {"R0": [1.0], "R1": [2.0]}, "b": {"R0": [3.0], "R1": [4.0]}}
    s = _summary(tmp_path, arms=arms, unit="rounds")
    mean, lo, hi, n = H.estimate(s)
    assert (mean, n) == (-2.0, 2) and lo != lo and hi != hi
    assert "no interval (2 rounds, fewer than 3); a < b in 2, > in 0 of 2" in H.verdict(s, (mean, lo, hi, n))
    assert "(2 rounds, no interval)" in H.figure(s)[0]


def test_summarize_rsiagent_reads_binary_per_page(tmp_path: Path) -> None:
    from rsi_workbench.records import Run

    run = Run.create(tmp_path / "ra", {"experiment": "rsiagent"})
    targets = {"t1": "MiniWoB++ page: click-checkboxes; ...", "t2": "MiniWoB++ page: book-flight; ..."}
    for abl, scores in (("none", {"t1": 0.0, "t2": 0.5}), ("full", {"t1": 1.0, "t2": 0.5})):
        run.append("arm_finished", {"ablation": abl, "seed": 0, "scores": scores, "targets": targets})
    run.commit()
    body = H.summarize_rsiagent(tmp_path / "ra", "full", "none")
    assert body["arms"] == {
        "full": {"click-checkboxes": [1.0], "book-flight": [0.0]},
        "none": {"click-checkboxes": [0.0], "book-flight": [0.0]},
    }
    assert body["unit"] == "pages"


def test_derived_rows_hold_the_values_of_their_committed_summaries() -> None:
    """The rows benchmarks/headline_derived.py writes (issues 32–34) carry exactly the per-unit values
    of the compact summaries they are read from (the code-ranker row needs the HumanEvalFix task file,
    and is checked against full_summary.json when the script runs)."""
    spec = importlib.util.spec_from_file_location(
        "headline_derived", REPO / "benchmarks" / "headline_derived.py"
    )
    assert spec and spec.loader
    d = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(d)
    for name, arms in (
        ("dreaming_diverse.json", d.diverse(240)),
        ("discovery_credit.json", d.credit()),
    ):
        s = H.load(REPO / "benchmarks" / "data" / "headline" / name)
        assert s["arms"] == arms, name
    assert (
        H.load(REPO / "benchmarks" / "data" / "headline" / "reactions_transfer.json")["arm_sets"]
        == d.transfer()
    )
    dv = H.load(REPO / "benchmarks" / "data" / "headline" / "dreaming_diverse.json")
    assert dv["facts"] == d.diverse_facts()
    cd = H.load(REPO / "benchmarks" / "data" / "headline" / "discovery_credit.json")
    assert cd["arm_sets"] == d.credit_shares()
    ranker = H.load(REPO / "benchmarks" / "data" / "headline" / "code_ranker.json")
    summ = json.loads((REPO / "benchmarks" / "data" / "code_ranker" / "full_summary.json").read_text())
    mean, lo, hi, n = H.estimate(ranker)  # lm − chance in pp: the summary's top-1 and interval, shifted
    m0, lo0, hi0 = summ["results"]["lm"]["top1_recall"]
    assert n == summ["results"]["lm"]["tasks"]
    assert [mean, lo, hi] == pytest.approx([100 * (m0 - 0.25), 100 * (lo0 - 0.25), 100 * (hi0 - 0.25)])


def _pre(**over: Any) -> dict[str, Any]:
    pre: dict[str, Any] = {
        "rule": "r",
        "config": "c.yaml",
        "design": "no pilot bound",
        "page": "results/x.md",
        "clauses": {"ci": {"text": "CI above 0", "check": {"diff": ["a", "b"], "lower_above": 0}}},
        "outcomes": [{"word": "convincing", "all": ["ci"]}],
        "otherwise": "inconclusive",
    }
    pre.update(over)
    return pre


def test_a_rising_clause_joins_the_interval_clause(tmp_path: Path) -> None:
    rising = {"a": {"0": [1, 2, 3], "1": [1, 2, 2], "2": [1, 3, 4], "3": [1, 1, 2]}}
    clauses = {
        "ci": {"text": "CI above 0", "check": {"diff": ["a", "b"], "lower_above": 0}},
        "up": {"text": "rises", "check": {"rising": {"arm": "a", "min_units": 3}}},
    }
    pre = _pre(clauses=clauses, outcomes=[{"word": "convincing", "all": ["ci", "up"]}])
    assert H.outcome(_summary(tmp_path, tiers=rising, preregistered=pre))[0] == "convincing"
    clauses["up"]["check"] = {"rising": {"arm": "a", "min_units": 4}}
    assert H.outcome(_summary(tmp_path, tiers=rising, preregistered=pre))[0] == "inconclusive"
    with pytest.raises(H.SummaryError, match="needs 'tiers'"):
        H.outcome(_summary(tmp_path, preregistered=pre))


def test_every_clause_decides_and_partial_encodings_are_refused(tmp_path: Path) -> None:
    """a − b = 2.75 with its CI above 0; each further clause must hold too; a falsified outcome is
    tried after the success outcome, and the rule's own word is printed."""
    arms = {
        "a": {"0": [3], "1": [4], "2": [5], "3": [4]},
        "b": {"0": [1], "1": [1], "2": [2], "3": [1]},
        "c": {"0": [3], "1": [4], "2": [5], "3": [4]},  # equals a: a − c = 0
    }
    clauses = {
        "ci": {"text": "CI above 0", "check": {"diff": ["a", "b"], "lower_above": 0}},
        "big": {"text": "≥ 3", "check": {"diff": ["a", "b"], "mean_at_least": 3}},
        "vs_c": {"text": "a above c", "check": {"diff": ["a", "c"], "mean_above": 0}},
        "k": {
            "text": "2 of 2",
            "check": {"count": [{"diff": ["a", "b"], "mean_above": 0}] * 2, "at_least": 2},
        },
        "f": {"text": "a − c within ±1", "check": {"diff": ["a", "c"], "within": [-1, 1]}},
    }

    def word(ids: list[str]) -> str:
        pre = _pre(
            clauses=clauses, outcomes=[{"word": "success", "all": ids}, {"word": "falsified", "all": ["f"]}]
        )
        return H.outcome(_summary(tmp_path, arms=arms, preregistered=pre))[0]

    assert word(["ci", "k"]) == "success"
    assert word(["ci", "big"]) == "falsified" and word(["ci", "vs_c"]) == "falsified"
    with pytest.raises(H.SummaryError, match="partial encoding"):
        _summary(tmp_path, preregistered={"rule": "r", "min_lower": 0})
    with pytest.raises(H.SummaryError, match="names clause 'zz'"):
        _summary(tmp_path, preregistered=_pre(outcomes=[{"word": "w", "all": ["zz"]}]))


# The written rules, counted from each frozen config header: {row: {outcome word: clauses}}.
WRITTEN = {
    "code_ranker.json": ("benchmarks/data/code_ranker/rank_pools.yaml", {"convincing": 3, "falsified": 2}),
    "code_repair_fixable.json": ("configs/code_repair/fixable.yaml", {"success": 2, "falsified": 2}),
    "code_repair_shifted.json": (
        "configs/code_repair/shifted.yaml",
        {"convincing": 3, "insensitive design": 1, "falsified": 2},
    ),
    "reactions_transfer.json": ("configs/reactions/transfer.yaml", {"met": 2}),
    "dreaming_diverse.json": (
        "configs/dreaming/diverse_autocorrelation.yaml",
        {"convincing": 4, "falsified": 2},
    ),
    "discovery_credit.json": ("configs/discovery/credit_information.yaml", {"convincing": 5, "falsified": 1}),
    "rsiagent_pages10.json": ("configs/rsiagent/miniwob_pages10.yaml", {"convincing": 5, "falsified": 2}),
    "gui_click_checkboxes_competent.json": (
        "configs/gui/click_checkboxes_competent.yaml",
        {"convincing": 3, "falsified": 2},
    ),
    "gui_policy_bottleneck.json": (
        "configs/gui/policy_bottleneck.yaml",
        {"convincing": 1, "insensitive design": 1, "falsified": 1},
    ),
}


def test_every_preregistered_row_encodes_its_whole_written_rule() -> None:
    rows = {s["_path"].name: s for s in H.summaries() if s.get("preregistered")}
    assert set(rows) == set(WRITTEN), "a new pre-registered row needs its clause count here"
    for name, (config, counts) in WRITTEN.items():
        pre = rows[name]["preregistered"]
        assert pre["config"] == config, name
        header = (REPO / config).read_text().lower()
        got = {o["word"]: len(o.get("all", o.get("any", []))) for o in pre["outcomes"]}
        assert got == counts, f"{name}: clauses per outcome {got}, the written rule has {counts}"
        for w in [*got, pre["otherwise"]]:
            assert w.split()[-1] in header, f"{name}: outcome word {w!r} is not in {config}"
        used = {c for o in pre["outcomes"] for c in o.get("all", o.get("any", []))}
        assert used == set(pre["clauses"]), f"{name}: a declared clause decides no outcome"
        assert (REPO / "docs" / pre["page"]).is_file(), pre["page"]
    # the per-target rule is evaluated per target: 6 targets × (@10, @20)
    a = rows["reactions_transfer.json"]["preregistered"]["clauses"]["a"]["check"]
    assert len(a["count"]) == 6 and all(len(x["all"]) == 2 for x in a["count"]) and a["at_least"] == 4
