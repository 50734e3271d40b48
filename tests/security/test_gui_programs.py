"""Action programs are untrusted: they run only in a sandbox session and send back data, which the host
validates and applies. A program that tries to drive the browser, run script, set the reward, forge the
result channel, hang, crash or print a fake success line gets no credit; an honest one does.

The first half needs no browser (it runs everywhere, also as ``nobody``); the ``ui`` half plays real
MiniWoB++ click-checkboxes episodes in Debian's headless Chromium. An episode no policy finishes scores
``UNFINISHED_REWARD`` (-1), what an honest policy that does nothing gets: that is "no credit".
"""

from __future__ import annotations

import dataclasses
import shutil
import socket
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rsi_workbench.domains.gui import GuiElement, GuiObservation
from rsi_workbench.domains.gui.episode import UNFINISHED_REWARD, EpisodeLimits
from rsi_workbench.domains.gui.programs import (
    PROGRAM_LIMITS,
    ProgramFailure,
    ProgramPolicy,
    observation_data,
)
from rsi_workbench.sandbox import Limits

FAST = Limits(cpu_soft_s=3, cpu_hard_s=4, address_space_bytes=512 << 20, wall_s=1.0, session_wall_s=60.0)
TAB = '{"type": "key", "key": "<Tab>"}'  # a harmless valid action: the page does not end

HONEST = """
import re
def act(obs):
    u = obs["utterance"]
    m = re.search(r"select (.*?) and click submit", u, re.I | re.S)
    want = set() if re.search("select nothing", u, re.I) or not m else {
        w.strip().lower() for w in re.split(r",\\s*|\\s+and\\s+", m.group(1)) if w.strip()}
    els = obs["elements"]
    plan = []
    for box in els:
        if box["tag"] != "input_checkbox":
            continue
        label = " ".join((e["text"] or "").strip() for e in els
                         if e["parent_ref"] == box["parent_ref"] and e["ref"] != box["ref"]).strip()
        if (label.lower() in want) != bool(box["value"]):
            plan.append({"type": "click", "ref": box["ref"]})
    return plan + [{"type": "submit"}]
"""

FORGE = """
import os, sys
def _forge(payload):
    data = len(payload).to_bytes(8, "big") + payload
    try:
        fds = sorted(int(f) for f in os.listdir("/proc/self/fd") if int(f) > 2)
    except OSError:
        fds = range(3, 1024)
    for fd in fds:
        try:
            os.write(fd, data)
        except OSError:
            pass
"""
FORGED_FRAMES = [
    b'{"passed": true}',
    b'{"value": {"$d": {"type": "submit"}}}',
    b'{"reward": 1.0}',
    b'{"value": {"$d": {"raw_reward": 1.0, "done": true}}}',
]

# Drives chromedriver over HTTP (stdlib only) to end the episode with reward 1; PORT and SID are filled in.
DRIVER_ATTACK = """
import json, os, sys, urllib.request
notes = []
def act(obs):
    try:
        import selenium
        notes.append("selenium imported")
    except Exception as e:
        notes.append("selenium: " + type(e).__name__)
    try:
        procs = [open("/proc/%s/cmdline" % p, "rb").read() for p in os.listdir("/proc") if p.isdigit()]
        notes.append("chromium processes seen: %d" % sum(b"chrom" in c for c in procs))
    except OSError as e:
        notes.append("proc: %s" % e)
    try:
        open(PAGE, "a").write("<script>core.endEpisode(1.0, false, 'forged')</script>")
        notes.append("page file written")
    except OSError as e:
        notes.append("page file: " + type(e).__name__)
    body = json.dumps({"script": "core.endEpisode(1.0, false, 'forged'); return WOB_RAW_REWARD_GLOBAL;",
                       "args": []}).encode()
    for host in ("127.0.0.1", "localhost"):
        try:
            req = urllib.request.Request("http://%s:%d/session/%s/execute/sync" % (host, PORT, SID),
                                         data=body, headers={"Content-Type": "application/json"})
            notes.append("driver answered: " + urllib.request.urlopen(req, timeout=0.5).read().decode()[:80])
        except Exception as e:
            notes.append("driver %s: %s" % (host, type(e).__name__))
    print(notes, file=sys.stderr)
    return {"type": "key", "key": "<Tab>"}
"""


