"""The shingle audit: no memory file may share an n-word shingle with the host-only texts.

Host-only texts (declared by the environment: e.g. the target seeds' exact utterances and the hidden
checks) must never leak into memory. A candidate file that shares any run of ``n`` consecutive
words with them is silently rejected: the canonical version of that file is kept (or the file is
dropped when it is new), and the engine logs the reject as an event no role ever sees. A host text
shorter than ``n`` words counts as one shingle of its own length, so a short templated utterance
cannot slip through a large ``n``. Words are lowercased runs of letters and digits.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from rsi_workbench.memory.tree import MemoryTree

_WORD_RE = re.compile(r"[^\W_]+", re.UNICODE)


def words(text: str) -> list[str]:
    return [w.lower() for w in _WORD_RE.findall(text)]


def shingles(tokens: Sequence[str], n: int) -> set[tuple[str, ...]]:
    """Every run of ``n`` consecutive tokens."""
    return {tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)}


class ShingleIndex:
    """The host-only corpus as a set of shingles (per length: ``n`` and the lengths of shorter texts)."""

    def __init__(self, host_only: Iterable[str], n: int):
        if n < 1:
            raise ValueError(f"shingle n must be >= 1, got {n}")
        self.n = n
        self.by_len: dict[int, set[tuple[str, ...]]] = {}
        for text in host_only:
            toks = words(text)
            if not toks:
                continue
            k = min(n, len(toks))
            self.by_len.setdefault(k, set()).update(shingles(toks, k))

    def first_hit(self, text: str) -> tuple[str, ...] | None:
        """A shared shingle of ``text`` with the corpus, or None."""
        toks = words(text)
        for k, pool in self.by_len.items():
            for i in range(len(toks) - k + 1):
                s = tuple(toks[i : i + k])
                if s in pool:
                    return s
        return None


@dataclass(frozen=True)
class AuditReject:
    path: str
    shingle: tuple[str, ...]
    restored: bool  # True: the canonical version was kept; False: the new file was dropped


@dataclass(frozen=True)
class AuditResult:
    accepted: MemoryTree
    rejected: tuple[str, ...]
    rejects: tuple[AuditReject, ...] = ()


def _decode(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def shingle_audit(
    candidate: MemoryTree,
    host_only: Sequence[str] | ShingleIndex,
    n: int,
    *,
    canonical: MemoryTree | None = None,
) -> AuditResult:
    """Audit ``candidate``: files sharing an n-word shingle with ``host_only`` are rejected.

    With ``canonical`` (the memory the candidate was reconciled against) only created or modified
    files are checked (the canonical ones passed before) and a rejected file falls back to its
    canonical version; without it every file is checked and rejected files are dropped.
    """
    index = host_only if isinstance(host_only, ShingleIndex) else ShingleIndex(host_only, n)
    if index.n != n:
        raise ValueError(f"shingle index built with n={index.n}, audit asked for n={n}")
    base = canonical.files if canonical is not None else {}
    writes: dict[str, bytes] = {}
    deletes: list[str] = []
    rejects: list[AuditReject] = []
    for path, data in candidate.files.items():
        if path in base and base[path] == data:
            continue
        hit = index.first_hit(_decode(data))
        if hit is None:
            continue
        if path in base:
            writes[path] = base[path]
            rejects.append(AuditReject(path, hit, restored=True))
        else:
            deletes.append(path)
            rejects.append(AuditReject(path, hit, restored=False))
    accepted = candidate.with_changes(writes, deletes) if rejects else candidate
    return AuditResult(accepted=accepted, rejected=tuple(r.path for r in rejects), rejects=tuple(rejects))
