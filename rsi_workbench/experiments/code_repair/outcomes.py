"""Forwards ``python -m rsi_workbench.experiments.code_repair.outcomes`` (named by the frozen
configs/code_repair/fixable.yaml) to the study script ``studies/code_repair_fixable/outcomes.py``."""

import runpy
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[3] / "studies" / "code_repair_fixable" / "outcomes.py"
if __name__ == "__main__":
    if not SCRIPT.is_file():
        sys.exit(
            f"{SCRIPT} is absent: run this study from a checkout of the repository (studies/ is not installed)"
        )
    sys.path.insert(0, str(SCRIPT.parents[2]))  # the repository root: the study imports studies.*
    runpy.run_path(str(SCRIPT), run_name="__main__")
