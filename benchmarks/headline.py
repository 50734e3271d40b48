"""The headline table of ``benchmarks/RESULTS.md``, recomputed from compact summaries and its history appendix.

    python benchmarks/headline.py                 # print the table (Markdown)
    python benchmarks/headline.py --write         # rewrite the block between the markers in RESULTS.md
    python benchmarks/headline.py --check         # exit 1 when RESULTS.md's block differs from the output
    python benchmarks/headline.py --summarize RUN_DIR --kind code_repair --a world_adaptive \\
        --b static_verifier --out benchmarks/data/headline/NAME.json [--system ... --experiment ...]

Every row comes from one JSON file in ``benchmarks/data/headline/`` (the format is in
``docs/results.md``). A row's figure is recomputed here from the per-unit values the file holds, never
copied: ``arms`` maps each compared arm to {unit: [values]}, where a unit is what was randomised
(a task, a seed, a page) and the list holds its values over seeds (one value when the unit is the
seed). The figure is the paired difference ``a − b``:

* ``interval: bootstrap`` — the mean over every (unit, value) pair and its 95% percentile interval
  resampling whole units (2,000 resamples, seed 0: ``rsi_workbench.metrics.bootstrap.cluster_interval``,
  the interval the code-repair report prints);
* ``interval: t`` — the mean of the per-unit differences and a Student-t 95% interval over units
  (for a handful of seeds, where a bootstrap has too few distinct resamples);
* ``kind: packing`` — no comparison: the committed packing is re-evaluated with the task's exact
  evaluator and its sum of radii printed.

The verdict column is derived by :func:`verdict` from the numbers and the file's flags
(``status``, ``scale``, ``paper.comparable``, ``preregistered``), never typed by hand. A summary
whose values were transcribed from prose (its run directory is gone) has ``status: unverified``.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import statistics
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "benchmarks" / "data" / "headline"
RESULTS = ROOT / "benchmarks" / "RESULTS.md"
BEGIN, END = "<!-- headline:begin -->", "<!-- headline:end -->"
HBEGIN, HEND = "<!-- history:begin -->", "<!-- history:end -->"
HEADER = (
    "| system | headline experiment | this project: figure [95% CI] (unit) | paper (source) | verdict | command |\n"
    "|---|---|---|---|---|---|"
)
MIN_UNITS = 3  # fewer randomised units than this: no interval, the verdict counts signs instead
REQUIRED = ("system", "experiment", "status", "scale", "command", "paper")


class SummaryError(ValueError):
    """A headline summary file is malformed (the message names the file and the field)."""


def load(path: Path) -> dict[str, Any]:
    """One summary, checked for the fields every row needs."""
    try:
        s = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise SummaryError(f"{path}: not JSON ({e})") from e
    for f in REQUIRED:
        if f not in s:
            raise SummaryError(f"{path}: missing field {f!r}")
    if s["status"] not in ("verified", "unverified"):
        raise SummaryError(f"{path}: status must be 'verified' or 'unverified', not {s['status']!r}")
    if s["status"] == "unverified" and not s.get("unverified_reason"):
        raise SummaryError(f"{path}: an unverified summary needs 'unverified_reason'")
    if s["scale"] not in ("headline", "reduced", "smoke"):
        raise SummaryError(f"{path}: scale must be headline, reduced or smoke, not {s['scale']!r}")
    kind = s.get("kind", "paired")
    if kind == "paired":
        for f in ("compare", "unit", "interval"):
            if f not in s:
                raise SummaryError(f"{path}: a paired summary needs {f!r}")
        if "arms" not in s and "arm_sets" not in s:
            raise SummaryError(f"{path}: a paired summary needs 'arms' (or 'arm_sets', one per target)")
        for arms in [s["arms"]] if "arms" in s else list(s["arm_sets"].values()):
            for arm in s["compare"]:
                if arm not in arms:
                    raise SummaryError(f"{path}: compare names arm {arm!r}, not in 'arms'")
        if s["interval"] not in ("bootstrap", "t"):
            raise SummaryError(f"{path}: interval must be 'bootstrap' or 't', not {s['interval']!r}")
    elif kind == "packing":
        if "packing" not in s:
            raise SummaryError(f"{path}: a packing summary needs 'packing' (a committed JSON path)")
    elif kind == "stated":
        if "stated" not in s:
            raise SummaryError(f"{path}: a stated summary needs 'stated' (the figure as RESULTS.md gives it)")
        if "stated_ci" in s and ("compare" not in s or len(s["stated_ci"]) != 4):
            raise SummaryError(f"{path}: 'stated_ci' is [mean, lo, hi, units] and needs 'compare'")
    else:
        raise SummaryError(f"{path}: kind must be paired, packing or stated, not {kind!r}")
    if s.get("preregistered") is not None:
        check_rule(s["preregistered"], path)
    s["_path"] = path
    return s


def paired_diffs(s: dict[str, Any]) -> dict[str, list[float]]:
    """{unit: [a − b for each paired value]} over the units both arms have."""
    a, b = (s["arms"][x] for x in s["compare"])
    out: dict[str, list[float]] = {}
    for u in sorted(a.keys() & b.keys(), key=str):
        va, vb = a[u], b[u]
        if len(va) != len(vb):
            raise SummaryError(f"{s['_path']}: unit {u!r} has {len(va)} vs {len(vb)} values in the two arms")
        out[u] = [float(x) - float(y) for x, y in zip(va, vb, strict=True)]
    return out


def estimate(s: dict[str, Any]) -> tuple[float, float, float, int]:
    """(mean, lo, hi, number of units) of the paired difference, scaled by the file's ``scale_factor``."""
    diffs = paired_diffs(s)
    k = float(s.get("scale_factor", 1.0))
    n = len(diffs)
    if n == 0:
        raise SummaryError(f"{s['_path']}: the two arms share no unit")
    if s["interval"] == "bootstrap":
        from rsi_workbench.metrics.bootstrap import cluster_interval

        mean, lo, hi = cluster_interval(diffs, n_resamples=2000, seed=0)
    else:
        from scipy import stats

        per_unit = [statistics.mean(v) for v in diffs.values()]
        mean = statistics.mean(per_unit)
        if n < 2:
            lo = hi = math.nan
        else:
            half = float(stats.t.ppf(0.975, n - 1)) * statistics.stdev(per_unit) / math.sqrt(n)
            lo, hi = mean - half, mean + half
    if n < MIN_UNITS:  # too few units for an interval to mean anything
        lo = hi = math.nan
    return k * mean, k * lo, k * hi, n