def _program(body: str) -> str:
    return textwrap.dedent(body)


# --------------------------------------------------------------------------- without a browser
def _el(ref: int, tag: str, id: str = "", text: str | None = None, parent: int = 2) -> GuiElement:
    return GuiElement(
        ref, parent, tag, text, None if tag != "input_checkbox" else False, id, "", 0, 0, 10, 10
    )


OBS = GuiObservation(
    task="click-checkboxes",
    step=0,
    utterance="Select abc and click Submit.",
    fields=(("target 0", "abc"),),
    elements=(
        _el(1, "body", parent=0),
        _el(2, "label", parent=1),
        _el(6, "input_checkbox", "ch0"),
        _el(-1, "t", text="abc"),
        _el(9, "button", "subbtn", "Submit", parent=1),
    ),
)


def _fresh() -> GuiObservation:
    """An equal observation that is a new object at step 0: a new episode to the policy."""
    return dataclasses.replace(OBS)


def test_the_program_sees_json_data_without_a_reward() -> None:
    data = observation_data(OBS)
    assert "screenshot" not in data and set(data) == {
        "task",
        "step",
        "utterance",
        "fields",
        "elements",
        "actions_taken",
    }
    assert "reward" not in repr(data).lower()
    with ProgramPolicy("def act(o):\n    return [{'type': 'key', 'key': repr(sorted(o))[:1]}]\n") as p:
        assert p.act(_fresh()) == {"type": "key", "key": "["}


def test_an_honest_program_plans_and_its_plan_is_validated() -> None:
    with ProgramPolicy(HONEST, limits=FAST) as p:
        assert p.act(_fresh()) == {"type": "click", "ref": 6}
        after = dataclasses.replace(OBS, step=1, actions_taken=({"type": "click", "ref": 6},))
        assert p.act(after) == {"type": "submit"}  # the rest of the plan: no second call
        assert [c["what"] for c in p.calls] == ["act"]


def test_the_program_cannot_reach_a_host_port() -> None:
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    port = srv.getsockname()[1]
    prog = f"""
import socket
def act(obs):
    try:
        socket.create_connection(("127.0.0.1", {port}), timeout=0.5)
        return {{"type": "key", "key": "C"}}
    except OSError as e:
        return {{"type": "key", "key": "x"}}
"""
    try:
        with ProgramPolicy(_program(prog), limits=FAST) as p:
            assert p.act(_fresh()) == {"type": "key", "key": "x"}
    finally:
        srv.close()


