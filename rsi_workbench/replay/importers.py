"""Import discovery trees from peer systems: OpenEvolve checkpoints and ShinkaEvolve databases.

Imported trees usually have nodes with several children, so they replay in ``general`` mode.
Malformed input is rejected with the file and field named (cycles, duplicate ids).

**Ghost nodes.** A real OpenEvolve checkpoint holds only the programs still in its archive: programs
evicted from it are gone, but their children still name them as ``parent_id``. By default
(``ghosts=True``) each missing parent is imported as a *ghost node*, as OpenEvolve's own visualiser
draws it: id = the missing parent's id, hung under ``r`` (its own parent is unknown), created just
before its earliest child, ``score=None``, ``valid=False``, ``fail_class="ghost"``,
``meta={"ghost": True}``. The count is in ``tree.meta["ghosts"]`` (and the ids in
``tree.meta["ghost_ids"]``). In replay a ghost is revealed like any node — it counts in ``N_i`` and
spends the node budget, as the evicted attempt did cost the original run — but it is unscored, so it
never counts as the best node and never enters ``quality``. ``ghosts=False`` rejects a dangling parent.
"""

from __future__ import annotations

import json
import math
import re
import sqlite3
from pathlib import Path
from typing import Any

from rsi_workbench.records import ArtifactStore
from rsi_workbench.replay.tree import ROOT, DiscoveryTree, Node, TreeError