def packing_sum(s: dict[str, Any]) -> tuple[float, bool]:
    """(sum of radii, valid) of the committed packing, by the task's exact evaluator."""
    import numpy as np

    from rsi_workbench.domains.math.circle_packing import TOL, evaluate_packing

    data = json.loads((ROOT / s["packing"]).read_text())
    circles = np.asarray(data["circles"], dtype=float)
    ev = evaluate_packing(circles, int(data["n"]), tol=TOL)
    valid = bool(ev.valid)
    if "strict_shrink" in s:  # also strictly valid (tol = 0) once every radius shrinks by this much
        strict = circles.copy()
        strict[:, 2] -= float(s["strict_shrink"])
        valid = valid and bool(evaluate_packing(strict, int(data["n"]), tol=0.0).valid)
    return float(ev.score if ev.score is not None else math.nan), valid


def _num(x: float, nd: int) -> str:
    return "—" if x != x else f"{x:+.{nd}f}".replace("-", "−")


def verdict(s: dict[str, Any], est: tuple[float, float, float, int] | None) -> str:
    """The verdict column: the comparison's reading, then its standing, by fixed rules."""
    parts: list[str] = []
    if s["status"] == "unverified":
        parts.append(f"**unverified**: {s['unverified_reason']}")
    if s["scale"] == "smoke":
        parts.append("smoke, not a headline")
    elif s["scale"] == "reduced":
        parts.append("reduced scale")
    if est is not None:
        mean, lo, hi, n = est
        a, b = s["compare"]
        if lo != lo or hi != hi:
            d = (
                [statistics.mean(v) for v in paired_diffs(s).values()]
                if s.get("kind", "paired") == "paired"
                else []
            )
            signs = (
                f"; {a} < {b} in {sum(x < 0 for x in d)}, > in {sum(x > 0 for x in d)} of {len(d)}"
                if d
                else ""
            )
            reading = f"no interval ({n} {s.get('unit', 'units')}, fewer than {MIN_UNITS}){signs}"
        elif lo > 0:
            reading = f"{a} > {b} (CI excludes 0)"
        elif hi < 0:
            reading = f"{a} < {b} (CI excludes 0)"
        else:
            reading = "no difference (CI includes 0)"
        parts.append(("as stated: " if s.get("kind") == "stated" else "") + reading)
        if s.get("preregistered"):
            parts.append(f"pre-registered outcome: {outcome(s)[0]}")
    paper = s["paper"]
    if not paper.get("comparable", False):
        parts.append(f"not comparable: {paper.get('why', 'different setting')}")
    elif est is not None and "diff" in paper:
        pd_ = float(paper["diff"])
        mean, lo, hi, _ = est
        if lo == lo and lo <= pd_ <= hi:
            parts.append("paper's figure inside the CI")
        elif mean == 0:
            parts.append("paper's figure outside the CI (the difference here is exactly 0)")
        else:
            same = (pd_ > 0) == (mean > 0)
            parts.append(f"paper's figure outside the CI ({'same' if same else 'opposite'} sign)")
    return "; ".join(parts)


