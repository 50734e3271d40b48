"""``python -m rsi_workbench`` — the same command line as ``rsi-workbench``."""

import sys

from rsi_workbench.cli import main

sys.exit(main())
