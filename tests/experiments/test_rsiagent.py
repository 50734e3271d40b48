"""RSIAgent's MiniWoB++ binding without a browser: the action language, the search, the verifier per
family, the actor's memory (scripts, lessons, reconcile), the curriculum's handoffs, instructions and
seeds, and the experiment config's errors. Pages are hand-built observations (test data)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rsi_workbench.domains.gui import GuiElement, GuiObservation
from rsi_workbench.domains.gui.rsiagent import interpreter
from rsi_workbench.domains.gui.rsiagent.actor import BuiltinActor, rank, script_path
from rsi_workbench.domains.gui.rsiagent.curriculum import BuiltinCurriculum
from rsi_workbench.domains.gui.rsiagent.miniwob import SPAN, MiniwobEnvironment, parse_instruction
from rsi_workbench.domains.gui.rsiagent.search import candidates, program_source, template_key
from rsi_workbench.domains.gui.rsiagent.verifier import MiniwobVerifier, check_click
from rsi_workbench.memory import EMPTY, CurriculumRequest, Evidence, OutcomeSummary, Project, ProjectRejected
from rsi_workbench.memory.handoff import parse_handoff

pytest.importorskip("miniwob")
ROOT_CONFIGS = Path(__file__).resolve().parents[2] / "configs" / "rsiagent"


def el(
    ref: int,
    parent: int | None,
    tag: str,
    text: str | None = None,
    value: Any = None,
    id: str = "",
    classes: str = "",
) -> dict[str, Any]:
    return {
        "ref": ref,
        "parent_ref": parent,
        "tag": tag,
        "text": text,
        "value": value,
        "id": id,
        "classes": classes,
    }


def obs_of(utterance: str, fields: list[tuple[str, str]], elements: list[dict[str, Any]]) -> GuiObservation:
    els = tuple(GuiElement(left=0, top=0, width=10, height=10, **e) for e in elements)
    return GuiObservation(task="t", step=0, utterance=utterance, fields=tuple(fields), elements=els)


def as_data(obs: GuiObservation, actions: int = 0) -> dict[str, Any]:
    d = json.loads(json.dumps(obs.to_json()))
    d["actions_taken"] = [{}] * actions
    return d


CHECKBOXES = [
    el(1, None, "body"),
    el(2, 1, "label"),
    el(3, 2, "input_checkbox", "", False),
    el(-1, 2, "t", "alpha"),
    el(4, 1, "label"),
    el(5, 4, "input_checkbox", "", True),
    el(-2, 4, "t", "bravo"),
    el(6, 1, "button", "Submit", id="subbtn"),
]
DATEPICKER = [
    el(1, None, "body"),
    el(5, 1, "input_text", "", "", id="datepicker", classes="hasDatepicker"),
    el(6, 1, "button", "Submit", id="subbtn"),
]


def run_program(steps: list[dict[str, Any]], pages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Drive the interpreter host-side (as the sandbox would) over a sequence of observations."""
    ns: dict[str, Any] = {}
    exec(compile(program_source(steps), "program", "exec"), ns)
    return [ns["act"](p) for p in pages]


def test_interpreter_sets_checkboxes_then_submits() -> None:
    obs = obs_of("Select alpha and click Submit.", [("target 0", "alpha"), ("button", "submit")], CHECKBOXES)
    steps = [{"op": "check_labels", "words": {"fields_prefix": "target"}}, {"op": "submit"}]
    first = as_data(obs)
    after = json.loads(json.dumps(first))
    for e in after["elements"]:
        if e["ref"] in (3, 5):
            e["value"] = not e["value"]
    after["actions_taken"] = [{}, {}]
    second = json.loads(json.dumps(first))
    second["elements"][2]["value"] = True
    second["actions_taken"] = [{}]
    assert run_program(steps, [first, second, after]) == [
        {"type": "click", "ref": 3},
        {"type": "click", "ref": 5},
        {"type": "submit"},
    ]


def test_interpreter_values_and_missing_elements() -> None:
    data = as_data(
        obs_of("x", [("month", "3"), ("day", "5"), ("year", "2016"), ("d", "10/11/2011")], DATEPICKER)
    )
    assert interpreter.value_of({"date_parts": ["month", "day", "year"], "fmt": "mdy"}, data) == "03/05/2016"
    assert interpreter.value_of({"field": "d", "fmt": "iso"}, data) == "2011-10-11"
    assert interpreter.value_of({"field": "month", "fmt": "month_name"}, data) == "March"
    with pytest.raises(LookupError, match="no element matches"):
        interpreter.locate({"id": "nope"}, data)


