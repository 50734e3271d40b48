"""Normalised digests of the smoke configs' records: moving code between rooms must not change what a
run records (the guard of the house layout; ``tests/test_record_digests.py``).

A digest hashes the events of every run under an experiment directory (sorted by relative path, compacted logs
included), each
event without its ``time``, without the host's sandbox description (``sandbox`` keys) and without
wall-clock fields (keys ending in ``_s``, ``runtime``, ``latency``; a child run's fingerprint hash,
which covers its raw log's times; the module a built-in component's class is imported from, kept
as the class name): what a run decided and observed,
not when or on which host. ``python tests/record_digests.py --write`` records today's digests in
``tests/data/record_digests.json`` (only when a change is *meant* to alter records).
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DIGESTS = HERE / "data" / "record_digests.json"
WALL = ("runtime", "latency")
# where a built-in component's class lives is provenance, not a decision: ``rsi_workbench.a.b:Cls`` -> ``Cls``
WHERE = re.compile(r"^rsi_workbench(\.\w+)+:(?P<name>[\w.]+)$")


def _wall(key: str) -> bool:
    return key == "time" or key == "sandbox" or key.endswith("_s") or key in WALL


def normalise(obj: Any) -> Any:
    if isinstance(obj, dict):
        if {"path", "events", "sha256"} <= obj.keys():  # a child run's fingerprint hashes its raw log (times)
            obj = {k: v for k, v in obj.items() if k != "sha256"}
        return {k: normalise(v) for k, v in obj.items() if not _wall(k)}
    if isinstance(obj, list):
        return [normalise(v) for v in obj]
    if isinstance(obj, str) and (m := WHERE.match(obj)):
        return m["name"]
    return obj


def digest(exp_dir: Path) -> str:
    from rsi_workbench.records import Run

    h = hashlib.sha256()
    runs = sorted(
        {m.parent for m in exp_dir.rglob("manifest.json")}, key=lambda p: p.relative_to(exp_dir).as_posix()
    )
    for run in runs:  # plain or compacted logs alike, through the records API
        h.update(run.relative_to(exp_dir).as_posix().encode() + b"\n")
        for e in Run.open(run).events():
            rec = {"seq": e.seq, "kind": e.kind, "cycle": e.cycle, "payload": normalise(e.payload)}
            h.update(json.dumps(rec, sort_keys=True).encode() + b"\n")
    return h.hexdigest()


def reactions_smoke(out: Path) -> Path:
    import yaml

    from rsi_workbench.config import validate_config
    from rsi_workbench.experiments.reactions import experiment

    cfg = yaml.safe_load((HERE.parent / "configs" / "reactions" / "smoke.yaml").read_text())
    return Path(experiment.run_experiment(validate_config(cfg, experiment.Config, source="smoke.yaml"), out))


def current() -> dict[str, str]:
    import tempfile

    sys.path.insert(0, str(HERE / "ui"))
    import workbench_runs

    with tempfile.TemporaryDirectory() as tmp:
        return {
            "code_repair/tiny_test (random_k, world_adaptive)": digest(
                workbench_runs.code_repair_experiment()
            ),
            "dreaming/smoke": digest(workbench_runs.dreaming_experiment()),
            "reactions/smoke": digest(reactions_smoke(Path(tmp) / "reactions")),
        }


if __name__ == "__main__":
    got = current()
    print(json.dumps(got, indent=1))
    if "--write" in sys.argv:
        DIGESTS.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n")
        print(f"wrote {DIGESTS}")
