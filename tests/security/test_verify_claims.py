"""``rsi-workbench verify``: anyone's construction re-scored exactly (rational arithmetic on the
floats' exact values), its verdict independent of rounding; NaN, out-of-bounds circles, overlaps and
inflated claims are refused with their messages; plain JSON input only (runs as any user)."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from rsi_workbench.cli import main
from rsi_workbench.domains.math.autocorrelation import evaluate_steps
from rsi_workbench.domains.math.verify import verify_c1, verify_packing

REPO = Path(__file__).resolve().parents[2]
N26 = REPO / "benchmarks" / "data" / "headline" / "packings" / "circle_packing_n26_best.json"
FOUR = {"centers": [[0.25, 0.25], [0.75, 0.25], [0.25, 0.75], [0.75, 0.75]], "radii": [0.25] * 4}


def run(tmp_path: Path, obj: Any, *args: str, capsys: Any) -> tuple[int, str]:
    p = tmp_path / "c.json"
    p.write_text(obj if isinstance(obj, str) else json.dumps(obj))
    capsys.readouterr()
    rc = main(["verify", str(p), *args])
    cap = capsys.readouterr()
    return rc, cap.out + cap.err


def test_the_committed_n26_packing_and_its_tolerance(tmp_path: Path, capsys: Any) -> None:
    """It holds at tol 1e-9 (the task evaluator's), not at tol 0: exactly, six circles leave the
    square by up to 2.4e-15 and 29 pairs overlap by up to 7.4e-15 (the optimiser's float rounding).
    It holds at any tol >= 7.357e-15, and shrinking every radius by that is valid at tol 0 exactly,
    with a sum of 2.6359830849174 — still above the best-known 2.635983."""
    capsys.readouterr()
    assert main(["verify", str(N26), "--tol", "1e-9", "--claim", "2.635983"]) == 0
    out = capsys.readouterr().out
    assert "verdict: VALID" in out and "claim 2.635983: HOLDS" in out
    assert "sum of radii: 2.6359830849176068418" in out
    assert "holds at any tol >= 7.35713458905457767" in out and "valid at tol 0 (checked exactly)" in out
    assert main(["verify", str(N26)]) == 1  # tol 0: the exact verdict, not a rounded one
    out = capsys.readouterr().out
    assert "verdict: INVALID" in out and "circle 12 leaves the unit square by 2.374e-15" in out
    assert "... 19 more overlapping pairs" in out  # 29 in all, 10 listed
    assert main(["verify", str(N26), "--tol", "7.4e-15"]) == 0
    assert main(["verify", str(N26), "--tol", "7.3e-15"]) == 1


def test_nan_overlap_and_out_of_bounds_are_rejected(tmp_path: Path, capsys: Any) -> None:
    assert run(tmp_path, FOUR, "--claim", "1", capsys=capsys)[0] == 0  # touching circles, exactly valid
    nan = '{"centers": [[NaN, 0.25], [0.75, 0.25]], "radii": [0.25, 0.25]}'
    rc, out = run(tmp_path, nan, capsys=capsys)
    assert rc == 1 and "circle 0: x is nan (not finite)" in out
    over = json.loads(json.dumps(FOUR))
    over["radii"][0] = 0.2500001
    rc, out = run(tmp_path, over, capsys=capsys)
    assert rc == 1 and "circles 0 and 1 overlap by 1.001e-7 (beyond tol 0)" in out
    assert "circle 0 leaves the unit square by 1.001e-7" in out
    assert run(tmp_path, over, "--tol", "1e-6", capsys=capsys)[0] == 0  # within the declared tolerance
    outside = {"centers": [[0.5, 0.5], [1.2, 0.5]], "radii": [0.1, 0.1]}
    rc, out = run(tmp_path, outside, capsys=capsys)
    assert rc == 1 and "circle 1 leaves the unit square by 0.3" in out
    rc, out = run(tmp_path, {"centers": [[0.5, 0.5]], "radii": [-0.1]}, capsys=capsys)
    assert rc == 1 and "negative radius" in out


def test_a_claim_above_the_true_value_is_refused(tmp_path: Path, capsys: Any) -> None:
    rc, out = run(tmp_path, FOUR, "--claim", "1.0000001", capsys=capsys)
    assert rc == 1 and "claim 1.0000001: DOES NOT HOLD" in out
    # the claim is read exactly from its decimal text and compared with the exact sum
    # 2.63598308491760684180...: 2.6359830849176068 holds, 2.6359830849176069 does not (at tol 0)
    exact = verify_packing([tuple(c) for c in json.loads(N26.read_text())["circles"]], Fraction("1e-9"))
    assert exact.claim_holds(Fraction("2.6359830849176068"), Fraction(0)) is True
    assert exact.claim_holds(Fraction("2.6359830849176069"), Fraction(0)) is False
    assert exact.claim_holds(Fraction("2.6359830849176069"), Fraction("1e-9")) is True
    capsys.readouterr()
    assert main(["verify", str(N26), "--tol", "1e-9", "--claim", "2.636"]) == 1
    assert "DOES NOT HOLD" in capsys.readouterr().out


def test_autocorrelation_steps_exact(tmp_path: Path, capsys: Any) -> None:
    h = [0.3, 1.0, 0.7, 1.1, 0.2]
    v = verify_c1(h)
    assert v.valid and float(v.value) == pytest.approx(evaluate_steps(h, 5).value, rel=1e-15)
    a = [Fraction(x) for x in h]  # the definition, term by term
    conv = [sum(a[i] * a[k - i] for i in range(len(a)) if 0 <= k - i < len(a)) for k in range(9)]
    assert v.value == 2 * 5 * max(conv) / sum(a) ** 2
    rc, out = run(tmp_path, h, "--claim", str(float(v.value) + 1e-9), capsys=capsys)
    assert rc == 0 and "autocorrelation_c1" in out and "HOLDS" in out
    rc, out = run(tmp_path, {"heights": h}, "--claim", "1.2", capsys=capsys)  # a bound below the truth
    assert rc == 1 and "DOES NOT HOLD" in out
    rc, out = run(tmp_path, [0.5, -0.1, 0.3], capsys=capsys)
    assert rc == 1 and "height 1 is negative" in out
    rc, out = run(tmp_path, "[0.5, Infinity]", capsys=capsys)
    assert rc == 1 and "height 1 is inf (not finite)" in out


def test_bad_input_is_status_2(tmp_path: Path, capsys: Any) -> None:
    assert run(tmp_path, "not json", capsys=capsys)[0] == 2
    assert run(tmp_path, {"centers": [[0.5, "0.5"]], "radii": [0.1]}, capsys=capsys)[0] == 2
    assert run(tmp_path, {"centers": [[0.5, 0.5]], "radii": [0.1, 0.2]}, capsys=capsys)[0] == 2
    assert run(tmp_path, {"circles": [[0.5, 0.5, 0.1]]}, "--n", "26", capsys=capsys)[0] == 2
    assert run(tmp_path, FOUR, "--tol", "-1", capsys=capsys)[0] == 2
    assert run(tmp_path, FOUR, "--claim", "abc", capsys=capsys)[0] == 2
    capsys.readouterr()
    assert main(["verify", str(tmp_path / "missing.json")]) == 2