def test_search_order_needs_memory_for_the_date_picker() -> None:
    obs = obs_of(
        "Select 03/05/2016 as the date", [("month", "3"), ("day", "5"), ("year", "2016")], DATEPICKER
    )
    found = candidates(obs)
    ids = [c.id for c in found]
    assert ids.index("datepicker:prev:submit") > 2  # the generic order tries plain typing first
    assert len(ids) == len(set(ids))
    assert template_key(obs.utterance, obs.fields) == template_key(
        "Select 04/01/2015 as the date", [("month", "4"), ("day", "1"), ("year", "2015")]
    )


def evidence(
    utterance: str,
    fields: list[tuple[str, str]],
    final: list[dict[str, Any]],
    actions: list[dict[str, Any]],
    ended: bool = True,
    targets: list[dict[str, Any]] | None = None,
) -> Evidence:
    ex = {
        "utterance": utterance,
        "fields": [list(f) for f in fields],
        "actions": actions,
        "targets": targets or [],
        "program_error": None,
        "ended_by_page": ended,
    }
    return Evidence(utterance, {"elements": final}, ex)


def test_verifier_checks_visible_requirements_per_family() -> None:
    v = MiniwobVerifier()
    p = Project("p", "page: click-checkboxes")
    f = [("target 0", "bravo"), ("button", "submit")]
    assert v.verify(p, evidence("Select bravo", f, CHECKBOXES, [{"type": "submit"}])).verdict == "PASS"
    bad = v.verify(p, evidence("Select alpha", [("target 0", "alpha")], CHECKBOXES, [{"type": "submit"}]))
    assert bad.verdict == "FAIL" and any("FAILED" in line for line in bad.evidence)
    date = [el(1, None, "body"), el(5, 1, "input_date", "", "2011-10-11", id="tt")]
    pd = Project("d", "page: enter-date")
    assert (
        v.verify(
            pd, evidence("Enter 10/11/2011", [("target", "10/11/2011")], date, [{"type": "submit"}])
        ).verdict
        == "PASS"
    )
    assert (
        v.verify(
            pd, evidence("Enter 10/11/2011", [("target", "10/11/2011")], date, [{"type": "key", "key": "a"}])
        ).verdict
        == "FAIL"
    )
    # no checker: UNVERIFIED once the page ended the episode, FAIL when nothing was submitted
    pb = Project("b", "page: book-flight")
    assert v.verify(pb, evidence("Book", [], [], [{"type": "click", "ref": 1}])).verdict == "UNVERIFIED"
    assert v.verify(pb, evidence("Book", [], [], [], ended=False)).verdict == "FAIL"


def test_a_submit_step_names_the_button_it_clicks() -> None:
    """The execution record names the element a ``submit`` step clicked (the page's submit button), so
    click-button's check sees the same click the page scored."""
    from rsi_workbench.domains.gui.rsiagent.miniwob import _describe

    obs = obs_of("Click on the Submit button", [("target", "Submit")], CHECKBOXES)
    target = _describe(obs, {"type": "submit"})
    assert target["element"]["text"] == "Submit" and target["element"]["id"] == "subbtn"
    ex = {"targets": [target], "ended_by_page": True, "actions": [{"type": "submit"}]}
    assert ("clicked", True) == check_click({"target": "Submit"}, [], ex)[0][:2]
    assert not check_click({"target": "Cancel"}, [], ex)[0][1]


def test_verifier_email_star_needs_the_right_thread() -> None:
    els = [
        el(1, None, "body"),
        el(2, 1, "div", classes="email-thread"),
        el(3, 2, "div", "Ann", classes="email-sender"),
        el(4, 2, "span", "", classes="star"),
        el(5, 1, "div", classes="email-thread"),
        el(6, 5, "div", "Bob", classes="email-sender"),
        el(7, 5, "span", "", classes="star"),
    ]
    v, p, f = MiniwobVerifier(), Project("e", "page: email-inbox"), [("by", "Bob"), ("task", "star")]
    good = evidence("Find Bob", f, els, [{"type": "click", "ref": 7}], targets=[{"element": els[6]}])
    wrong = evidence("Find Bob", f, els, [{"type": "click", "ref": 4}], targets=[{"element": els[3]}])
    assert v.verify(p, good).verdict == "PASS"
    assert v.verify(p, wrong).verdict == "FAIL"
    reply = evidence("Find Bob", [("by", "Bob"), ("task", "reply")], els, [], targets=[])
    assert v.verify(p, reply).verdict == "UNVERIFIED"


