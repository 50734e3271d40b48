"""``records_smoke`` experiment: a real, short end-to-end check of the dataset registry and records.

Each registered dataset is one cycle: resolve it (mirror → cache → download) with its sha256
check, load it, summarise it, store the summary as a content-addressed artifact and append the
events. Resuming skips datasets already recorded, so a killed smoke finishes to the same records.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from rsi_workbench.config import StrictModel
from rsi_workbench.models.usage import with_model_calls
from rsi_workbench.records.query import load_events
from rsi_workbench.records.run import Run


class Config(StrictModel):
    experiment: Literal["records_smoke"] = "records_smoke"
    datasets: list[str] = Field(
        default_factory=list, description="dataset names; empty = every registered one"
    )
    seed: int = 0


def _summarise(name: str, obj: Any) -> dict[str, Any]:
    import pandas as pd

    if isinstance(obj, pd.DataFrame):
        num = obj.select_dtypes("number")
        return {
            "rows": int(len(obj)),
            "columns": list(map(str, obj.columns)),
            "numeric_max": {str(c): float(num[c].max()) for c in num.columns[:8]},
        }
    if isinstance(obj, list):
        keys = sorted(obj[0].keys()) if obj else []
        return {"rows": len(obj), "columns": keys}
    frame = getattr(obj, "frame", None)
    if frame is not None:
        return {"rows": int(len(frame)), "columns": list(map(str, frame.columns))}
    return {"rows": None, "columns": []}


def run_experiment(config: Config, out: Path, *, resume: bool = False) -> Path:
    from tqdm.auto import tqdm

    from rsi_workbench import datasets

    names = config.datasets or sorted(datasets.registry())
    run = Run.create(out, config, kind="records_smoke", exist_ok=resume)
    with run:
        done = {e.payload["dataset"] for e in run.events("dataset_checked")}
        for cycle, name in enumerate(tqdm(names, desc="datasets", unit="dataset")):
            if name in done:
                continue
            ok, detail = datasets.verify(name)
            if not ok:
                run.append("dataset_checked", {"dataset": name, "ok": False, "detail": detail}, cycle=cycle)
                run.commit()
                continue
            summary = _summarise(name, datasets.load(name))
            sha = run.artifacts.put_json({"dataset": name, **summary}, name=f"{name}.summary.json")
            run.append(
                "dataset_checked",
                {"dataset": name, "ok": True, "detail": detail, "rows": summary["rows"], "artifact": sha},
                cycle=cycle,
            )
            run.commit()
        run.append("smoke_finished", {"datasets": len(names)})
        run.commit()
    return out


def report(path: str | Path) -> str:
    df = load_events(path, kind="dataset_checked")
    lines = [f"records smoke — {path}", f"{'dataset':<32} {'ok':<4} {'rows':>6}  detail"]
    for _, r in df.iterrows():
        rows = "" if r.get("rows") is None or r.get("rows") != r.get("rows") else int(r["rows"])
        lines.append(
            f"{r['dataset']:<32} {'yes' if r['ok'] else 'NO':<4} {rows!s:>6}  {str(r['detail'])[:80]}"
        )
    run = Run.open(path)
    for sha in run.artifacts.list():
        run.artifacts.get(sha)  # verifies every artifact's sha256
    lines.append(
        f"{int(df['ok'].sum())}/{len(df)} datasets ok; {len(run.artifacts.list())} artifacts verified"
    )
    return with_model_calls("\n".join(lines), path)