def rising_met(s: dict[str, Any], rule: dict[str, Any]) -> bool:
    """``preregistered.rising`` ``{"arm", "min_units"}``: in ``tiers[arm]`` ({unit: [value at each
    tier]}), value at tier g+1 > value at tier g in at least ``min_units`` units, at every step g."""
    per = s.get("tiers", {}).get(rule["arm"])
    if not per:
        raise SummaryError(f"{s['_path']}: preregistered.rising needs 'tiers' of arm {rule['arm']!r}")
    n = min(len(v) for v in per.values())
    return all(sum(v[g + 1] > v[g] for v in per.values()) >= int(rule["min_units"]) for g in range(n - 1))


SUCCESS_WORDS = ("convincing", "success", "met")  # the words the rules use for a positive outcome
CHECKS = ("diff", "fact", "count", "all", "rising", "tier_mean", "n_values")
CONDS = {
    "mean_at_least": lambda v, x: v >= x,
    "mean_above": lambda v, x: v > x,
    "mean_below": lambda v, x: v < x,
    "mean_at_most": lambda v, x: v <= x,
    "lower_above": lambda v, x: v > x,
    "lower_at_most": lambda v, x: v <= x,
    "upper_below": lambda v, x: v < x,
    "upper_at_most": lambda v, x: v <= x,
    "at_least": lambda v, x: v >= x,
    "above": lambda v, x: v > x,
    "at_most": lambda v, x: v <= x,
    "below": lambda v, x: v < x,
    "equals": lambda v, x: v == x,
}


def check_rule(pre: dict[str, Any], path: Path) -> None:
    """A pre-registered rule is encoded whole: its clauses (each one written condition), the outcomes
    built from them with the words the rule wrote, and the word for anything else. The partial
    encodings of earlier versions (``min_lower``, ``min_mean``, ``also``, ``rising`` beside the rule)
    are refused: a row's outcome is derived from every clause or not at all."""
    for old in ("min_lower", "min_mean", "also", "rising"):
        if old in pre:
            raise SummaryError(
                f"{path}: preregistered.{old} is a partial encoding; declare 'clauses' and 'outcomes'"
            )
    for f in ("rule", "config", "clauses", "outcomes", "otherwise", "design", "page"):
        if f not in pre:
            raise SummaryError(f"{path}: preregistered needs {f!r}")
    for o in pre["outcomes"]:
        ids = o.get("all", o.get("any"))
        if not o.get("word") or not ids:
            raise SummaryError(f"{path}: each outcome needs 'word' and 'all' or 'any' (clause ids)")
        for c in ids:
            if c not in pre["clauses"]:
                raise SummaryError(f"{path}: outcome {o['word']!r} names clause {c!r}, not in 'clauses'")
    for cid, c in pre["clauses"].items():
        if "text" not in c or "check" not in c:
            raise SummaryError(f"{path}: clause {cid!r} needs 'text' (the rule's words) and 'check'")


def _compare(spec: dict[str, Any], values: dict[str, float], where: str) -> bool:
    """Every condition of ``spec`` on ``values`` (mean, lower, upper of a difference; value of a fact)."""
    conds = [k for k in spec if k in CONDS or k == "within"]
    if not conds:
        raise SummaryError(f"{where}: a check needs a condition ({', '.join(CONDS)} or within)")
    ok = True
    for k in conds:
        if k == "within":  # the whole interval inside [lo, hi]
            lo, hi = spec[k]
            ok = ok and values["lower"] == values["lower"] and values["lower"] >= lo and values["upper"] <= hi
            continue
        v = values[k.split("_")[0]] if k.startswith(("mean_", "lower_", "upper_")) else values["value"]
        if isinstance(v, float) and v != v:
            return False  # no interval, no mean: the condition cannot hold
        ok = ok and bool(CONDS[k](v, spec[k]))
    return ok


def check(s: dict[str, Any], spec: dict[str, Any]) -> bool:
    """One clause's check against the summary's data (see docs/results.md, "Pre-registered rules")."""
    where = f"{s['_path']}"
    if "diff" in spec:
        a, b = spec["diff"]
        base = dict(s)
        if "set" in spec:
            base["arms"] = s["arm_sets"][spec["set"]]
        for arm in (a, b):
            if arm not in base.get("arms", {}):
                raise SummaryError(f"{where}: a check names arm {arm!r}, not in its arms")
        mean, lo, hi, _ = estimate({**base, "compare": [a, b]})
        return _compare(spec, {"mean": mean, "lower": lo, "upper": hi}, where)
    if "fact" in spec:
        if spec["fact"] not in s.get("facts", {}):
            raise SummaryError(f"{where}: a check names fact {spec['fact']!r}, not in 'facts'")
        return _compare(spec, {"value": s["facts"][spec["fact"]]}, where)
    if "count" in spec:
        return sum(check(s, c) for c in spec["count"]) >= int(spec["at_least"])
    if "all" in spec:
        return all(check(s, c) for c in spec["all"])
    if "rising" in spec:
        return rising_met(s, spec["rising"])
    if "tier_mean" in spec:
        arm, tier = spec["tier_mean"]["arm"], int(spec["tier_mean"]["tier"])
        per = s.get("tiers", {}).get(arm)
        if not per:
            raise SummaryError(f"{where}: tier_mean needs 'tiers' of arm {arm!r}")
        k = float(s.get("scale_factor", 1.0))
        return _compare(spec, {"value": k * statistics.mean(v[tier] for v in per.values())}, where)
    if "n_values" in spec:
        n = sum(len(v) for v in s["arms"][spec["n_values"]].values()) * int(spec.get("per_value", 1))
        return _compare(spec, {"value": float(n)}, where)
    raise SummaryError(f"{where}: a check must be one of {', '.join(CHECKS)}")


