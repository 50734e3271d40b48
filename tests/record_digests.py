"""Normalised digests of the smoke configs' records: moving code between rooms must not change what a
run records (the guard of the house layout; ``tests/test_record_digests.py``).

A digest hashes the events of every run under an experiment directory (sorted by relative path, compacted logs
included), absolute host paths kept as their file names, each
event without its ``time``, without the host's sandbox description (``sandbox`` keys) and without
wall-clock fields (keys ending in ``_s``, ``runtime``, ``latency``; a child run's fingerprint hash,
which covers its raw log's times; the module a built-in component's class is imported from, kept
as the class name): what a run decided and observed,
not when or on which host. The content hashes of artifacts and snapshots are left out too (a
recorded tree's nodes carry their seconds). ``python tests/record_digests.py --write`` records today's digests in
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
WALL = ("runtime", "latency", "seconds", "pid")
# content hashes of artifacts and snapshots, which hold wall-clock fields of their own (a tree's node times)
CONTENT = ("artifact", "snapshot")
# where a built-in component's class lives is provenance, not a decision: ``rsi_workbench.a.b:Cls`` -> ``Cls``
WHERE = re.compile(r"^rsi_workbench(\.\w+)+:(?P<name>[\w.]+)$")


def _wall(key: str) -> bool:
    return key in ("time", "sandbox") or key.endswith("_s") or key in WALL or key in CONTENT


def normalise(obj: Any) -> Any:
    if isinstance(obj, dict):
        if {"path", "events", "sha256"} <= obj.keys():  # a child run's fingerprint hashes its raw log (times)
            obj = {k: v for k, v in obj.items() if k != "sha256"}
        return {k: normalise(v) for k, v in obj.items() if not _wall(k)}
    if isinstance(obj, list):
        return [normalise(v) for v in obj]
    if isinstance(obj, str) and (m := WHERE.match(obj)):
        return m["name"]
    if isinstance(obj, str) and obj.startswith("/"):  # a host path (the dataset mirror, a tmp dir): its name
        return obj.rsplit("/", 1)[-1]
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


SMOKES = {  # name -> (config, overrides)
    # random_k only: the tiny world model's training is not bitwise reproducible across processes
    # (its losses differ in the 4th digit between two runs of the same code), so the adaptive arm's
    # records cannot guard a move
    "code_repair/tiny_test (random_k)": ("configs/code_repair/tiny_test.yaml", {"methods": ["random_k"]}),
    "dreaming/smoke": ("configs/dreaming/smoke.yaml", {}),
    "reactions/smoke": ("configs/reactions/smoke.yaml", {}),
}


def run_smoke(name: str, out: Path) -> Path:
    """``rsi-workbench run`` of one smoke config in a fresh process with a fixed hash seed and one
    thread per numeric library (the
    code-repair world model's training order follows str hashing: with the hash seed free, two runs
    of the same code differ in the last digits of their losses)."""
    import os
    import subprocess

    import yaml

    config, over = SMOKES[name]
    cfg = {**yaml.safe_load((HERE.parent / config).read_text()), **over}
    cfg_file = out.parent / f"{out.name}.yaml"
    cfg_file.write_text(yaml.safe_dump(cfg))
    # a fixed hash seed and one thread for every numeric library: the environment a test worker
    # happens to carry (other tests, the load) must not reach the run's floats
    env = {k: v for k, v in os.environ.items() if not k.endswith("_NUM_THREADS")}
    env.update(PYTHONHASHSEED="0", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    subprocess.run(
        [sys.executable, "-m", "rsi_workbench", "run", str(cfg_file), "--out", str(out)],
        check=True,
        env=env,
        cwd=out.parent,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    return out


def current() -> dict[str, str]:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        return {name: digest(run_smoke(name, Path(tmp) / f"run{i}")) for i, name in enumerate(SMOKES)}


if __name__ == "__main__":
    got = current()
    print(json.dumps(got, indent=1))
    if "--write" in sys.argv:
        DIGESTS.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n")
        print(f"wrote {DIGESTS}")