def _read_json(f: Path) -> Any:
    """A JSON file's content; unreadable text or bad JSON is a TreeError naming the file."""
    try:
        return json.loads(f.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise TreeError(f"{f}: not a UTF-8 text file") from None
    except json.JSONDecodeError as e:
        raise TreeError(f"{f}: not valid JSON: {e}") from None
    except OSError as e:
        raise TreeError(f"{f}: cannot be read ({e.strerror or e})") from None


def _finite(x: Any) -> float | None:
    try:
        f = float(x)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def _json_type(v: Any) -> str:
    """The JSON name of a value's type (array, string, number, ...), not Python's."""
    names = {dict: "an object", list: "an array", str: "a string", bool: "a boolean", type(None): "null"}
    return names.get(type(v), "a number")


def _ghost_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One ghost row per missing parent: under ``r``, created just before its earliest child."""
    ids = {r["id"] for r in rows}
    earliest: dict[str, dict[str, Any]] = {}
    for r in rows:
        p = r["parent"]
        if p is not None and p not in ids and (p not in earliest or r["order"] < earliest[p]["order"]):
            earliest[p] = r
    return [
        {
            "id": p,
            "parent": None,
            "order": child["order"],  # its earliest child's time; sorted just before it (_to_tree)
            "round": child.get("round", 0),
            "score": None,
            "valid": False,
            "error": "",
            "fail_class": "ghost",
            "payload": None,
            "where": f"ghost of {p!r} (parent of {child['where']})",
            "meta": {"ghost": True},
        }
        for p, child in sorted(earliest.items())
    ]


def _check_links(rows: list[dict[str, Any]]) -> None:
    """Duplicate ids, dangling parents and cycles, each named by the row's ``where`` (file/field)."""
    by_id: dict[str, dict[str, Any]] = {}
    for r in rows:
        if r["id"] in by_id:
            raise TreeError(f"{r['where']}: id: duplicate id {r['id']!r} (also in {by_id[r['id']]['where']})")
        by_id[r["id"]] = r
    for r in rows:
        if r["parent"] is not None and r["parent"] not in by_id:
            raise TreeError(f"{r['where']}: parent_id: dangling parent {r['parent']!r} (no such program)")
    for r in rows:
        seen, p = {r["id"]}, r["parent"]
        while p is not None:
            if p in seen:
                raise TreeError(
                    f"{r['where']}: parent_id: cycle through {p!r} (never reaches a root program)"
                )
            seen.add(p)
            p = by_id[p]["parent"]


def _to_tree(
    rows: list[dict[str, Any]], *, name: str, source: str, meta: dict[str, Any], ghosts: bool = True
) -> DiscoveryTree:
    if ghosts:
        seen: set[str] = set()
        for r in rows:  # a duplicate id is reported as such, before any ghost is made
            if r["id"] in seen:
                break
            seen.add(r["id"])
        else:
            extra = _ghost_rows(rows)
            rows = [*rows, *extra]
            meta = {**meta, "ghosts": len(extra), "ghost_ids": [g["id"] for g in extra]}
    _check_links(rows)
    rows = sorted(rows, key=lambda r: (r["order"], r.get("fail_class") != "ghost"))
    nodes = [
        Node(
            id=str(r["id"]),
            parent=ROOT if r["parent"] is None else str(r["parent"]),
            created_seq=i,
            round=int(r.get("round") or 0),
            score=r["score"],
            valid=r["valid"],
            fail_class=r.get("fail_class")
            or (None if r["valid"] else ("failed" if r["error"] else "invalid")),
            error=r["error"],
            payload=r.get("payload"),
            meta=r["meta"],
        )
        for i, r in enumerate(rows)
    ]
    return DiscoveryTree.from_nodes(nodes, source=source, name=name, meta=meta)


def _openevolve_dir(path: Path) -> Path:
    """``path`` itself if it holds ``programs/``, else its highest ``checkpoint_N`` subfolder."""
    if (path / "programs").is_dir():
        return path
    cps = sorted(
        (p for p in path.glob("checkpoint_*") if p.is_dir() and re.fullmatch(r"checkpoint_\d+", p.name)),
        key=lambda p: int(p.name.split("_")[1]),
    )
    if cps and (cps[-1] / "programs").is_dir():
        return cps[-1]
    raise TreeError(
        f"{path}: not an OpenEvolve checkpoint (no programs/ folder and no checkpoint_N/programs/)"
    )


def import_openevolve(
    path: str | Path,
    *,
    metric: str = "combined_score",
    store: ArtifactStore | None = None,
    ghosts: bool = True,
) -> DiscoveryTree:
    """Read ``programs/<id>.json`` (+ ``metadata.json``): score = ``metrics[metric]``; creation order by
    ``iteration_found`` then ``timestamp``; failed/timed-out programs become invalid nodes; parents
    evicted from the archive become ghost nodes (module docstring) unless ``ghosts=False``."""
    folder = _openevolve_dir(Path(path))
    meta: dict[str, Any] = {"source": "openevolve", "path": str(folder), "metric": metric}
    mfile = folder / "metadata.json"
    if mfile.exists():
        m = _read_json(mfile)
        if not isinstance(m, dict):
            raise TreeError(f"{mfile}: top level must be an object")
        meta.update({k: m[k] for k in ("best_program_id", "last_iteration", "current_island") if k in m})
    files = sorted((folder / "programs").glob("*.json"))
    if not files:
        raise TreeError(f"{folder / 'programs'}: no program files (*.json)")
    rows = []
    for f in files:
        p = _read_json(f)
        if not isinstance(p, dict):
            raise TreeError(f"{f}: top level must be an object")
        for key in ("id", "iteration_found"):
            if key not in p:
                raise TreeError(f"{f}: {key}: required field is missing")
        for key in ("id", "parent_id"):
            if not isinstance(p.get(key), str | int | None):
                raise TreeError(f"{f}: {key}: must be a string, got {json.dumps(p[key])[:60]}")
        metrics = p.get("metrics") or {}
        if not isinstance(metrics, dict):
            raise TreeError(f"{f}: metrics: must be an object, got {_json_type(metrics)}")
        metadata = p.get("metadata") or {}
        if not isinstance(metadata, dict):
            raise TreeError(f"{f}: metadata: must be an object, got {_json_type(metadata)}")
        score = _finite(metrics.get(metric))
        err = metrics.get("error") or metrics.get("timeout") or ""
        error = str(err) if err not in ("", None, False, 0) else ""
        if score is None and not error:
            error = f"no finite metrics.{metric}"
        payload = None
        if store is not None and isinstance(p.get("code"), str):
            payload = store.put(p["code"].encode(), name=f"{p['id']}.code", program=str(p["id"]))
        rows.append(
            {
                "id": str(p["id"]),
                "parent": None if p.get("parent_id") in (None, "") else str(p["parent_id"]),
                "order": (
                    _finite(p.get("iteration_found")) or 0.0,
                    _finite(p.get("timestamp")) or 0.0,
                    str(p["id"]),
                ),
                "round": int(_finite(p.get("iteration_found")) or 0),
                "score": score,
                "valid": score is not None and not error,
                "error": error,
                "payload": payload,
                "where": str(f),
                "meta": {
                    "generation": p.get("generation"),
                    "island": metadata.get("island"),
                    "metrics": {k: v for k, v in metrics.items() if isinstance(v, int | float | str | bool)},
                },
            }
        )
    return _to_tree(rows, name=f"openevolve:{folder.name}", source=str(folder), meta=meta, ghosts=ghosts)


def import_shinka(
    path: str | Path, *, store: ArtifactStore | None = None, ghosts: bool = True
) -> DiscoveryTree:
    """Read a ShinkaEvolve results database (SQLite ``programs`` table: id, parent_id, generation,
    combined_score, correct, …); creation order by ``generation`` then ``timestamp`` then row order;
    a missing parent becomes a ghost node unless ``ghosts=False``."""
    p = Path(path)
    if not p.exists():
        raise TreeError(f"{p}: database file not found")
    try:
        con = sqlite3.connect(f"file:{p}?mode=ro", uri=True)
        con.row_factory = sqlite3.Row
        cols = {r[1] for r in con.execute("PRAGMA table_info(programs)")}
    except sqlite3.DatabaseError as e:
        raise TreeError(f"{p}: not a SQLite database: {e}") from None
    if not cols:
        raise TreeError(f"{p}: programs: table is missing")
    for c in ("id", "parent_id", "generation", "combined_score", "correct"):
        if c not in cols:
            raise TreeError(f"{p}: programs.{c}: required column is missing (have {sorted(cols)})")
    extra = [c for c in ("timestamp", "code", "island_idx", "text_feedback") if c in cols]
    sql = f"SELECT rowid AS _row, id, parent_id, generation, combined_score, correct{''.join(', ' + c for c in extra)} FROM programs"
    try:
        rows = _shinka_rows(p, con, sql, store)
    except sqlite3.DatabaseError as e:
        raise TreeError(f"{p}: programs: cannot be read: {e}") from None
    finally:
        con.close()
    if not rows:
        raise TreeError(f"{p}: programs: table is empty")
    return _to_tree(
        rows, name=f"shinka:{p.stem}", source=str(p), meta={"source": "shinka", "path": str(p)}, ghosts=ghosts
    )


def _shinka_rows(
    p: Path, con: sqlite3.Connection, sql: str, store: ArtifactStore | None
) -> list[dict[str, Any]]:
    """One import row per ``programs`` row, named ``<file>: programs row N`` in errors."""
    rows = []
    for r in con.execute(sql):
        d = dict(r)
        where = f"{p}: programs row {d['_row']}"
        if d["id"] in (None, ""):
            raise TreeError(f"{where}: id: required value is missing")
        score = _finite(d["combined_score"])
        correct = bool(d["correct"])
        payload = None
        if store is not None and isinstance(d.get("code"), str):
            payload = store.put(d["code"].encode(), name=f"{d['id']}.code", program=str(d["id"]))
        rows.append(
            {
                "id": str(d["id"]),
                "parent": None if d["parent_id"] in (None, "") else str(d["parent_id"]),
                "order": (_finite(d["generation"]) or 0.0, _finite(d.get("timestamp")) or 0.0, d["_row"]),
                "round": int(_finite(d["generation"]) or 0),
                "score": score,
                "valid": correct and score is not None,
                "error": "" if correct else str(d.get("text_feedback") or ""),
                "payload": payload,
                "where": where,
                "meta": {"generation": d["generation"], "island": d.get("island_idx")},
            }
        )
    return rows
