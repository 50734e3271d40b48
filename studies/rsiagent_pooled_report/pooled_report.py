"""``python studies/rsiagent_pooled_report/pooled_report.py DIR [DIR ...]``: one report pooled over
experiment directories of the same config apart from seeds (e.g. seeds run as separate processes)."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from rsi_workbench.experiments.rsiagent.report import report


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args:
        print(__doc__.splitlines()[0].split(":")[0].strip("`"), file=sys.stderr)
        return 2
    print(report(args))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
