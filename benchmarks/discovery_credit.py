"""Moved to studies/discovery_credit/discovery_credit.py; kept for the commands in frozen config headers."""

import runpy
import sys
from pathlib import Path

study = Path(__file__).resolve().parents[1] / "studies" / "discovery_credit" / "discovery_credit.py"
if not study.is_file():
    sys.exit(f"{study} is missing: run from a checkout of the repository (studies/ is not in the wheel)")
sys.path.insert(0, str(study.parent))
runpy.run_path(str(study), run_name="__main__")
