"""Where the bytes of run directories go: files, disk blocks and apparent bytes per kind of file.

    python benchmarks/run_storage.py DIR [DIR ...]

Kinds: the event log (``events.jsonl``, compacted ``events.jsonl.gz``), artifact blobs (loose
``artifacts/<sha>``, compacted ``artifacts/<sha>.z``), their metadata (``<sha>.json`` sidecars,
compacted ``artifacts/index.json``), ``config.json``/``manifest.json``, other files and folders.
A file with several hard links is counted once, as ``du`` does; the totals equal
``du -s --block-size=1 DIR`` and ``du -sb DIR`` (one DIR at a time).
"""

from __future__ import annotations

import os
import re
import sys
from collections import defaultdict

_SHA = re.compile(r"^[0-9a-f]{64}")


def kind_of(name: str) -> str:
    if name.startswith("events.jsonl"):
        return name
    if _SHA.match(name):
        rest = name[64:]
        return {"": "artifact blob (loose)", ".z": "artifact blob (compacted .z)"}.get(
            rest, f"artifact {rest}"
        )
    if name == "index.json":
        return "artifact index.json (compacted)"
    return name if name in ("config.json", "manifest.json", "report.txt") else "other files"


def storage(root: str) -> dict[str, list[int]]:
    """kind -> [files, disk bytes, apparent bytes], hard links counted once."""
    seen: set[tuple[int, int]] = set()
    out: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    links = 0
    for dirpath, _, files in os.walk(root):
        st = os.lstat(dirpath)
        seen.add((st.st_dev, st.st_ino))
        out["folders"][0] += 1
        out["folders"][1] += st.st_blocks * 512
        out["folders"][2] += st.st_size
        for f in files:
            st = os.lstat(os.path.join(dirpath, f))
            if (st.st_dev, st.st_ino) in seen:
                links += 1
                continue
            seen.add((st.st_dev, st.st_ino))
            row = out[kind_of(f)]
            row[0] += 1
            row[1] += st.st_blocks * 512
            row[2] += st.st_size
    out["(extra hard links, not counted again)"] = [links, 0, 0]
    return dict(out)


def main(argv: list[str]) -> int:
    for root in argv:
        rows = storage(root)
        print(f"\n{root}\n| kind | files | on disk (bytes) | apparent (bytes) |\n|---|---|---|---|")
        for k, (n, disk, app) in sorted(rows.items(), key=lambda kv: -kv[1][1]):
            print(f"| {k} | {n:,} | {disk:,} | {app:,} |")
        tot = [sum(v[i] for v in rows.values()) for i in (1, 2)]
        print(f"| **total** | | {tot[0]:,} | {tot[1]:,} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
