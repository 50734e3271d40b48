"""Moving code between rooms (engines, domains, experiments) or restructuring the loop changes no
record: the smoke configs' normalised records equal the digests taken before the house moved
(``tests/record_digests.py`` says what is normalised away and how to re-take them)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from record_digests import DIGESTS, SMOKES, digest, run_smoke


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SMOKES))
def test_smoke_records_equal_the_digest_taken_before_the_move(name: str, tmp_path: Path) -> None:
    expected = json.loads(DIGESTS.read_text())[name]
    assert digest(run_smoke(name, tmp_path / "run")) == expected, (
        f"{name}: the records changed; if that is meant, re-take the digests "
        "(python tests/record_digests.py --write) and say why in the commit"
    )
