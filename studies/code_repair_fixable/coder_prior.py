"""The coder_prior control beside the frozen fixable comparison (issue 45 item 5):

    python -m studies.code_repair_fixable.coder_prior \
        benchmarks/data/code_repair_fixable/coder_prior_outcomes.json \
        [--frozen benchmarks/data/code_repair_fixable/outcomes.json]

The first file is the outcomes of ``configs/code_repair/fixable_coder_prior.yaml`` (a secondary
run: random_k and coder_prior on fixable.yaml's tasks and protocol); the frozen run's outcomes
join it only when both ran identical random_k outcomes (same tasks, seeds and proposer, so pairing
across the two files is pairing within one setting). Prints each arm's hidden all-pass and the
paired differences over (task, seed) with task-clustered 95% intervals
(``studies.code_repair_fixable.outcomes.table``).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from studies.code_repair_fixable.outcomes import table

FROZEN = Path(__file__).resolve().parents[2] / "benchmarks" / "data" / "code_repair_fixable" / "outcomes.json"


def merge(secondary: Mapping[str, Any], frozen: Mapping[str, Any]) -> dict[str, Any]:
    """The frozen run's arms plus the secondary run's coder_prior; refused unless random_k agrees."""
    if secondary["hidden_all_pass"].get("random_k") != frozen["hidden_all_pass"].get("random_k"):
        raise ValueError(
            "the secondary run's random_k outcomes differ from the frozen run's: not one setting"
        )
    arm = "coder_prior"
    return {
        "methods": [*frozen["methods"], arm],
        "seeds": {**frozen["seeds"], arm: secondary["seeds"][arm]},
        "hidden_all_pass": {**frozen["hidden_all_pass"], arm: secondary["hidden_all_pass"][arm]},
        "online_calls": {**frozen["online_calls"], arm: secondary["online_calls"][arm]},
    }


COMPARISONS = (
    ("coder_prior", "random_k"),
    ("lm_adaptive", "coder_prior"),
    ("lm_fixed", "coder_prior"),
    ("static_verifier", "coder_prior"),
    ("world_fixed", "coder_prior"),
    ("lm_adaptive", "random_k"),
)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("outcomes", help="fixable_coder_prior.yaml's outcomes JSON")
    ap.add_argument("--frozen", default=str(FROZEN), help="fixable.yaml's committed outcomes JSON")
    args = ap.parse_args(argv)
    data = merge(json.loads(Path(args.outcomes).read_text()), json.loads(Path(args.frozen).read_text()))
    print(table(data, COMPARISONS))
    return 0


if __name__ == "__main__":
    sys.exit(main())