def outcome(s: dict[str, Any]) -> tuple[str, dict[str, bool]]:
    """The pre-registered outcome word (the first outcome whose clauses hold, else ``otherwise``) and
    every clause's result."""
    pre = s["preregistered"]
    res = {cid: check(s, c["check"]) for cid, c in pre["clauses"].items()}
    for o in pre["outcomes"]:
        ids = o.get("all", o.get("any"))
        if (all if "all" in o else any)(res[c] for c in ids):
            return o["word"], res
    return pre["otherwise"], res


def _design(s: dict[str, Any]) -> str:
    """The design-sensitivity cell, its ``{mean:ARM}``, ``{diff:A-B}`` and ``{fact:NAME}`` filled in."""
    k = float(s.get("scale_factor", 1.0))
    nd = int(s.get("digits", 1))

    def fill(m: re.Match[str]) -> str:
        what, arg = m.group(1), m.group(2)
        if what == "fact":
            v = s["facts"][arg]
            return f"{v:.{nd}f}" if isinstance(v, float) else str(v)
        if what == "mean":
            return f"{k * statistics.mean(float(v) for vs in s['arms'][arg].values() for v in vs):.{nd}f}"
        a, b = arg.split("-", 1)
        mean, lo, hi, n = estimate({**s, "compare": [a, b]})
        return f"{_num(mean, nd)} [{_num(lo, nd)}, {_num(hi, nd)}]"

    return re.sub(r"\{(fact|mean|diff):([^}]+)\}", fill, s["preregistered"]["design"])


def short_figure(s: dict[str, Any]) -> str:
    """The figure cell of the pre-registered table: a − b [95% CI] (n units), per target when the
    rule is per target (``figure_sets``)."""
    nd = int(s.get("digits", 1))
    vu = s.get("value_unit", "")
    if "figure_sets" in s:
        cells = []
        for name in s["figure_sets"]:
            mean, lo, hi, n = estimate({**s, "arms": s["arm_sets"][name]})
            cells.append(
                f"{name.split('@')[0].removeprefix('perera-')} {_num(mean, nd)} [{_num(lo, nd)}, {_num(hi, nd)}]"
            )
        return f"{'; '.join(cells)} ({vu}, @{s['figure_sets'][0].split('@')[1]}, {n} {s['unit']} each)"
    mean, lo, hi, n = estimate(s)
    return re.sub(r" +", " ", f"{_num(mean, nd)} {vu} [{_num(lo, nd)}, {_num(hi, nd)}] ({n} {s['unit']})")


PRE_HEADER = (
    "| experiment | arms (a − b) | unit | figure [95% CI] | pre-registered outcome | could the design detect it? | page |\n"
    "|---|---|---|---|---|---|---|"
)


def prereg_row(s: dict[str, Any]) -> str:
    """One row of the pre-registered table."""
    pre = s["preregistered"]
    word, res = outcome(s)
    counts = ", ".join(
        f"{o['word']} {sum(res[c] for c in o.get('all', o.get('any', [])))}/{len(o.get('all', o.get('any', [])))}"
        + (" (any)" if "any" in o else "")
        for o in pre["outcomes"]
    )
    a, b = s["compare"]
    page = pre["page"]
    link = f"[{Path(page).stem}](../docs/{page})"
    cells = [
        s.get("short", s["experiment"]),
        f"{a} − {b}",
        s["unit"],
        short_figure(s),
        f"**{word}** ({counts})",
        _design(s),
        link,
    ]
    return "| " + " | ".join(_cell(c) for c in cells) + " |"


def paper_lines(items: list[dict[str, Any]], folder: Path = DATA) -> list[str]:
    """One status line per paper: mechanism shown / not shown / not testable here, derived from the
    outcomes of the pre-registered rows that test its mechanism (``preregistered.mechanism``)."""
    papers = json.loads((folder / "papers" / "papers.json").read_text())["papers"]
    by_name = {s["_path"].stem: s for s in items}
    out = []
    for p in papers:
        mech = [s for s in items if s.get("preregistered", {}).get("mechanism") == p["paper"]]
        words = {s["_path"].stem: outcome(s)[0] for s in mech}
        if any(w in SUCCESS_WORDS for w in words.values()):
            status = "mechanism shown"
        elif mech:
            status = "mechanism not shown"
        else:
            status = "not testable here"
        ev = by_name[p["evidence"]]
        word = outcome(ev)[0] if ev.get("preregistered") else "not pre-registered"
        a, b = ev["compare"]
        out.append(
            f"- **{p['paper']}: {status}** ({p['mechanism']}). Best evidence: {p['what']}, "
            f"{a} − {b} {short_figure(ev)}, *{word}*. Caveat: {p['caveat']}"
        )
    return out


