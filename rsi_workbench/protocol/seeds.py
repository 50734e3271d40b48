"""Stable seeds: every random choice of the protocol derives from named parts (seed, purpose, cycle,
task), so it is the same on every machine, in every method that shares the parts, and after a resume.
"""

from __future__ import annotations

import hashlib
import random


def derive_seed(*parts: object) -> int:
    """A stable 63-bit seed from any parts (same on every machine and every resume)."""
    h = hashlib.sha256("\x1f".join(map(str, parts)).encode()).digest()
    return int.from_bytes(h[:8], "big") >> 1


def derive_rng(*parts: object) -> random.Random:
    return random.Random(derive_seed(*parts))
