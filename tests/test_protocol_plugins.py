"""A researcher's own protocol domain, experiment and dashboard, without editing the package.

The example (examples/protocol_domain) runs through ``rsi-workbench run``, reports, and opens in the
cycles, gates and events dashboards; a bad import path fails before any run directory exists, naming
the file and field; an experiment and a dashboard declared as entry points of a distribution (a
dist-info written into a temporary folder on ``sys.path``) are found; selection rules are accepted
as objects and import paths and recorded in ``loop_opened``; the base classes' defaults hold.
"""

from __future__ import annotations

import json
import random
import re
import sys
import textwrap
from pathlib import Path

import pytest

from rsi_workbench import cli
from rsi_workbench.protocol.loop import Loop, ProtocolSettings
from rsi_workbench.protocol.selection import RandomK
from rsi_workbench.protocol.spec import BaseEnvironment, BasePolicy, Observation, TaskSpec
from rsi_workbench.records import Run

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "protocol_domain"
sys.path.insert(0, str(ROOT / "tests" / "protocol"))

from protocol_doubles import make_test_double_spec  # noqa: E402


def code_lines(path: Path) -> int:
    """Non-blank lines that are not comments (docstrings count)."""
    return sum(1 for ln in path.read_text().splitlines() if ln.strip() and not ln.strip().startswith("#"))


@pytest.fixture(scope="module")
def example_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("example") / "sgd"
    assert cli.main(["run", str(EXAMPLE / "config.yaml"), "--out", str(out)]) == 0
    return out


def test_the_example_is_short_and_runs_through_the_cli(example_run: Path, capsys) -> None:
    assert code_lines(EXAMPLE / "sgd_step_size.py") <= 40
    cfg = json.loads((example_run / "config.json").read_text())
    assert cfg["experiment"] == "protocol" and cfg["python_path"] == [str(EXAMPLE)]  # resolved, recorded
    opened = Run.open(example_run).events("loop_opened")[0].payload
    assert opened["components"]["environment"] == "sgd_step_size:SGDStepSize"
    assert opened["components"]["predictor"] == "sgd_step_size:KernelPredictor"
    assert opened["components"]["selection_rule"]["class"] == "rsi_workbench.protocol.selection:UtilityArgmax"
    kinds = {e.kind for e in Run.open(example_run).events()}
    assert {"gate", "retain", "predictor_proposed", "policy_proposed", "final_audit"} <= kinds
    capsys.readouterr()
    assert cli.main(["report", str(example_run)]) == 0
    text = capsys.readouterr().out
    assert text.startswith(f"protocol run {example_run} — spec sgd_step_size, seed 0, rule utility_argmax")
    assert re.search(r"^32 +update +\w+ +\d+ +0\.\d{3}$", text, re.M), text
    assert "cycle 6: reliability" in text and "accepted: policy" in text


def test_report_works_on_a_protocol_run_made_without_an_experiment(tmp_path: Path, capsys) -> None:
    with Run.create(tmp_path / "r", {"made_in": "a notebook"}, kind="protocol") as run:
        Loop.open(make_test_double_spec(4), run, ProtocolSettings(max_rounds=2), seed=0).run()
    assert cli.main(["report", str(tmp_path / "r")]) == 0
    out = capsys.readouterr().out
    assert "spec test_double" in out and "cycle 2:" in out


def test_the_dashboards_open_the_example_run(example_run: Path) -> None:
    from rsi_workbench.widgets.commands import dashboards_for

    apps = dashboards_for(example_run)
    assert {"cycles", "gates", "events"} <= set(apps)
    views = {name: apps[name].build(example_run, {}) for name in ("cycles", "gates", "events")}
    for name in views:
        assert apps[name].export_sections(example_run), name
    st, tuner, ev = views["cycles"], views["gates"], views["events"]
    assert st.cycle == 6 and len(st._cands.value) == 6 * 6  # six tasks' six candidates
    assert st._cands.value["selected"].sum() >= 4
    assert "p_all_pass" not in st._cands.value and st._cands.value["action"].str.match(r"^-?\d").all()
    observed = st._cands.value["observed"].dropna()  # this domain's own terms, not a test-suite's
    assert len(observed) and all(o == "solved" or o.startswith("score ") for o in observed)
    assert "**0 of" in tuner._summary.object  # the declared thresholds reproduce every decision
    assert "6 cycles" in ev._summary.object