def table(folder: Path = DATA) -> str:
    """The headline block: a status line per paper, then the pre-registered experiments."""
    items = summaries(folder)
    pre = [s for s in items if s.get("preregistered")]
    return (
        "\n".join(
            [
                "Which paper mechanisms this project has shown (derived from the pre-registered outcomes below):",
                "",
                *paper_lines(items, folder),
                "",
                PRE_HEADER,
                *(prereg_row(s) for s in pre),
            ]
        )
        + "\n"
    )


def history(folder: Path = DATA) -> str:
    """The history appendix: every row that is not a pre-registered experiment (unverified, smoke,
    reduced, superseded or secondary), in the long format with the paper's figure and a verdict."""
    rows = [s for s in summaries(folder) if not s.get("preregistered")]
    return "\n".join([HEADER, *(row(s) for s in rows)]) + "\n"


def figure(s: dict[str, Any]) -> tuple[str, tuple[float, float, float, int] | None]:
    """The project's figure as a cell, and the estimate behind it (None without a comparison)."""
    kind = s.get("kind", "paired")
    if kind == "stated":
        st = s.get("stated_ci")  # [mean, lo, hi, units] as the lost run's report printed them
        est = (float(st[0]), float(st[1]), float(st[2]), int(st[3])) if st else None
        return f"{s['stated']} (as RESULTS.md states it)", est
    if kind == "packing":
        total, valid = packing_sum(s)
        how = (
            f"valid at tol 1e-9, and at tol 0 with radii shrunk by {s['strict_shrink']:g}"
            if "strict_shrink" in s
            else "valid"
        )
        state = how if valid else "INVALID"
        return f"sum of radii {total:.10f} ({state}; re-evaluated from `{s['packing']}`)", None
    est = estimate(s)
    mean, lo, hi, n = est
    nd = int(s.get("digits", 1))
    a, b = s["compare"]
    cell = f"{a} − {b}: {_num(mean, nd)} {s.get('value_unit', '')}"
    if lo == lo:
        how = "t over" if s["interval"] == "t" else "bootstrap over"
        cell += f" [{_num(lo, nd)}, {_num(hi, nd)}] ({n} {s['unit']}, {how} {s['unit']})"
    else:
        cell += f" ({n} {s['unit']}, no interval)"
    k, pct = float(s.get("scale_factor", 1.0)), "%" if s.get("value_unit") == "pp" else ""
    means = [k * statistics.mean(float(v) for vs in s["arms"][x].values() for v in vs) for x in (a, b)]
    cell += f"; {a} {means[0]:.{nd}f}{pct} vs {b} {means[1]:.{nd}f}{pct}"
    return re.sub(r" +", " ", cell), est


def _cell(x: str) -> str:
    return x.replace("|", "\\|").replace("\n", " ")


def row(s: dict[str, Any]) -> str:
    """One Markdown row."""
    fig, est = figure(s)
    paper = s["paper"]
    pcell = f"{paper['figure']} ({cite(paper['source'])})"
    cmd = f"`{s['command']}`"
    cells = [s["system"], s["experiment"], fig, pcell, verdict(s, est), cmd]
    return "| " + " | ".join(_cell(c) for c in cells) + " |"


def summaries(folder: Path = DATA) -> list[dict[str, Any]]:
    """Every summary in the folder, in the order of their ``order`` field (then file name)."""
    items = [load(p) for p in sorted(folder.glob("*.json"))]
    return sorted(items, key=lambda s: (float(s.get("order", 99)), s["_path"].name))


SBEGIN, SEND = "<!-- summary:begin -->", "<!-- summary:end -->"
DOCS = ROOT / "docs"
PAPERS = {  # the write-ups' file names in a source cell, as the papers are cited in docs/papers.md
    "rsi-anything.md": "RSI-Anything (arXiv:2610.13912)",
    "dream-rsi.md": "Dream-RSI (Zheng et al.)",
    "discoveryrsi.md": "DiscoveryRSI (arXiv:2610.23839)",
    "rsiagent.md": "RSIAgent (arXiv:2609.15364)",
}


def cite(source: str) -> str:
    """A paper source cell with the write-up's file name replaced by the paper's title and arXiv id."""
    for k, v in PAPERS.items():
        source = source.replace(k, v)
    return source


def page_of(s: dict[str, Any]) -> str | None:
    """The results page (relative to docs/) a summary belongs to."""
    return (s.get("preregistered") or {}).get("page") or s.get("page")


