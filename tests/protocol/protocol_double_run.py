"""Drive the engine over the test-double domain (used by the SIGKILL-and-resume test as a subprocess)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from protocol_doubles import make_test_double_spec  # noqa: E402

from rsi_workbench.protocol.loop import Loop, ProtocolSettings  # noqa: E402
from rsi_workbench.records import Run  # noqa: E402

SETTINGS = ProtocolSettings(
    adaptation={"enabled": True, "min_examples": 10},
    reliability={"min_predictions": 10},
    policy_update={"enabled": True},
)


def run_double(path: str | Path, *, seed: int = 0, n: int | None = None, step: bool = False) -> Path:
    path = Path(path)
    run = Run.create(path, {"test_double": True, "seed": seed}, kind="test_double", exist_ok=True)
    with run:
        loop = Loop.open(make_test_double_spec(), run, SETTINGS, seed=seed)
        if step:
            while not loop.finished:
                loop.step()
        else:
            loop.run(n)
    return path


if __name__ == "__main__":
    run_double(sys.argv[1])