class FakeWorkspace:
    """A test double of MiniwobWorkspace: a fixed page, and a run that records the steps it got."""

    page = "choose-date"

    def __init__(self, obs: GuiObservation) -> None:
        self.obs, self.ran = obs, []

    def observe(self) -> GuiObservation:
        return self.obs

    def run(self, steps: Any) -> dict[str, Any]:
        self.ran.append(list(steps))
        return {
            "utterance": self.obs.utterance,
            "fields": [list(f) for f in self.obs.fields],
            "actions": [],
            "targets": [],
            "program_error": None,
            "ended_by_page": True,
            "final_elements": [],
        }


def test_actor_stores_verified_script_and_uses_it_first() -> None:
    from rsi_workbench.memory import VerifierReport

    obs = obs_of(
        "Select 03/05/2016 as the date", [("month", "3"), ("day", "5"), ("year", "2016")], DATEPICKER
    )
    key = template_key(obs.utterance, obs.fields)
    proj = Project("p1", "page: choose-date")
    actor, ws = BuiltinActor(), FakeWorkspace(obs)
    first = actor.attempt(proj, ws, EMPTY, None)
    mem = actor.distil(first, VerifierReport("FAIL", ("x",), {"date": False}), EMPTY)
    assert (
        first.private["candidate"]["id"]
        in json.loads(mem.read_text(f"lessons/choose-date/{key}.json"))["failed"]
    )
    second = actor.attempt(proj, ws, mem, None)
    assert second.private["candidate"]["id"] != first.private["candidate"]["id"]
    mem2 = actor.distil(second, VerifierReport("PASS", ("ok",), {"date": True}), mem)
    assert script_path("choose-date", key) in mem2 and "procedures/choose-date.md" in mem2
    # a fresh actor on the grown memory runs the stored script first
    ranked = rank("choose-date", key, candidates(obs), mem2)
    assert (
        ranked[0] == ("memory:script", ranked[0][1]) and ranked[0][1].id == second.private["candidate"]["id"]
    )
    # UNVERIFIED writes nothing; a script contradicted as often as it passed is deleted
    assert actor.distil(second, VerifierReport("UNVERIFIED", ("?",)), mem2) == mem2
    third = BuiltinActor().attempt(proj, ws, mem2, None)
    mem3 = third and BuiltinActor().distil(third, VerifierReport("FAIL", ("x",), {"date": False}), mem2)
    assert script_path("choose-date", key) not in mem3
    # memory holds field names and hashes, never the utterance's words
    assert all("03/05/2016" not in mem3.read_text(p) for p in mem3.files)


def _summary(pid: str, ins: str, verdict: str, wave: int = 1) -> OutcomeSummary:
    return OutcomeSummary(pid, ins, verdict, "broad", wave, verdict)  # type: ignore[arg-type]


def test_curriculum_broad_then_saturated_and_deep_on_the_failed_template() -> None:
    cur = BuiltinCurriculum(cover_passes=1)
    targets = (Project("t-a", "page: choose-date", True), Project("t-b", "page: enter-date", True))
    h = parse_handoff(cur.author(CurriculumRequest("broad", 1, targets, None, ())))
    pages = [p.instruction for p in h.projects]
    assert h.decision == "WAVE" and "page: choose-date" in pages and "page: enter-text" in pages
    done = tuple(_summary(p.id, p.instruction, "PASS") for p in h.projects)
    assert (
        parse_handoff(cur.author(CurriculumRequest("broad", 2, targets, None, done))).decision == "SATURATED"
    )
    summary = "page: choose-date; variant: 0123456789ab | tried x"
    deep = parse_handoff(cur.author(CurriculumRequest("deep", 3, targets, None, done, summary, False)))
    assert deep.decision == "WAVE" and all(
        p.instruction == "page: choose-date; variant: 0123456789ab" for p in deep.projects
    )
    assert (
        parse_handoff(cur.author(CurriculumRequest("deep", 4, targets, None, done, None, True))).decision
        == "SATURATED"
    )