def page_block(rows: list[dict[str, Any]]) -> str:
    """The recomputed summary at the top of a results page: for a pre-registered row its question,
    the paper's claim, design, every clause of the rule with its result, figure, outcome and commands;
    other rows in the long history format."""
    out: list[str] = []
    for s in rows:
        pre = s.get("preregistered")
        paper = s["paper"]
        if not pre:
            continue
        word, res = outcome(s)
        a, b = s["compare"]
        out += [
            f"**Question.** {s['experiment']}",
            "",
            f"**The paper's claim.** {paper['figure']} ({cite(paper['source'])})."
            + ("" if paper.get("comparable") else f" Not comparable: {paper.get('why', '')}."),
            "",
            f"**Design.** `{pre['config']}` (its header is the pre-registration); unit: {s['unit']}; "
            f"{'95% bootstrap over ' + s['unit'] if s['interval'] == 'bootstrap' else 'Student-t 95% over ' + s['unit']}.",
            "",
            f"**Pre-registered rule.** {pre['rule']}",
            "",
            "| clause (the rule's words) | holds |",
            "|---|---|",
            *(f"| {_cell(c['text'])} | {'yes' if res[cid] else 'no'} |" for cid, c in pre["clauses"].items()),
            "",
            f"**Figure.** {a} − {b}: {short_figure(s)}.",
            "",
            f"**Outcome (the rule's word).** **{word}**. Could the design detect the effect? {_design(s)}.",
            "",
            "**Commands.** The run: `"
            + s["command"]
            + "`. The compact values: "
            + s.get("values_from", "")
            + ". This summary and the headline: `python benchmarks/headline.py --write`.",
            "",
        ]
    hist = [s for s in rows if not s.get("preregistered")]
    if hist:
        out += [
            "Further rows of this experiment (the history appendix's format):",
            "",
            HEADER,
            *(row(s) for s in hist),
            "",
        ]
    return "\n".join(out).rstrip("\n") + "\n"


def pages(folder: Path = DATA) -> dict[Path, str]:
    """{results page: its summary block} for every page a summary names."""
    by: dict[str, list[dict[str, Any]]] = {}
    for s in summaries(folder):
        if page_of(s):
            by.setdefault(str(page_of(s)), []).append(s)
    return {DOCS / p: page_block(rows) for p, rows in by.items()}


def block(text: str, begin: str = BEGIN, end: str = END) -> str:
    """The text between two markers of RESULTS.md (without them)."""
    if begin not in text or end not in text:
        raise SummaryError(f"{RESULTS}: markers {begin} / {end} not found")
    return text.split(begin, 1)[1].split(end, 1)[0].strip("\n") + "\n"


def _replace(text: str, begin: str, end: str, body: str) -> str:
    head, rest = text.split(begin, 1)
    _, tail = rest.split(end, 1)
    return f"{head}{begin}\n{body}{end}{tail}"


def write(path: Path = RESULTS) -> bool:
    """Replace both blocks (headline, history) with the command's output; True when the file changed."""
    text = path.read_text()
    new = _replace(_replace(text, BEGIN, END, table()), HBEGIN, HEND, history())
    changed = new != text
    if changed:
        path.write_text(new)
    for page, body in pages().items():
        old = page.read_text()
        upd = _replace(old, SBEGIN, SEND, body)
        if upd != old:
            page.write_text(upd)
            changed = True
    return changed


def matches(path: Path = RESULTS) -> bool:
    """Both blocks of RESULTS.md equal the command's output."""
    text = path.read_text()
    same = block(text) == table() and block(text, HBEGIN, HEND) == history()
    return same and all(block(p.read_text(), SBEGIN, SEND) == body for p, body in pages().items())


def summarize_code_repair(run_dir: Path, a: str, b: str) -> dict[str, Any]:
    """Per-task hidden all-pass (1/0, one value per seed) of arms ``a`` and ``b`` of a code-repair
    experiment directory, read with the project's report functions (tasks whose reference fails its
    own tests are left out, as the report leaves them out)."""
    from rsi_workbench.experiments.code_repair.report import RANKING_TERMS
    from rsi_workbench.protocol.report import summarize_run
    from rsi_workbench.records import Run

    started = next((e.payload for e in Run.open(run_dir).events("experiment_started")), {})
    failing = set(started.get("failing_reference", []))
    arms: dict[str, dict[str, list[float]]] = {a: {}, b: {}}
    for arm in (a, b):
        for p in sorted(
            (run_dir / "runs").glob(f"{arm}-seed*"), key=lambda q: int(q.name.rsplit("seed", 1)[1])
        ):
            fin = summarize_run(p, ranking_terms=RANKING_TERMS).final
            for t in sorted(fin):
                if t not in failing:
                    arms[arm].setdefault(t, []).append(float(bool(fin[t]["hidden_all_pass"])))
        if not arms[arm]:
            raise SummaryError(f"{run_dir}: no finished run of arm {arm!r} under runs/")
    return {"unit": "tasks", "interval": "bootstrap", "scale_factor": 100.0, "value_unit": "pp", "arms": arms}


