"""Moved to ``studies/rsiagent_pooled_report/pooled_report.py``; this forwards to it (from a repository checkout)."""

import runpy
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[3] / "studies" / "rsiagent_pooled_report" / "pooled_report.py"

if __name__ == "__main__":
    if not SCRIPT.is_file():
        sys.exit(f"{SCRIPT} is missing: studies/ is in the repository, not the wheel; run from a checkout")
    sys.path.insert(0, str(SCRIPT.parents[2]))
    runpy.run_path(str(SCRIPT), run_name="__main__")