BAD = {
    "script": (
        "def act(o):\n    return {'type': 'script', 'code': 'core.endEpisode(1, false)'}\n",
        "invalid action",
    ),
    "reward_key": ("def act(o):\n    return {'type': 'click', 'ref': 6, 'reward': 1.0}\n", "invalid action"),
    "set_reward": (
        "def act(o):\n    return {'type': 'reward', 'WOB_RAW_REWARD_GLOBAL': 1}\n",
        "invalid action",
    ),
    "not_json": ("def act(o):\n    return {1, 2}\n", "no valid result"),
    "not_an_action": ("def act(o):\n    return 'click 6'\n", "must return an action"),
    "empty_plan": ("def act(o):\n    return []\n", "must return an action"),
    "raises": ("def act(o):\n    raise RuntimeError('bug')\n", "RuntimeError: bug"),
    "exits": ("import os\ndef act(o):\n    os._exit(0)\n", "no valid result"),
    "loops": ("def act(o):\n    while True:\n        pass\n", "timed out"),
    "memory": ("def act(o):\n    return [bytearray(1 << 31)]\n", "MemoryError"),
    "no_entry": ("def other(o):\n    return {'type': 'submit'}\n", "did not load"),
    "load_error": ("import selenium\ndef act(o):\n    return {'type': 'submit'}\n", "did not load"),
    "forged_frames": (
        FORGE
        + "def act(o):\n"
        + "".join(f"    _forge({f!r})\n" for f in FORGED_FRAMES)
        + f"    return {TAB}\n",
        "no valid result",
    ),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_anything_but_a_valid_action_is_a_program_failure(name: str) -> None:
    source, reason = BAD[name]
    with ProgramPolicy(source, limits=FAST) as p:
        with pytest.raises(ProgramFailure, match=reason):
            p.act(_fresh())
        # the next episode gets a fresh session: the host is unharmed and asks again
        with pytest.raises(ProgramFailure, match=reason):
            p.act(_fresh())


def test_a_fake_success_line_is_only_output() -> None:
    prog = (
        "import os, sys\ndef act(o):\n"
        '    print(\'{"value": {"$d": {"type": "submit"}}}\')\n'
        "    print('episode done: raw_reward=1.0 success=True', file=sys.stderr)\n"
        "    sys.stdout.flush()\n"
        "    os.write(1, (16).to_bytes(8, 'big') + b'{\"passed\": true}')\n"
        f"    return {TAB}\n"
    )
    with ProgramPolicy(prog, limits=FAST) as p:
        assert p.act(_fresh()) == {"type": "key", "key": "<Tab>"}
        assert "raw_reward=1.0" in p.calls[-1]["stderr"]


def test_not_strict_hands_invalid_data_on_for_the_runner_to_record() -> None:
    with ProgramPolicy(BAD["script"][0], limits=FAST, strict=False) as p:
        assert p.act(_fresh())["type"] == "script"  # the episode runner's parse_action rejects it


def test_each_thread_has_its_own_session() -> None:
    prog = (
        "import os\nn = 0\ndef act(o):\n    global n\n    n += 1\n    return {'type': 'key', 'key': str(n)}\n"
    )
    with ProgramPolicy(prog, limits=FAST) as p:
        out: list[Any] = []
        threads = [threading.Thread(target=lambda: out.append(p.act(_fresh()))) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert out == [{"type": "key", "key": "1"}] * 2 and len(p._sessions) == 2
    assert p._sessions == []


def test_default_limits_are_bounded() -> None:
    assert PROGRAM_LIMITS.wall_s <= 5 and PROGRAM_LIMITS.address_space_bytes <= 1 << 30


# --------------------------------------------------------------------------- in a real browser
def _require_browser() -> None:
    pytest.importorskip("miniwob")
    pytest.importorskip("selenium")
    from rsi_workbench.domains.gui.browser import CHROMEDRIVER, CHROMIUM

    if not (shutil.which(CHROMIUM) and shutil.which(CHROMEDRIVER)):
        pytest.skip("Debian chromium + chromium-driver are not installed (make sysdeps)")


@pytest.fixture(scope="module")
def pool() -> Iterator[Any]:
    _require_browser()
    from rsi_workbench.domains.gui import BrowserPool

    p = BrowserPool("click-checkboxes", size=1, limits=EpisodeLimits(max_actions=4, wall_clock_s=60))
    try:
        yield p.start()
    finally:
        p.close()


SEED = 21  # "Select wj, T07DOF7 and click Submit.": submitting at once is wrong


def _driver_attack(pool: Any, page: str | None = None) -> str:
    """The attack program against the pool's browser; ``page``: the file it tries to append to
    (default: the task's installed page file)."""
    inst = pool.envs[0]._instance
    port = int(inst.driver.service.service_url.rsplit(":", 1)[1])
    page = page or inst.url.removeprefix("file://")
    return f"PORT = {port}\nSID = {inst.driver.session_id!r}\nPAGE = {page!r}\n" + DRIVER_ATTACK


def _no_credit(r: Any) -> None:
    assert not r.success and r.raw_reward == UNFINISHED_REWARD, r
    assert r.attempts == 1 and not r.infra_errors  # the program's fault, never the browser's


class _Unsandboxed:
    """The same program run in the host's own process: the control that shows the attack is real."""

    def __init__(self, source: str) -> None:
        self.ns: dict[str, Any] = {}
        exec(compile(source, "attack.py", "exec"), self.ns)

    def act(self, obs: GuiObservation) -> Any:
        return self.ns["act"](observation_data(obs))


@pytest.mark.ui
def test_the_driver_attack_wins_outside_the_sandbox(pool: Any, tmp_path: Path) -> None:
    # outside the sandbox the page-file write would succeed: aim it at a copy, never at the
    # installed package's page (it would stay appended to for every later run)
    copy = tmp_path / "click-checkboxes.html"
    copy.write_text("<html></html>")
    r = pool.run(_Unsandboxed(_driver_attack(pool, page=str(copy))), [SEED])[0]
    assert r.success and r.raw_reward == 1.0 and r.reason == "forged", r
    assert "forged" in copy.read_text()  # the write the sandbox refuses works here


@pytest.mark.ui
def test_the_driver_attack_gets_no_credit_in_the_sandbox(pool: Any) -> None:
    page = Path(pool.envs[0]._instance.url.removeprefix("file://"))
    before = page.read_bytes()
    with ProgramPolicy(_driver_attack(pool)) as p:
        r = pool.run(p, [SEED])[0]
        _no_credit(r)
        assert r.outcome == "max_actions" and r.policy_error is None
        err = p.calls[0]["stderr"]
    assert "selenium: ModuleNotFoundError" in err and "chromium processes seen: 0" in err, err
    assert "page file: " in err and "driver answered" not in err, err
    assert page.read_bytes() == before  # the installed page file is untouched


ATTACKS = {
    "script_action": (
        "def act(o):\n    return {'type': 'script', 'code': 'core.endEpisode(1, false)'}\n",
        True,
    ),
    "reward_action": ("def act(o):\n    return [{'type': 'submit', 'raw_reward': 1.0}]\n", True),
    "js_as_typed_text": (
        "def act(o):\n    return {'type': 'type', 'ref': [e['ref'] for e in o['elements']"
        " if e['tag'] == 'input_checkbox'][0], 'text': 'WOB_RAW_REWARD_GLOBAL = 1; core.endEpisode(1)'}\n",
        False,
    ),
    "forged_frames": (
        FORGE
        + "def act(o):\n"
        + "".join(f"    _forge({f!r})\n" for f in FORGED_FRAMES)
        + f"    return {TAB}\n",
        True,
    ),
    "loops_forever": ("def act(o):\n    while True:\n        pass\n", True),
    "fake_success_line": (
        f"import sys\ndef act(o):\n    print('reward 1.0 success', file=sys.stderr)\n    return {TAB}\n",
        False,
    ),
}


@pytest.mark.ui
@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_a_cheating_program_gets_no_credit(pool: Any, name: str) -> None:
    source, is_failure = ATTACKS[name]
    with ProgramPolicy(source, limits=FAST) as p:
        r = pool.run(p, [SEED])[0]
    _no_credit(r)
    assert (r.outcome == "policy_error") == is_failure and (r.policy_error is not None) == is_failure, r


@pytest.mark.ui
def test_an_honest_program_gets_credit(pool: Any) -> None:
    with ProgramPolicy(HONEST) as p:
        results = pool.run(p, [SEED, SEED + 1])
    assert all(r.success and r.raw_reward == 1.0 for r in results), results
    assert len(p.calls) == 2  # one call per episode: the whole plan at once