def summarize_reactions(run_dir: Path, a: str, b: str, grid: str, at: int) -> dict[str, Any]:
    """Per-seed best observed yield after ``at`` experiments of arms ``a`` and ``b`` on one grid of a
    reactions experiment (the seed is the randomised unit: each seed draws the initial design)."""
    from rsi_workbench.experiments.reactions.report import runs_frame

    df = runs_frame(run_dir)
    df = df[df.grid == grid]
    arms: dict[str, dict[str, list[float]]] = {}
    for arm in (a, b):
        d = df[df.method == arm]
        if d.empty:
            raise SummaryError(f"{run_dir}: no run of method {arm!r} on grid {grid!r}")
        arms[arm] = {str(int(r.seed)): [float(r.best_curve[at - 1])] for r in d.itertuples()}
    return {
        "unit": "seeds",
        "interval": "bootstrap",
        "scale_factor": 1.0,
        "value_unit": "yield points",
        "digits": 2,
        "arms": arms,
    }


def summarize_dreaming(run_dir: Path, a: str, b: str, at: int) -> dict[str, Any]:
    """Per-seed best valid score within the first ``at`` agent calls of arms ``a`` and ``b`` of a
    dreaming experiment (``best_at``, the report's figure; the seed is the randomised unit)."""
    from rsi_workbench.experiments.dreaming.results import best_at, load_frames

    nodes = load_frames(run_dir, "tree_node")
    if nodes.empty:
        raise SummaryError(f"{run_dir}: no tree_node events under arms/")
    arms: dict[str, dict[str, list[float]]] = {}
    for arm in (a, b):
        d = nodes[nodes["arm"] == arm]
        if d.empty:
            raise SummaryError(f"{run_dir}: no node of arm {arm!r}")
        got = {str(int(sd)): best_at(d[d["seed"] == sd], at) for sd in sorted(d["seed"].unique())}
        arms[arm] = {sd: [float(v)] for sd, v in got.items() if v is not None}
    return {
        "unit": "seeds",
        "interval": "t",
        "scale_factor": 1.0,
        "value_unit": "",
        "digits": 5,
        "arms": arms,
    }


def summarize_gui(run_dir: Path, a: str, b: str, tier: int) -> dict[str, Any]:
    """Per-seed success rate at ``tier`` of methods ``a`` and ``b`` of a GUI experiment: the share of
    the retained pair's test episodes (infrastructure failures left out) that succeeded."""
    from rsi_workbench.records import Run

    run = Run.open(run_dir)
    by_pair: dict[str, list[float]] = {}
    for e in run.events("test_episode"):
        if not e.payload["infra_failure"]:
            by_pair.setdefault(str(e.payload["pair"]), []).append(float(bool(e.payload["success"])))
    arms: dict[str, dict[str, list[float]]] = {a: {}, b: {}}
    tiers: dict[str, dict[str, dict[int, float]]] = {a: {}, b: {}}  # every tier, for a rising rule
    for e in run.events("tier"):
        p = e.payload
        if p["method"] in arms and by_pair.get(str(p["pair"])):
            eps = by_pair[str(p["pair"])]
            tiers[p["method"]].setdefault(str(int(p["seed"])), {})[int(p["tier"])] = sum(eps) / len(eps)
            if int(p["tier"]) == tier:
                arms[p["method"]][str(int(p["seed"]))] = [sum(eps) / len(eps)]
    for arm in (a, b):
        if not arms[arm]:
            raise SummaryError(f"{run_dir}: no tested tier {tier} of method {arm!r}")
    per_tier = {m: {u: [v[t] for t in sorted(v)] for u, v in d.items()} for m, d in tiers.items()}
    return {
        "unit": "seeds",
        "interval": "t",
        "scale_factor": 100.0,
        "value_unit": "pp",
        "arms": arms,
        "tiers": per_tier,
    }


def summarize_discovery(run_dir: Path, a: str, b: str) -> dict[str, Any]:
    """Accept_dev value of the proposed Lead θ_k⁺ (arm ``a``, e.g. ``theta_plus``) and the incumbent
    θ_k (arm ``b``, e.g. ``theta``), both with the incumbent harness ψ_k, per closed round of a
    ``discovery_rounds`` experiment (the round is the unit: one dev campaign each)."""
    from rsi_workbench.domains.tabular.improve import acceptance_table
    from rsi_workbench.records import Run

    run = Run.open(run_dir)
    arms: dict[str, dict[str, list[float]]] = {a: {}, b: {}}
    for acc in run.events("rounds_accepted"):
        df, _ = acceptance_table(run_dir / acc.payload["path"])
        inc = df[df["psi"] == df["psi"].iloc[0]]  # the incumbent harness psi_k: theta_k first, then theta_k+
        if len(inc) < 2:
            raise SummaryError(f"{run_dir}: round {acc.payload['round']} has no θ_k⁺ under ψ_k")
        k = f"R{int(acc.payload['round'])}"
        arms[b][k] = [float(inc["value"].iloc[0])]
        arms[a][k] = [float(inc["value"].iloc[1])]
    if not arms[a]:
        raise SummaryError(f"{run_dir}: no rounds_accepted event (no closed round)")
    return {
        "unit": "rounds",
        "interval": "t",
        "scale_factor": 1.0,
        "value_unit": "",
        "digits": 3,
        "arms": arms,
    }


