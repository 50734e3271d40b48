"""The judged call's one-step paths (issue 41 item 8): scalar arguments framed by the judge without
its JSON encoder, scalar results framed by the host in one marshal pass, a ``value`` / ``raised``
frame handed to the broker without a ``CallResult``. Each must give exactly what the general path
gives: the same values, exact types, errors and verdicts; and a plain :class:`Session` call still
reports its own output."""

from __future__ import annotations

import pytest

from rsi_workbench.domains.code_repair.sandbox import Sandbox, Status, default_mode
from rsi_workbench.domains.code_repair.tasks import TestCase
from rsi_workbench.sandbox import Limits, Session, obtain_isolation


@pytest.fixture(scope="module")
def sb() -> Sandbox:
    return Sandbox(mode=default_mode())


def check(body: str) -> TestCase:
    code = "def check(candidate):\n" + "".join("    " + ln + "\n" for ln in body.splitlines())
    return TestCase(id="t", kind="assert", code=code + "\ncheck(f)\n")


ECHO = "def f(*a):\n    return [type(x).__name__ for x in a], list(a)\n"


@pytest.mark.parametrize(
    ("program", "body", "status"),
    [
        # every scalar kind, exact types both ways (bool is not int, 1.0 is a float)
        (
            ECHO,
            "names, got = candidate(None, True, 0, -7, 2.5, 'é\\ud800\"\\\\', 1.0)\n"
            "assert names == ['NoneType', 'bool', 'int', 'int', 'float', 'str', 'float'], names\n"
            "assert got == [None, True, 0, -7, 2.5, 'é\\ud800\"\\\\', 1.0]\n"
            "assert type(got[1]) is bool and type(got[6]) is float",
            Status.AC,
        ),
        # non-finite floats and containers take the tagged path, mixed with scalars
        (
            ECHO,
            "import math\nnames, got = candidate(float('inf'), 1, (2,), {3}, {4: 5}, b'x')\n"
            "assert names == ['float', 'int', 'tuple', 'set', 'dict', 'bytes'], names\n"
            "assert got[0] == math.inf and got[2:] == [(2,), {3}, {4: 5}, b'x']\n"
            "n, g = candidate(float('nan'))\nassert n == ['float'] and g[0] != g[0]",
            Status.AC,
        ),
        # an int too long for str(): the judge's encoder error, caught by the test code as before
        (
            ECHO,
            "try:\n    candidate(10 ** 5000)\nexcept ValueError:\n    pass\nelse:\n    raise AssertionError('sent')\n"
            "assert candidate(5)[1] == [5]",
            Status.AC,
        ),
        # scalar results keep their types; a set / non-str-keyed dict result is rebuilt in the judge
        (
            "def f(k):\n    return {0: True, 1: 1, 2: 1.0, 3: None, 4: 's', 5: {1, 2}, 6: {(1, 2): 3}}[k]\n",
            "assert type(candidate(0)) is bool and type(candidate(1)) is int and type(candidate(2)) is float\n"
            "assert candidate(3) is None and candidate(4) == 's'\n"
            "assert candidate(5) == {1, 2} and candidate(6) == {(1, 2): 3}",
            Status.AC,
        ),
        # a candidate exception reaches the test code with its name and message
        (
            "def f(x):\n    raise KeyError(x)\n",
            "try:\n    candidate('k')\nexcept Exception as e:\n    assert str(e) == \"KeyError: 'k'\", str(e)\n"
            "else:\n    raise AssertionError('no raise')",
            Status.AC,
        ),
        ("def f(x):\n    raise KeyError(x)\n", "assert candidate(1) == 1", Status.RE),
        # a result that cannot cross is the candidate's error, whatever the test code catches
        (
            "def f(x):\n    return object()\n",
            "try:\n    candidate(1)\nexcept BaseException:\n    pass\nassert True",
            Status.RE,
        ),
    ],
)
def test_one_step_paths_give_the_general_paths_verdicts(
    sb: Sandbox, program: str, body: str, status: Status
) -> None:
    out = sb.run_test(program, check(body), "f")
    assert out.status == status, out


def test_a_session_call_still_reports_its_own_output() -> None:
    iso = obtain_isolation((), purpose="test").isolation
    program = "def f(x):\n    print('out', x)\n    return x\n"
    with Session(program, "f", isolation=iso, limits=Limits(), exact_types=True) as s:
        a, b = s.call([1]), s.call([(2, 3)])
    assert (a.kind, a.value, a.stdout) == ("value", 1, "out 1\n")
    assert (b.kind, b.value, b.stdout) == ("value", (2, 3), "out (2, 3)\n")
    assert a.wall_s > 0 and b.wall_s > 0