def test_instructions_and_disjoint_seeds() -> None:
    assert parse_instruction("page: login-user; seed: 17").seed == 17
    assert parse_instruction("page: email-inbox; variant: 0123456789ab").variant == "0123456789ab"
    for bad in ("log in please", "page: no-such-page", "page: login-user; colour: red"):
        with pytest.raises(ProjectRejected):
            parse_instruction(bad)
    env = MiniwobEnvironment([("click-checkboxes", 2), ("enter-date", 1)], seed=3)
    assert len(env.targets()) == 3 and all(t.is_target for t in env.targets())
    assert all(s >= SPAN for s in env.target_seeds)
    assert all(0 <= env.practice_seed(s) < SPAN for s in range(1, 200, 2))
    with pytest.raises(ProjectRejected, match="reserved"):
        env.open(Project("p", f"page: enter-date; seed: {min(env.target_seeds)}"), seed=1, purpose="practice")
    with pytest.raises(ProjectRejected, match="not a known target"):
        env.open(Project("p", "page: enter-date"), seed=1, purpose="evaluation")

    class Done:
        _raw_reward = 0.5

    assert env.official_score(Done()) == 0.75 and env.official_score(object()) == 0.0


def test_config_errors_name_the_field(tmp_path: Any) -> None:
    from rsi_workbench.cli import load_experiment_config
    from rsi_workbench.config import ConfigError
    from rsi_workbench.experiments.rsiagent.experiment import Config

    shipped = load_experiment_config(ROOT_CONFIGS / "smoke.yaml")
    assert Config.model_validate(shipped.run_config()) == shipped  # what a resume validates
    no_kind = Config.model_validate({"environment": {"targets": [{"page": "enter-date"}]}})
    assert no_kind.environment.kind == "miniwob"  # an environment block without kind is MiniWoB++
    bad = tmp_path / "bad.yaml"
    bad.write_text("experiment: rsiagent\nengine: {ablation: full}\n")
    with pytest.raises(ConfigError, match="ablation"):
        load_experiment_config(bad)
    bad.write_text("experiment: rsiagent\nenvironment: {kind: miniwob, targets: [{page: clik-checkboxes}]}\n")
    with pytest.raises(ConfigError, match="page"):
        load_experiment_config(bad)


def _fake_experiment(path: Path, seed: int, scores: dict[str, dict[str, float]]) -> Path:
    """An experiment directory holding only ``arm_finished`` events (test data for the report)."""
    from rsi_workbench.experiments.rsiagent.experiment import Config
    from rsi_workbench.records import Run

    cfg = Config.model_validate({"seeds": [seed], "ablations": list(scores)})
    targets = {"t-a-0": "page: click-checkboxes", "t-b-0": "page: choose-date"}
    with Run.create(path, cfg.run_config(), kind="rsiagent") as run:
        for ab, sc in scores.items():
            rel = f"arms/{ab}-seed{seed}"
            Run.create(path / rel, {"arm": ab}).close()
            arm = {
                "ablation": ab,
                "seed": seed,
                "run_dir": rel,
                "targets": targets,
                "scores": sc,
                "wall_s": 1.0,
            }
            arm.update(
                episodes=4,
                practice_projects=2,
                brs_projects=1,
                waves=2,
                n_targets=2,
                memory_stats={"n_bytes": 10},
            )
            arm["partial"] = 100 * sum(sc.values()) / len(sc)
            run.append("arm_finished", arm)
    return path


def test_report_pools_seeds_across_experiment_directories(tmp_path: Path) -> None:
    from studies.rsiagent_pooled_report.pooled_report import main

    a = _fake_experiment(
        tmp_path / "s0", 0, {"none": {"t-a-0": 0.0, "t-b-0": 1.0}, "full": {"t-a-0": 1.0, "t-b-0": 1.0}}
    )
    b = _fake_experiment(
        tmp_path / "s1", 1, {"none": {"t-a-0": 0.5, "t-b-0": 0.0}, "full": {"t-a-0": 1.0, "t-b-0": 0.0}}
    )
    from rsi_workbench.experiments.rsiagent.report import report

    out = report([a, b])
    assert "seeds with finished arms [0, 1]" in out
    assert "| all | 2 | 2 | 37.5 ± 17.7 | 25.0 ± 35.4 | 75.0 ± 35.4 | 75.0 ± 35.4 |" in out
    assert "| choose-date | 1 | 2 | 50.0 ± 70.7 |" in out
    assert main([str(a), str(b)]) == 0
