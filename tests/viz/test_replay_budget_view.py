"""The replay dashboard names the node budget and each policy's out-of-tree share where a run used
one, and says nothing of it where it did not."""

from __future__ import annotations

import pandas as pd

from rsi_workbench.viz.replay import plot_replay_heatmap, replay_info


def frame(budgeted: bool) -> pd.DataFrame:
    rows = []
    for c, (n, oot) in enumerate([(4, []), (3, [[2, "t0n1"]])]):
        for t in range(2):
            row = {"arm": "dreaming", "seed": 0, "cycle": 1, "candidate": c, "tree_name": f"T{t}",
                   "tree_index": t, "quality": 1.0 + c, "n": n, "k": 2, "V": 1.0 + c}  # fmt: skip
            if budgeted:
                row.update(node_budget=4, out_of_tree=oot, out_of_tree_share=len(oot) / (n + len(oot)))
            rows.append(row)
    return pd.DataFrame(rows)


def test_budget_and_out_of_tree_share_are_shown():
    info = replay_info(frame(True), "dreaming", 0, 1, 0.0, 0.0)
    assert info.node_budget == 4
    assert info.out_of_tree_share == [0.0, 0.25]  # candidate 1: 2 outside of 2 + 6 choices
    assert info.budget_note() == "node budget 4, out-of-tree choices 25%"
    assert "node budget 4" in plot_replay_heatmap(info).layout.title.text


def test_unbudgeted_run_shows_no_budget():
    info = replay_info(frame(False), "dreaming", 0, 1, 0.0, 0.0)
    assert info.node_budget is None and info.out_of_tree_share is None and info.budget_note() == ""
    assert "budget" not in plot_replay_heatmap(info).layout.title.text


def test_explorer_summary_line():
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location(
        "replay_explorer", Path(__file__).resolve().parents[2] / "widgets" / "replay_explorer.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    line = mod._budget_line(replay_info(frame(True), "dreaming", 0, 1, 0.0, 0.0))
    assert "node budget of 4" in line and "25%" in line
    assert mod._budget_line(replay_info(frame(False), "dreaming", 0, 1, 0.0, 0.0)) == ""
