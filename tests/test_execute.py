"""The executor seam: serial and process-pool backends return the same results to the driver."""

from __future__ import annotations

import pytest

from rsi_workbench.execute import ProcessExecutor, SerialExecutor, make_executor


def square(x: int) -> int:
    return x * x


def boom(x: int) -> int:
    raise ValueError(f"bad {x}")


@pytest.mark.parametrize("kind,workers", [("serial", None), ("process", 2)])
def test_map_and_submit(kind: str, workers: int | None) -> None:
    with make_executor(kind, workers) as ex:  # type: ignore[arg-type]
        assert list(ex.map(square, range(6))) == [0, 1, 4, 9, 16, 25]
        assert ex.submit(square, 7).result() == 49
        with pytest.raises(ValueError, match="bad 3"):
            ex.submit(boom, 3).result()


def test_make_executor_kinds() -> None:
    assert isinstance(make_executor("serial"), SerialExecutor)
    assert isinstance(make_executor("process", 1), SerialExecutor)
    ex = make_executor("process", 2)
    assert isinstance(ex, ProcessExecutor) and ex.workers == 2
    ex.shutdown()
    with pytest.raises(ValueError, match="allowed"):
        make_executor("gpu")  # type: ignore[arg-type]