def summarize_rsiagent(run_dir: Path, a: str, b: str) -> dict[str, Any]:
    """Frozen-evaluation Binary (1 when s_i = 1) per page of ablations ``a`` and ``b`` of an
    ``rsiagent`` experiment, one value per seed and target (the page is the unit: one target each)."""
    from rsi_workbench.experiments.rsiagent.report import arms as finished_arms
    from rsi_workbench.experiments.rsiagent.report import target_sets

    out: dict[str, dict[str, list[float]]] = {a: {}, b: {}}
    for arm in finished_arms(run_dir):
        if arm["ablation"] not in out:
            continue
        for page, ids in target_sets(arm).items():
            if page != "all":
                vals = [float(float(arm["scores"][i]) == 1.0) for i in ids if i in arm["scores"]]
                out[arm["ablation"]].setdefault(page, []).extend(vals)
    for x in (a, b):
        if not out[x]:
            raise SummaryError(f"{run_dir}: no finished arm of ablation {x!r}")
    return {"unit": "pages", "interval": "bootstrap", "scale_factor": 100.0, "value_unit": "pp", "arms": out}


def summarize_cli(args: argparse.Namespace) -> int:
    """``--summarize RUN_DIR``: write the compact summary the table reads (fields not derivable from
    the run directory come from the flags; edit ``paper`` afterwards)."""
    run_dir = Path(args.summarize)
    if args.kind == "code_repair":
        body = summarize_code_repair(run_dir, args.a, args.b)
    elif args.kind == "rsiagent":
        body = summarize_rsiagent(run_dir, args.a, args.b)
    elif args.kind == "discovery":
        body = summarize_discovery(run_dir, args.a, args.b)
    elif args.kind == "gui":
        body = summarize_gui(run_dir, args.a, args.b, args.at)
    elif args.kind == "dreaming":
        body = summarize_dreaming(run_dir, args.a, args.b, args.at)
    else:
        body = summarize_reactions(run_dir, args.a, args.b, args.grid, args.at)
    man = json.loads((run_dir / "manifest.json").read_text()) if (run_dir / "manifest.json").exists() else {}
    out = {
        "system": args.system,
        "experiment": args.experiment or run_dir.name,
        "status": "verified",
        "scale": args.scale,
        "config": args.config,
        "command": args.command or f"rsi-workbench run {args.config}",
        "commit": args.commit,
        "date": str(man.get("created", ""))[:10],
        "values_from": f"headline.py --summarize {run_dir} --kind {args.kind}",
        "kind": "paired",
        "compare": [args.a, args.b],
        **body,
        "paper": {"figure": "(fill in)", "source": "(fill in)", "comparable": False, "why": "(fill in)"},
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {args.out}: {len(body['arms'][args.a])} {body['unit']}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """CLI: print, --write, --check, or --summarize a run directory."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--write", action="store_true", help="rewrite the headline block in RESULTS.md")
    ap.add_argument("--check", action="store_true", help="exit 1 if RESULTS.md's block differs")
    ap.add_argument(
        "--summarize", metavar="RUN_DIR", help="write a compact summary of an experiment directory"
    )
    ap.add_argument(
        "--kind",
        choices=["code_repair", "reactions", "dreaming", "gui", "discovery", "rsiagent"],
        default="code_repair",
    )
    ap.add_argument("--a", default="world_adaptive", help="arm a of the difference a − b")
    ap.add_argument("--b", default="static_verifier", help="arm b of the difference a − b")
    ap.add_argument("--grid", default="perera2018-suzuki", help="reactions: the grid")
    ap.add_argument(
        "--at",
        type=int,
        default=40,
        help="reactions: best yield after this many experiments; dreaming: best score within this many calls; gui: the tier",
    )
    ap.add_argument("--out", help="the summary file to write (benchmarks/data/headline/NAME.json)")
    ap.add_argument("--system", default="RSI-Anything")
    ap.add_argument("--experiment", default="")
    ap.add_argument("--scale", choices=["headline", "reduced", "smoke"], default="smoke")
    ap.add_argument("--config", default="")
    ap.add_argument("--command", default="")
    ap.add_argument("--commit", default="")
    args = ap.parse_args(argv)
    if args.summarize:
        if not args.out:
            ap.error("--summarize needs --out")
        return summarize_cli(args)
    if args.write:
        print("RESULTS.md " + ("rewritten" if write() else "unchanged"))
        return 0
    if args.check:
        same = matches()
        print(
            "RESULTS.md (headline, history) and the results pages' summaries "
            + ("match" if same else "DIFFER from")
            + " the command's output"
        )
        return 0 if same else 1
    sys.stdout.write(table())
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    raise SystemExit(main())
