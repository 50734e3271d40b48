"""Finished child runs cannot shrink silently: the parent records each child's event count and digest,
and ``report`` / ``resume`` refuse a child whose log no longer matches (records.children, docs/runs.md)."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from rsi_workbench.cli import main
from rsi_workbench.records import (
    ChildRunChanged,
    Run,
    child_record,
    child_runs,
    compact_run,
    compact_tree,
    verify_child,
    verify_children,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "experiments"))
from code_repair_demo import TASKS  # noqa: E402


def _child(path: Path, n: int) -> Run:
    run = Run.create(path, {"child": path.name})
    for i in range(n):
        run.append("step", {"i": i, "text": "é" * i}, cycle=i)
    run.commit()
    return run


def _halve(run_dir: Path) -> tuple[int, int]:
    """Cut a child's plain event log to its first half of lines (a clean cut: no torn line)."""
    log = run_dir / "events.jsonl"
    lines = log.read_text().splitlines(keepends=True)
    log.write_text("".join(lines[: len(lines) // 2]))
    return len(lines), len(lines) // 2


# -- the records layer ---------------------------------------------------------------------------
def test_fingerprint_counts_decoded_events_and_survives_compaction(tmp_path):
    with _child(tmp_path / "c", 6) as c:
        before = c.fingerprint()
    assert before[0] == 6 and len(before[1]) == 64
    compact_run(tmp_path / "c")
    assert not (tmp_path / "c" / "events.jsonl").exists()
    assert Run.open(tmp_path / "c").fingerprint() == before  # decoded events, not bytes


def test_verify_child_refuses_a_truncated_or_rewritten_child_naming_it(tmp_path):
    _child(tmp_path / "p" / "arms" / "a", 8).close()
    rec = child_record(tmp_path / "p", tmp_path / "p" / "arms" / "a")
    assert rec["path"] == "arms/a" and rec["events"] == 8
    assert verify_child(tmp_path / "p", rec) == tmp_path / "p" / "arms" / "a"
    log = tmp_path / "p" / "arms" / "a" / "events.jsonl"
    whole = log.read_text()
    _halve(tmp_path / "p" / "arms" / "a")
    with pytest.raises(ChildRunChanged, match=r"arms/a: child run .* recorded 8 events .* found 4 events"):
        verify_child(tmp_path / "p", rec)
    log.write_text(whole.replace('"i":3', '"i":33'))  # same count, other content
    with pytest.raises(ChildRunChanged, match="found 8 events .*rewritten"):
        verify_child(tmp_path / "p", rec)
    log.write_text(whole + whole.splitlines(keepends=True)[-1].replace('"seq":7', '"seq":8'))
    with pytest.raises(ChildRunChanged, match="found 9 events .*appended to"):
        verify_child(tmp_path / "p", rec)
    shutil.rmtree(tmp_path / "p" / "arms" / "a")
    with pytest.raises(ChildRunChanged, match="found no event log; its log was removed"):
        verify_child(tmp_path / "p", rec)


def test_a_growing_child_checks_only_its_recorded_prefix(tmp_path):
    shared = _child(tmp_path / "p" / "calls", 3)
    rec = child_record(tmp_path / "p", shared, grows=True)
    shared.append("step", {"i": 99})  # a later sibling's calls
    shared.commit()
    verify_child(tmp_path / "p", rec)
    shared.close()
    _halve(tmp_path / "p" / "calls")  # 4 lines -> 2: the recorded 3 are no longer all there
    with pytest.raises(ChildRunChanged, match="recorded 3 events .*growing"):
        verify_child(tmp_path / "p", rec)


def test_verify_children_walks_nested_parents_and_notes_unverified_events(tmp_path):
    p = tmp_path / "p"
    _child(p / "mid" / "leaf", 4).close()
    with Run.create(p / "mid", {"mid": 1}) as mid:
        mid.append("arm_finished", child_runs(mid, p / "mid" / "leaf"))
    with Run.create(p, {"top": 1}) as top:
        top.append("arm_finished", {"old": True})  # recorded before fingerprints existed
        top.append("arm_finished", child_runs(top, p / "mid"))
        top.append("run_finished", child_runs(top))  # finished no child run (events kept inline)
    check = verify_children(p, ["arm_finished", "run_finished"])
    assert check.verified == [p / "mid", p / "mid" / "leaf"]
    assert check.unverified == [f"{p}: arm_finished seq 0"]
    _halve(p / "mid" / "leaf")
    with pytest.raises(ChildRunChanged, match=r"mid/leaf: .*recorded 4 events"):
        verify_children(p)


# -- a real code-repair experiment -----------------------------------------------------------------
@pytest.fixture(scope="module")
def code_repair_exp(tmp_path_factory) -> Path:
    """Random-K on the three demo tasks, seeds 0 and 1: two finished (method, seed) child runs."""
    from rsi_workbench.experiments.code_repair import Config, run_experiment

    d = tmp_path_factory.mktemp("code_repair")
    (d / "tasks.jsonl").write_text("".join(json.dumps(t) + "\n" for t in TASKS))
    cfg = Config.model_validate(
        {
            "tasks": {"path": str(d / "tasks.jsonl")},
            "methods": ["random_k"],
            "seeds": [0, 1],
            "protocol": {"reliability": {"min_predictions": 1, "min_groups": 1}, "gate_fraction": 0.34},
        }
    )
    return run_experiment(cfg, d / "exp")


@pytest.fixture
def exp(code_repair_exp, tmp_path) -> Path:
    return Path(shutil.copytree(code_repair_exp, tmp_path / "exp"))


def test_code_repair_records_each_run_fingerprint(exp):
    fins = Run.open(exp).events("run_finished")
    assert [e.payload["child_runs"][0]["path"] for e in fins] == [
        "runs/random_k-seed0",
        "runs/random_k-seed1",
    ]
    for e in fins:
        rec = e.payload["child_runs"][0]
        assert (rec["events"], rec["sha256"]) == Run.open(exp / rec["path"]).fingerprint()


def test_untouched_code_repair_reports_as_before(exp, capsys):
    from rsi_workbench.experiments.code_repair import report

    text = report(exp)
    assert main(["report", str(exp)]) == 0
    out, err = capsys.readouterr()
    assert out == text + "\n" and err == ""


def test_truncated_code_repair_child_is_refused_by_report_and_resume(exp, capsys):
    child = exp / "runs" / "random_k-seed1"
    n, half = _halve(child)
    cut = (child / "events.jsonl").read_bytes()
    shutil.copy(exp / "config.json", exp.parent / "config.json")  # the experiment's config, as run
    rerun = ["run", str(exp.parent / "config.json"), "--out", str(exp), "--resume"]
    for cmd in (["report", str(exp)], ["resume", str(exp)], ["report", "--save", str(exp)], rerun):
        assert main(cmd) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"error: {child}: child run no longer matches what {exp} recorded")
        assert f"recorded {n} events" in err and f"found {half} events" in err
        assert "(run_finished seq 2)" in err and "Traceback" not in err
    assert (child / "events.jsonl").read_bytes() == cut  # resume ran nothing
    assert not (exp / "report.txt").exists()


def test_compacted_code_repair_still_verifies(exp, capsys):
    from rsi_workbench.experiments.code_repair import report

    text = report(exp)
    assert all(not r.skipped for r in compact_tree([exp]))
    assert not (exp / "runs" / "random_k-seed0" / "events.jsonl").exists()
    assert main(["report", str(exp)]) == 0
    assert capsys.readouterr().out == text + "\n"
    assert main(["resume", str(exp)]) == 0  # expands the parent's log; the children stay compacted
    capsys.readouterr()
    assert len(verify_children(exp).verified) == 2


def test_an_older_code_repair_parent_opens_with_a_note(exp, capsys):
    log = exp / "events.jsonl"
    rows = [json.loads(x) for x in log.read_text().splitlines()]
    for r in rows:
        r["payload"].pop("child_runs", None)
    log.write_text("".join(json.dumps(r) + "\n" for r in rows))
    _halve(exp / "runs" / "random_k-seed0")  # not detectable without a recorded fingerprint
    assert main(["report", str(exp)]) == 0
    err = capsys.readouterr().err
    assert "2 finished child run(s) were recorded before child fingerprints existed" in err
    assert "not verified" in err


# -- a real dreaming experiment --------------------------------------------------------------------
def test_dreaming_arm_cut_to_half_is_refused_and_a_compacted_one_verifies(tmp_path, capsys):
    from rsi_workbench.experiments.dreaming.experiment import Config, report, run_experiment

    cfg = Config(
        task={"kind": "circle_packing", "n": 6, "maxiter": 40},
        arms=["dreaming", "greedy_deepest_best"],
        seeds=[0],
        W=2,
        executor="serial",
        calls=8,
        calls_per_round=4,
        candidates=3,
    )
    out = run_experiment(cfg, tmp_path / "dream")
    fins = Run.open(out).events("arm_finished")
    assert [e.payload["child_runs"][0]["path"] for e in fins] == [
        "arms/dreaming-s0",
        "arms/greedy_deepest_best-s0",
    ]
    text = report(out)
    assert main(["report", str(out)]) == 0 and capsys.readouterr().out == text + "\n"
    compact_run(out / "arms" / "dreaming-s0")
    assert main(["report", str(out)]) == 0 and capsys.readouterr().out == text + "\n"
    arm = out / "arms" / "greedy_deepest_best-s0"
    n, half = _halve(arm)
    for cmd in ("report", "resume"):
        assert main([cmd, str(out)]) == 2
        err = capsys.readouterr().err
        assert f"error: {arm}: child run no longer matches" in err
        assert f"recorded {n} events" in err and f"found {half} events" in err
    assert len(Run.open(arm).events()) == half  # the resume did not run the arm again
