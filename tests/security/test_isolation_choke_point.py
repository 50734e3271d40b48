"""One choke point for isolation (:func:`rsi_workbench.sandbox.obtain_isolation`): with bubblewrap
planted as unavailable, EVERY user of the sandbox refuses in ``required`` (a config's ``best_effort``
cannot weaken the environment's ``required``), and in ``best_effort`` each one runs and records plan
``none`` with ``complete: false`` (GUI action programs refuse whatever the mode: they always need
network and PID namespaces). Each user is driven through its lowest public entry, nothing long runs.
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rsi_workbench import sandbox
from rsi_workbench.sandbox import supervisor

MODE_ENV = sandbox.MODE_ENV
NO_NAMESPACES = "pid_namespace"  # named by every refusal of a plan without namespaces


class FakeLLMDouble:
    """Test double for a language model: must never be asked (refusals happen before any call)."""

    identity, name = "double:never-called", "double"

    def chat_batch(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the model was called although the sandbox refused")


@pytest.fixture
def no_bwrap(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """This host without bubblewrap: ``shutil.which('bwrap')`` finds nothing and the probe reruns."""
    real = shutil.which

    def which(name: str, *args: Any, **kwargs: Any) -> str | None:
        return None if name == "bwrap" else real(name, *args, **kwargs)

    monkeypatch.setattr(shutil, "which", which)
    supervisor.probe_isolation.cache_clear()
    yield
    supervisor.probe_isolation.cache_clear()  # later tests probe the real host again


@pytest.fixture
def required(no_bwrap: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(MODE_ENV, "required")


@pytest.fixture
def best_effort(no_bwrap: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(MODE_ENV, "best_effort")


def _assert_bare(rec: dict[str, Any], mode: str = "best_effort") -> None:
    assert rec["plan"] == "none" and rec["complete"] is False and rec["mode"] == mode, rec


# ------------------------------------------------------------------------------------ the rule
def test_the_stricter_mode_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(MODE_ENV, raising=False)
    assert sandbox.effective_mode(None) == "best_effort"
    assert sandbox.effective_mode("required") == "required"
    monkeypatch.setenv(MODE_ENV, "required")
    assert sandbox.effective_mode("best_effort") == "required"
    monkeypatch.setenv(MODE_ENV, "best_effort")
    assert sandbox.effective_mode("required") == "required"
    with pytest.raises(ValueError, match="allowed values"):
        sandbox.effective_mode("sometimes")


def test_required_refuses_naming_what_is_missing_and_the_purpose(required: None) -> None:
    with pytest.raises(sandbox.SandboxUnavailable) as err:
        sandbox.obtain_isolation(purpose="the purpose")
    msg = str(err.value)
    assert "the purpose" in msg and "hidden_host_paths" in msg and NO_NAMESPACES in msg and "none" in msg


def test_a_callers_best_effort_under_env_required_is_refused_and_logged(
    required: None, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="rsi_workbench.sandbox"):
        with pytest.raises(sandbox.SandboxUnavailable, match=MODE_ENV):
            sandbox.obtain_isolation(mode="best_effort", purpose="a config")
    assert any("stricter and wins" in r.getMessage() for r in caplog.records)
    with pytest.raises(sandbox.SandboxUnavailable):
        sandbox.check_mode(supervisor.probe_isolation(()), "best_effort")


def test_best_effort_warns_and_records(best_effort: None, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="rsi_workbench.sandbox"):
        grant = sandbox.obtain_isolation(mode="best_effort", purpose="a test")
    _assert_bare(grant.record())
    assert grant.record()["requested_mode"] == "best_effort" and grant.record()["purpose"] == "a test"
    assert any("incomplete isolation" in r.getMessage() for r in caplog.records)
    with pytest.raises(sandbox.SandboxUnavailable, match=NO_NAMESPACES):  # a user's own needs
        sandbox.obtain_isolation(purpose="needy", needs=("pid_namespace",))


def test_record_in_appends_once(best_effort: None, tmp_path: Path) -> None:
    from rsi_workbench.records import Run

    grant = sandbox.obtain_isolation(purpose="a test")
    with Run.create(tmp_path / "r", {"x": 1}, kind="test") as run:
        assert grant.record_in(run) and not grant.record_in(run)
        run.commit()
        (ev,) = run.events("sandbox_isolation")
    _assert_bare(ev.payload)


# ------------------------------------------------------------------------------- code repair
def test_code_repair_sandbox(required: None, monkeypatch: pytest.MonkeyPatch) -> None:
    from rsi_workbench.domains.code_repair import Sandbox, TestCase
    from rsi_workbench.experiments.code_repair.config import SandboxSettings

    with pytest.raises(sandbox.SandboxUnavailable, match="code repair"):
        Sandbox()
    with pytest.raises(sandbox.SandboxUnavailable, match="code repair"):  # the config cannot weaken it
        Sandbox(SandboxSettings(mode="best_effort").mode)
    monkeypatch.setenv(MODE_ENV, "best_effort")
    sb = Sandbox(SandboxSettings(mode=None).mode)
    out = sb.run_test("def f():\n    return 1\n", TestCase(id="a", kind="io", args=[], expected=1), "f")
    assert out.status == "AC" and out.isolation["complete"] is False
    _assert_bare(sb.isolation_record())
    with pytest.raises(sandbox.SandboxUnavailable):  # a config's required is kept under env best_effort
        Sandbox(SandboxSettings(mode="required").mode)


# ------------------------------------------------------------------------- discovery programs
def _task() -> Any:
    from rsi_workbench.domains.math.circle_packing import CirclePacking

    return CirclePacking(2)


PACKING = "def construct_packing():\n    return [[0.25, 0.25, 0.2], [0.75, 0.75, 0.2]]\n"


def test_math_run_program(required: None, monkeypatch: pytest.MonkeyPatch) -> None:
    from rsi_workbench.domains.math.programs import program_isolation, run_program

    for mode in (None, "best_effort"):
        with pytest.raises(sandbox.SandboxUnavailable, match="discovery programs"):
            run_program(_task(), PACKING, wall_s=20.0, mode=mode)
    monkeypatch.setenv(MODE_ENV, "best_effort")
    res = run_program(_task(), PACKING, wall_s=20.0)
    assert res.info["sandbox_kind"] == "value" and res.valid, res
    _assert_bare(program_isolation().record())


def test_program_agent_execution_path(
    required: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from rsi_workbench.domains.math.program_agent import ProgramAgent
    from rsi_workbench.experiments.dreaming.program_runs import Config, run_experiment

    agent = ProgramAgent(FakeLLMDouble(), _task(), wall_s=20.0)
    answer = "```python\n" + PACKING + "```\n"
    with pytest.raises(sandbox.SandboxUnavailable, match="discovery programs"):
        agent.run(answer)
    cfg = Config(arms=["program"], seeds=[0], calls=1, task={"kind": "circle_packing", "n": 2})
    with pytest.raises(sandbox.SandboxUnavailable):  # before a run directory or a model call
        run_experiment(cfg, tmp_path / "run", llm=FakeLLMDouble())
    assert not (tmp_path / "run").exists()
    monkeypatch.setenv(MODE_ENV, "best_effort")
    res = agent.run(answer)
    assert res.info["sandbox_kind"] == "value" and res.valid, res


# ------------------------------------------------------------------------------ replay policies
POLICY = "def select_batch(view, W):\n    return ['r']\n"


def test_sandboxed_policy_and_the_dreaming_policy_writer(
    required: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from rsi_workbench.domains.math.policy_writer import WriterSettings, open_writer
    from rsi_workbench.records import Run
    from rsi_workbench.replay.dreaming import as_policy
    from rsi_workbench.replay.sandboxed import PolicyProgram, SandboxedPolicy

    prog = PolicyProgram(POLICY, name="p")
    for mode in (None, "best_effort"):
        with pytest.raises(sandbox.SandboxUnavailable, match="policy programs"):
            SandboxedPolicy(prog, mode=mode)
    with pytest.raises(sandbox.SandboxUnavailable, match="policy programs"):
        as_policy(prog, "p")  # what ``dream`` does with every written program
    with Run.create(tmp_path / "arm", {"arm": "dreaming_writer"}, kind="test") as run:
        with pytest.raises(sandbox.SandboxUnavailable, match="policy programs"):
            open_writer(WriterSettings(), run)
        assert not run.events("sandbox_isolation")
        monkeypatch.setenv(MODE_ENV, "best_effort")
        open_writer(WriterSettings(), run)  # the model loads on its first live call: none here
        run.commit()
        (ev,) = run.events("sandbox_isolation")
    _assert_bare(ev.payload)
    with SandboxedPolicy(prog) as pol:
        assert pol.plan_grid([]) == (None, None)  # the prelude's default, computed in the sandbox
        _assert_bare(pol.grant.record())


# ------------------------------------------------------------------ GUI programs and RSIAgent
def test_gui_action_programs_refuse_in_both_modes(required: None, monkeypatch: pytest.MonkeyPatch) -> None:
    from rsi_workbench.domains.gui import ProgramPolicy
    from rsi_workbench.domains.gui.programs import program_isolation

    src = "def act(obs):\n    return {'type': 'key', 'key': '<Tab>'}\n"
    for env_mode in ("required", "best_effort"):
        monkeypatch.setenv(MODE_ENV, env_mode)
        for mode in (None, "best_effort"):
            with pytest.raises(sandbox.SandboxUnavailable, match=f"GUI action programs.*{NO_NAMESPACES}"):
                ProgramPolicy(src, mode=mode)
            with pytest.raises(sandbox.SandboxUnavailable, match=NO_NAMESPACES):
                program_isolation(mode)


def test_rsiagent_action_paths(required: None, monkeypatch: pytest.MonkeyPatch) -> None:
    from rsi_workbench.domains.code_repair import RepairTask, TestCase
    from rsi_workbench.domains.code_repair.rsiagent_env import CodeRepairEnv, CodeRepairSettings
    from rsi_workbench.domains.gui.rsiagent.miniwob import MiniwobEnvironment

    tests = [TestCase(id="a", kind="io", args=[1], expected=2)]
    tasks = [
        RepairTask(
            task_id=t,
            entry_point="f",
            program="def f(x):\n    return x\n",
            public_tests=tests,
            hidden_tests=tests,
        )
        for t in ("T/1", "T/2")
    ]
    settings = CodeRepairSettings(targets=["T/1"], practice=["T/2"])
    with pytest.raises(sandbox.SandboxUnavailable, match="code repair"):
        CodeRepairEnv(settings, tasks=tasks)
    for env_mode in ("required", "best_effort"):  # action programs: namespaces whatever the mode
        monkeypatch.setenv(MODE_ENV, env_mode)
        with pytest.raises(sandbox.SandboxUnavailable, match=NO_NAMESPACES):
            MiniwobEnvironment([("click-button", 1)])
    env = CodeRepairEnv(settings, tasks=tasks)  # best_effort: runs, and the arm records plan none
    _assert_bare(env.sandbox_isolation().record())
    (out,) = env.sandbox.run_suite("def f(x):\n    return x + 1\n", tests, "f")
    assert out.status == "AC" and out.isolation["complete"] is False