def _config(tmp_path: Path, **changes: str) -> Path:
    text = (EXAMPLE / "config.yaml").read_text()
    for old, new in changes.items():
        assert old in text
        text = text.replace(old, new)
    cfg = tmp_path / "config.yaml"
    cfg.write_text(text.replace('python_path: ["."]', f'python_path: ["{EXAMPLE}"]'))
    return cfg


@pytest.mark.parametrize(
    ("old", "new", "field", "says"),
    [
        ("predictor: sgd_step_size:KernelPredictor", "predictor: sgd_step_size:Nope", "predictor.target", "no attribute 'Nope'"),
        ("environment: sgd_step_size:", "environment: no_such_module:", "environment.target", "no module named 'no_such_module'"),
        ("kwargs: {spread: 1.0}", "kwargs: {width: 1.0}", "policy.kwargs", "unexpected keyword argument 'width'"),
        ("rule: utility_argmax", "rule: sgd_step_size:NoRule", "protocol.rule", "no attribute 'NoRule'"),
        ("experiment: protocol", "experiment: no_such_pkg.mod:Exp", "experiment", "no module named 'no_such_pkg'"),
    ],
)  # fmt: skip
def test_a_bad_import_path_names_the_file_and_field(tmp_path, capsys, old, new, field, says) -> None:
    cfg = _config(tmp_path, **{old: new})
    out = tmp_path / "run"
    assert cli.main(["run", str(cfg), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"{cfg}: {field}" in err and says in err, err
    assert not out.exists()


def test_a_component_that_does_not_define_what_its_role_needs(tmp_path: Path, capsys) -> None:
    (tmp_path / "half_domain.py").write_text("from rsi_workbench.protocol.spec import BaseEnvironment\n\nclass Half(BaseEnvironment):\n    def initial(self, task_id):\n        return 0, None\n")  # fmt: skip
    cfg = _config(tmp_path, **{"environment: sgd_step_size:SGDStepSize": "environment: half_domain:Half"})
    cfg.write_text(cfg.read_text().replace(f'python_path: ["{EXAMPLE}"]', f'python_path: ["{EXAMPLE}", "."]'))
    assert cli.main(["run", str(cfg), "--out", str(tmp_path / "run")]) == 2
    assert "environment.target: half_domain:Half does not define evaluate" in capsys.readouterr().err


DIST = {
    "tiny_experiment.py": '''
        """An experiment of one's own: counts to n, one event per step."""
        from typing import Literal
        from rsi_workbench.config import StrictModel
        from rsi_workbench.records import Run

        class Config(StrictModel):
            experiment: Literal["tiny", "tiny_experiment"] = "tiny"
            n: int = 3

        def run_experiment(config, out, *, resume=False):
            with Run.create(out, config, kind="tiny", exist_ok=resume) as run:
                for i in range(config.n):
                    run.append("counted", {"i": i}, cycle=i)
                run.commit()
            return out

        def report(path):
            return f"tiny: {len(Run.open(path).events('counted'))} counted"
    ''',
    "tiny_dashboard.py": """
        APP_NAME = "tiny"

        def applies(run, kinds):
            return "counted" in kinds

        def build(run, extra, live=None):
            return "a tiny page"

        def export_sections(run):
            return []
    """,
}


@pytest.fixture
def tiny_dist(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A distribution declaring an experiment and a dashboard entry point, on sys.path."""
    site = tmp_path / "site"
    info = site / "tiny_plugins-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: tiny-plugins\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        "[rsi_workbench.experiments]\ntiny = tiny_experiment\n\n"
        "[rsi_workbench.dashboards]\ntiny = tiny_dashboard\nbroken = tiny_dashboard:nothing_here\n"
    )
    for name, src in DIST.items():
        (site / name).write_text(textwrap.dedent(src))
    monkeypatch.syspath_prepend(str(site))
    return tmp_path


@pytest.mark.parametrize("kind", ["tiny", "tiny_experiment"])  # an entry point, an import path
def test_an_experiment_of_ones_own(tiny_dist: Path, capsys, kind: str) -> None:
    from rsi_workbench.widgets.commands import dashboards_for

    cfg = tiny_dist / "tiny.yaml"
    cfg.write_text(f"experiment: {kind}\nn: 4\n")
    out = tiny_dist / "out"
    assert cli.main(["run", str(cfg), "--out", str(out)]) == 0
    assert "tiny: 4 counted" in capsys.readouterr().out
    trust = ["--trust-plugin", kind] if kind == "tiny_experiment" else []  # an import path: named again
    if trust:  # report imports code a run's config.json names only when the user names it too
        assert cli.main(["report", str(out)]) == 2
        assert "--trust-plugin tiny_experiment" in capsys.readouterr().err
    assert cli.main(["report", str(out), *trust]) == 0
    assert "tiny: 4 counted" in capsys.readouterr().out
    apps = dashboards_for(out)  # the dashboard entry point applies; the broken one is skipped, warned
    assert set(apps) == {"tiny", "events"}
    err = capsys.readouterr().err
    assert "entry point 'broken'" in err and "skipped" in err


class CheapestFirst:
    """A selection rule of one's own: the reversed proposal order."""

    name, kind = "cheapest_first", "utility"

    def rank(self, candidates, rng):
        return [c.index for c in reversed(candidates)]


def test_selection_rules_as_objects_and_import_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    settings = ProtocolSettings(max_rounds=2)
    with Run.create(tmp_path / "a", {"a": 1}, kind="protocol") as run:
        Loop.open(make_test_double_spec(4), run, settings, seed=0, rule=CheapestFirst()).run()
        sel = run.events("selection")
        assert {e.payload["rule"] for e in sel} == {"cheapest_first"}
    opened = Run.open(tmp_path / "a").events("loop_opened")[0].payload
    assert opened["components"]["selection_rule"] == {
        "name": "cheapest_first",
        "kind": "utility",
        "class": f"{__name__}:CheapestFirst",
    }
    with Run.open(tmp_path / "a", mode="a") as run, pytest.raises(ValueError, match="another|selection rule"):
        Loop.open(make_test_double_spec(4), run, settings, seed=0, rule=RandomK())
    monkeypatch.setitem(sys.modules, "my_rules", sys.modules[__name__])
    by_path = ProtocolSettings(max_rounds=1, rule="my_rules:CheapestFirst")
    with Run.create(tmp_path / "b", {"b": 1}, kind="protocol") as run:
        Loop.open(make_test_double_spec(4), run, by_path, seed=0).run()
        assert {e.payload["rule"] for e in run.events("selection")} == {"cheapest_first"}
    with pytest.raises(ValueError, match="unknown selection rule 'greedy'"):
        ProtocolSettings(rule="greedy")


class Walk(BaseEnvironment):
    def initial(self, task_id):
        return 0, self.evaluate(task_id, 0, 0)

    def evaluate(self, task_id, state, action):
        return Observation({"y": -abs(action - 5)}, solved=action == 5)

    def advance(self, task_id, state, action, observation):
        return action


class Step(BasePolicy):
    def __init__(self, size=1):
        self.size = size

    def propose(self, task_id, state, k, rng):
        return [state + self.size * rng.choice((-1, 1)) for _ in range(k)]


def test_base_class_defaults() -> None:
    env, pol = Walk(), Step(2)
    assert env.signature("t", [1, {"a": 2}]) == env.signature("t", [1, {"a": 2}]) != env.signature("u", [1])
    assert env.load_state(json.loads(json.dumps(env.dump_state({"x": [1, 2]})))) == {"x": [1, 2]}
    assert env.audit("t", 0, [1, 2]) == [] and env.final_audit("t", 3) == {"final_state": {"state": 3}}
    assert Step.from_bytes(pol.to_bytes()).version == pol.version != Step(3).version
    assert pol.update([], [], seed=0) is pol and len(pol.propose("t", 0, 3, random.Random(0))) == 3
    spec = TaskSpec(name="walk", tasks=["t"], environment=env, policy=pol, predictor=None)
    assert spec.load_policy(pol.to_bytes()).size == 2  # derived from Step.from_bytes
    with pytest.raises(NotImplementedError, match="must define evaluate"):
        BaseEnvironment().evaluate("t", 0, 0)
    with pytest.raises(TypeError, match="Step.to_bytes: its attributes are not JSON"):
        Step(size=object()).to_bytes()
    with pytest.raises(TypeError, match="no from_bytes"):
        TaskSpec(name="x", tasks=["t"], environment=env, policy=object(), predictor=None)  # type: ignore[arg-type]


def test_the_docs_show_the_example_as_it_is() -> None:
    doc = (ROOT / "docs" / "extending-protocol.md").read_text()
    code = "".join(
        ln for ln in (EXAMPLE / "sgd_step_size.py").read_text().splitlines(True) if not ln.startswith("#")
    )
    assert f"```python\n{code}```" in doc
    assert f"{code_lines(EXAMPLE / 'sgd_step_size.py')} lines that are neither blank nor comments" in doc


def test_the_shipped_config_is_the_examples() -> None:
    from rsi_workbench.cli import load_experiment_config

    shipped = load_experiment_config(ROOT / "configs" / "protocol" / "sgd_step_size.yaml")
    assert shipped == load_experiment_config(EXAMPLE / "config.yaml")  # python_path resolves to one folder


def test_a_live_dashboard_steps_the_examples_run(example_run: Path, tmp_path: Path) -> None:
    import shutil

    from rsi_workbench.widgets.cycle_stepper import open_live_loop

    run = tmp_path / "cut"
    shutil.copytree(example_run, run)
    lines = (run / "events.jsonl").read_text().splitlines(keepends=True)
    keep = [ln for ln in lines if (json.loads(ln).get("cycle") or 0) <= 3]
    (run / "events.jsonl").write_text("".join(keep))  # as if stopped after cycle 3
    with Run.open(run, mode="a", exclusive=True) as owner:
        loop = open_live_loop(run, owner)
        assert loop is not None and loop.k == 3
        loop.step()
    with Run.open(example_run) as whole:
        assert open_live_loop(example_run, whole) is None  # finished: nothing to step
    again = [e.payload for e in Run.open(run).events("selection") if e.cycle == 4]
    assert again == [e.payload for e in Run.open(example_run).events("selection") if e.cycle == 4]


def test_the_example_components_pass_the_conformance_check() -> None:
    """What a plug-in author runs before a real run: the engine's contract checks (build, JSON round
    trips, versions, determinism, resume) on the example's own classes."""
    import rsi_workbench as rw

    sys.path.insert(0, str(EXAMPLE))
    try:
        from sgd_step_size import KernelPredictor, LocalSearch, SGDStepSize
    finally:
        sys.path.remove(str(EXAMPLE))
    report = rw.check_protocol_components(
        SGDStepSize,
        LocalSearch,
        KernelPredictor,
        tasks=[2, 4, 8],
        settings={"k": 3, "utility": {"weights": {"score": 1.0}}, "audit": False},
    )
    assert report.passed == ["build", "json", "versions", "loop", "determinism", "resume"]
