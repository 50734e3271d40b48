"""Outcomes of the shifted-prior pilot (``configs/code_repair/shifted_pilot.yaml``): the compact
per-(task, seed, method) outcomes of :mod:`studies.code_repair_fixable.outcomes`, the pilot's
paired table, and per adaptive run the adaptations triggered and retained and the units each gate
decision saw (from the run's own events):

    python -m studies.code_repair_shifted_pilot.outcomes EXP_DIR --save FILE   # outcomes + decisions
    python -m studies.code_repair_shifted_pilot.outcomes --table FILE
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from studies.code_repair_fixable.outcomes import collect, table

COMPARISONS = (
    ("features_oracle", "features_fixed"),  # the sensitivity bound: what adaptation could win
    ("features_adaptive", "features_fixed"),
    ("coder_prior", "random_k"),
    ("features_fixed", "random_k"),
    ("features_oracle", "coder_prior"),
    ("features_adaptive", "coder_prior"),
)


def decisions(exp_dir: str | Path) -> dict[str, Any]:
    """Per run with a predictor: reliability verdicts, adaptations triggered and retained, and each
    gate decision's units (predictor gate: ``n_units``; pair gate: ``current.n_units``)."""
    from rsi_workbench.experiments.code_repair.report import _runs
    from rsi_workbench.protocol.loop import effective_events
    from rsi_workbench.records import Run

    out: dict[str, Any] = {}
    for name, path in sorted(_runs(Path(exp_dir)).items()):
        evs = effective_events(Run.open(path))
        rel = [e.payload["verdict"] for e in evs if e.kind == "reliability"]
        if not rel:
            continue
        trig = [e for e in evs if e.kind == "adaptation_trigger" and e.payload["triggered"]]
        gates = [
            {
                "cycle": e.cycle,
                "gate": e.payload["gate"],
                "passed": e.payload["passed"],
                "units": int(e.payload["current"].get("n_units", e.payload["n_units"]))
                if e.payload["gate"] == "pair"
                else int(e.payload["n_units"]),
            }
            for e in evs
            if e.kind == "gate" and not e.payload.get("skipped")
        ]
        kept = [
            e
            for e in evs
            if e.kind == "retain"
            and e.payload["proposed_predictor_version"]
            and e.payload["predictor_version"] == e.payload["proposed_predictor_version"]
        ]
        out[name] = {"reliability": rel, "triggered": len(trig), "retained": len(kept), "gates": gates}
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("exp_dir", nargs="?")
    ap.add_argument("--save")
    ap.add_argument("--table")
    a = ap.parse_args(argv)
    if a.exp_dir:
        data = {**collect(a.exp_dir), "decisions": decisions(a.exp_dir)}
        if a.save:
            Path(a.save).write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    elif a.table:
        data = json.loads(Path(a.table).read_text())
    else:
        ap.error("give EXP_DIR or --table FILE")
    print(table(data, [c for c in COMPARISONS if all(m in data["hidden_all_pass"] for m in c)]))
    for name, d in sorted(data.get("decisions", {}).items()):
        units = [g["units"] for g in d["gates"]]
        print(
            f"{name}: reliability {d['reliability']}; adaptations triggered {d['triggered']}, retained "
            f"{d['retained']}; gate decisions {len(units)} seeing {units} units"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
