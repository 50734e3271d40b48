"""Gate tuner data: recompute every recorded reliability verdict, trigger and gate with other thresholds.

Each decision is recomputed by the very function the protocol used
(:func:`~rsi_workbench.protocol.decisions.reliability`, ``adaptation_trigger``, ``policy_gate``,
``predictor_gate``, ``assemble``, ``pair_gate``) on the inputs recorded in its event, so a flip
shown here is exactly what those thresholds would have decided on that cycle. Decisions are
recomputed cycle by cycle on the recorded inputs: a flip does not re-run later cycles (their
inputs would differ), which the tuner says.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields, replace
from typing import TYPE_CHECKING, Any, NamedTuple, cast

from rsi_workbench.metrics import LEGACY_METRICS_VERSION, metrics_version_of
from rsi_workbench.protocol.decisions import (
    AdaptationCriteria,
    PairGateCriteria,
    PolicyGateCriteria,
    PredictorGateCriteria,
    RegressionReliabilityCriteria,
    Reliability,
    ReliabilityCriteria,
    adaptation_trigger,
    assemble,
    pair_gate,
    pair_gate_skipped,
    policy_gate,
    predictor_gate,
    regression_reliability,
    reliability,
)
from rsi_workbench.protocol.prequential import window_cycles
from rsi_workbench.viz._style import VERDICT_COLOURS
from rsi_workbench.viz.protocol import ProtocolRun, RunLike, as_protocol_run, as_protocol_runs

if TYPE_CHECKING:
    import plotly.graph_objects as go


@dataclass(frozen=True)
class Thresholds:
    """The declared reliability and gate thresholds a researcher tunes (flat, so URLs and sliders carry them)."""

    min_predictions: int = 20  # reliability: below this many evaluated predictions -> insufficient
    min_groups: int = 3  # reliability: below this many tasks covered -> insufficient
    max_brier: float = 0.25  # reliability: 5-class Brier above this -> unreliable
    max_ece: float = 0.1  # reliability: ECE above this -> unreliable
    min_examples: int = 20  # adaptation trigger: D_adapt sufficient from this many units
    min_utility_gain: float = 0.0  # policy gate (eq. 13)
    min_brier_gain: float = 0.0  # predictor gate (eq. 14)
    max_ranking_drop: float = 0.0  # predictor gate (eq. 14)
    max_utility_drop: float = 0.0  # pair gate (eq. 17)
    max_brier_increase: float = 0.0  # pair gate (eq. 17)

    @classmethod
    def from_settings(cls, settings: dict[str, Any]) -> Thresholds:
        """The thresholds a run declared (its ``loop_opened`` settings)."""
        rel = ReliabilityCriteria(**settings.get("reliability", {}))
        ada = AdaptationCriteria(**settings.get("adaptation", {}))
        g = settings.get("gates", {})
        pol, pred, pair = (
            PolicyGateCriteria(**g.get("policy", {})),
            PredictorGateCriteria(**g.get("predictor", {})),
            PairGateCriteria(**g.get("pair", {})),
        )
        return cls(
            rel.min_predictions, rel.min_groups, rel.max_brier, rel.max_ece, ada.min_examples,
            pol.min_utility_gain, pred.min_brier_gain, pred.max_ranking_drop,
            pair.max_utility_drop, pair.max_brier_increase,
        )  # fmt: skip

    def with_(self, **changes: Any) -> Thresholds:
        return replace(self, **changes)

    def reliability_criteria(self) -> ReliabilityCriteria:
        return ReliabilityCriteria(
            min_predictions=self.min_predictions,
            min_groups=self.min_groups,
            max_brier=self.max_brier,
            max_ece=self.max_ece,
        )

    def settings_patch(self) -> dict[str, Any]:
        """These thresholds as the ``protocol:`` part of a config (what "save as a new config" writes)."""
        return {
            "reliability": {
                "min_predictions": self.min_predictions,
                "min_groups": self.min_groups,
                "max_brier": self.max_brier,
                "max_ece": self.max_ece,
            },
            "adaptation": {"min_examples": self.min_examples},
            "gates": {
                "policy": {"min_utility_gain": self.min_utility_gain},
                "predictor": {
                    "min_brier_gain": self.min_brier_gain,
                    "max_ranking_drop": self.max_ranking_drop,
                },
                "pair": {
                    "max_utility_drop": self.max_utility_drop,
                    "max_brier_increase": self.max_brier_increase,
                },
            },
        }

    @staticmethod
    def names() -> list[str]:
        return [f.name for f in fields(Thresholds)]


class Decision(NamedTuple):
    """One decision of one cycle: what was recorded, what the thresholds decide, and why."""

    run: str
    cycle: int
    decision: str  # reliability | adaptation | policy_gate | predictor_gate | pair_gate
    recorded: str
    recomputed: str
    reasons: str

    @property
    def flipped(self) -> bool:
        return self.recorded != self.recomputed


DECISIONS = ("reliability", "adaptation", "policy_gate", "predictor_gate", "pair_gate")
NOT_RECORDED = "not recorded"  # the new thresholds lead to an evaluation the run never made
NOT_ATTEMPTED = "not attempted"  # the new thresholds skip an evaluation the run made


def _gate_outcome(payload: dict[str, Any]) -> str:
    return "skip" if payload.get("skipped") else ("pass" if payload.get("passed") else "fail")


@dataclass
class _CycleInputs:
    cycle: int
    units: list[tuple[Any, ...]]  # update pairs so far: (task, version, probs, label) or (…, ŷ, σ̂, y)
    reliability: dict[str, Any] | None
    adaptation: dict[str, Any] | None
    policy_trigger: dict[str, Any] | None
    gates: dict[str, dict[str, Any]]  # gate name -> recorded payload
    assembly: dict[str, Any] | None


class GateInputs(NamedTuple):
    """Everything the recompute needs, extracted once per run (thresholds do not change it)."""

    run: str
    declared: Thresholds
    cycles: list[_CycleInputs]
    metrics_version: int = LEGACY_METRICS_VERSION  # the rules the run's decisions were made with
    regression: RegressionReliabilityCriteria | None = None  # a gaussian readout's declared criteria


def _pair_units(pair: dict[str, Any], gaussian: bool) -> list[tuple[Any, ...]]:
    """A recorded pair's reliability units, as :meth:`rsi_workbench.protocol.loop.Loop.units` made them."""
    pred, obs, t = pair["prediction"], pair["observation"], pair["task_id"]
    if gaussian:
        terms = obs.get("utility_terms", {})
        return [
            (t, pred["version"], float(m), float(sd), float(terms[n]))
            for n, (m, sd) in pred.get("gaussian", {}).items()
            if n in terms
        ]
    return [(t, pred["version"], pr, lab) for pr, lab in zip(pred["probs"], obs.get("labels", []))]


def gate_inputs(run: RunLike) -> GateInputs:
    """Per cycle of a protocol run (loaded, or its directory): the reliability units (update pairs
    observed so far) and the recorded decisions; what :func:`recompute` replays under new thresholds.

    ```python
    gi = gate_inputs("runs/notebooks/code_repair/runs/world_adaptive/seed0")
    flips = [d for d in recompute(gi, gi.declared.with_(max_brier=1.0)) if d.flipped]
    ```
    """
    run = as_protocol_run(run)
    gaussian = run.settings.get("readout") == "gaussian"
    # gate_data: prequential records every observation with split "prequential": at the decision of
    # cycle k its update data are the observations of cycles <= k - w_k (protocol.prequential)
    preq = run.settings.get("gate_data") == "prequential"
    frac, window = float(run.settings.get("gate_fraction", 0.3)), run.settings.get("gate_window")
    units: list[tuple[Any, ...]] = []
    pending: list[tuple[int, list[tuple[Any, ...]]]] = []  # prequential: (cycle, units) not yet update data
    out: list[_CycleInputs] = []
    for k in run.cycles:
        for e in run.of("observation", k):
            pair = e.payload["pair"]
            if not pair.get("prediction"):
                continue
            if preq and pair.get("split") == "prequential":
                pending.append((int(pair.get("cycle", k)), _pair_units(pair, gaussian)))
            elif pair.get("split") == "update":
                units.extend(_pair_units(pair, gaussian))
        if preq:
            cut = k - window_cycles(k, frac, window)
            units.extend(u for c, us in pending if c <= cut for u in us)
            pending = [(c, us) for c, us in pending if c > cut]

        def one(kind: str, k: int = k) -> dict[str, Any] | None:
            evs = run.of(kind, k)
            return evs[-1].payload if evs else None

        gates = {e.payload["gate"]: e.payload for e in run.of("gate", k)}
        out.append(
            _CycleInputs(
                k,
                list(units),
                one("reliability"),
                one("adaptation_trigger"),
                one("policy_trigger"),
                gates,
                one("assembly"),
            )
        )
    reg = (
        RegressionReliabilityCriteria(**run.settings.get("regression_reliability", {})) if gaussian else None
    )
    return GateInputs(
        run.name, Thresholds.from_settings(run.settings), out, metrics_version_of(run.settings), reg
    )


def recompute(inputs: GateInputs, t: Thresholds, *, metrics_version: int | None = None) -> list[Decision]:
    """Every recorded decision of a run recomputed with thresholds ``t`` by the protocol's functions.

    Metrics follow the version the run was made with (``inputs.metrics_version``) unless
    ``metrics_version`` asks what another version's rules would have decided."""
    rows: list[Decision] = []
    mv = inputs.metrics_version if metrics_version is None else metrics_version
    rel_c = t.reliability_criteria()
    for c in inputs.cycles:
        verdict_new = _reliability_row(rows, inputs.run, c, inputs.regression or rel_c, mv)
        trig_new = _adaptation_row(rows, inputs.run, c, verdict_new, t)
        g_pi = _component_gate(rows, inputs.run, c.cycle, c.gates.get("policy"), "policy_gate", t)
        g_w = _predictor_gate_row(rows, inputs.run, c, trig_new, t)
        _pair_gate_row(rows, inputs.run, c, g_pi, g_w, trig_new, t)
    return rows


def _reliability_row(
    rows: list[Decision],
    run: str,
    c: _CycleInputs,
    crit: ReliabilityCriteria | RegressionReliabilityCriteria,
    metrics_version: int,
) -> str | None:
    """Recompute the cycle's reliability verdict (eq. 10) on its recorded units; the new verdict.
    A gaussian readout keeps its declared regression criteria (the sliders are the class ones)."""
    if c.reliability is None:
        return None
    if isinstance(crit, RegressionReliabilityCriteria):
        v = regression_reliability(c.units, c.reliability["version"], crit)
    else:
        v = reliability(c.units, c.reliability["version"], crit, metrics_version=metrics_version)
    why = "; ".join(v.reasons) or "meets the criteria"
    rows.append(Decision(run, c.cycle, "reliability", c.reliability["verdict"], v.verdict, why))
    return v.verdict


def _adaptation_row(
    rows: list[Decision], run: str, c: _CycleInputs, verdict_new: str | None, t: Thresholds
) -> bool | None:
    """Recompute the adaptation trigger (eq. 11) from the new verdict; whether it now triggers."""
    a = c.adaptation
    if a is None:
        return None
    crit = AdaptationCriteria(**{**a.get("criteria", {}), "min_examples": t.min_examples})
    verdict = cast(Reliability, verdict_new or a["verdict"])
    td = adaptation_trigger(verdict, a["n_adapt_examples"], a["budget_remaining"], a["estimated_cost"], crit)
    off = [n for n, ok in td.conjuncts.items() if not ok]
    why = "all conjuncts hold" if td.triggered else "fails: " + ", ".join(off)
    on_off = {True: "on", False: "off"}
    rows.append(Decision(run, c.cycle, "adaptation", on_off[bool(a["triggered"])], on_off[td.triggered], why))
    return td.triggered


def _predictor_gate_row(
    rows: list[Decision], run: str, c: _CycleInputs, trig_new: bool | None, t: Thresholds
) -> Any:
    """The predictor gate (eq. 14): recomputed, not attempted (no trigger) or never recorded."""
    rec_w = c.gates.get("predictor")
    if rec_w is not None and trig_new is False:  # the adaptation would not be attempted at all
        why = "adaptation would not trigger"
        rows.append(Decision(run, c.cycle, "predictor_gate", _gate_outcome(rec_w), NOT_ATTEMPTED, why))
        return None
    if rec_w is not None:
        return _component_gate(rows, run, c.cycle, rec_w, "predictor_gate", t)
    if trig_new:  # the new thresholds trigger an adaptation the run never attempted
        why = "adaptation would now trigger; its gate needs a re-run"
        rows.append(Decision(run, c.cycle, "predictor_gate", "n/a", NOT_RECORDED, why))
    return None


def _pair_gate_row(
    rows: list[Decision], run: str, c: _CycleInputs, g_pi: Any, g_w: Any, trig_new: bool | None, t: Thresholds
) -> None:
    """The assembled pair (eq. 15–16) and its pair gate (eq. 17), if the run recorded one."""
    rec_pair, rec_w = c.gates.get("pair"), c.gates.get("predictor")
    if rec_pair is None:
        return
    u_pi = bool(c.policy_trigger and c.policy_trigger.get("triggered"))
    u_w = bool(trig_new) if trig_new is not None else bool(c.adaptation and c.adaptation.get("triggered"))
    asm = assemble(u_pi, g_pi, u_w, g_w if g_w not in (None, NOT_RECORDED) else None)
    rec_asm = c.assembly or {}
    unevaluated = "the assembled pair changes to one the run never evaluated"
    if g_w == NOT_RECORDED or (u_w and rec_w is None):
        new, why = NOT_RECORDED, unevaluated
    elif not asm.anything_changed:
        new, why = "skip", "; ".join(pair_gate_skipped().reasons)
    elif rec_pair.get("skipped") or (
        asm.policy_changed != rec_asm.get("policy_changed")
        or asm.predictor_changed != rec_asm.get("predictor_changed")
    ):
        new, why = NOT_RECORDED, unevaluated
    else:
        tuned = {"max_utility_drop": t.max_utility_drop, "max_brier_increase": t.max_brier_increase}
        crit = PairGateCriteria(**{**rec_pair.get("thresholds", {}), **tuned})
        pg = pair_gate(rec_pair["current"], rec_pair["proposed"], crit, rec_pair.get("n_units", 0), True)
        new, why = _gate_outcome(asdict(pg)), "; ".join(pg.reasons) or "passes"
    rows.append(Decision(run, c.cycle, "pair_gate", _gate_outcome(rec_pair), new, why))


def _component_gate(
    rows: list[Decision], run: str, k: int, rec: dict[str, Any] | None, name: str, t: Thresholds
) -> Any:
    """Recompute a policy or predictor gate from its recorded metrics; returns passed (or NOT_RECORDED)."""
    if rec is None:
        return None
    if any(str(r).startswith("update budget") for r in rec.get("reasons", [])):
        rows.append(Decision(run, k, name, _gate_outcome(rec), _gate_outcome(rec), rec["reasons"][0]))
        return bool(rec.get("passed"))
    if name == "policy_gate":
        gd = policy_gate(
            rec["current"],
            rec["proposed"],
            PolicyGateCriteria(**{**rec.get("thresholds", {}), "min_utility_gain": t.min_utility_gain}),
            rec.get("n_units", 0),
        )
    else:
        tuned = {"min_brier_gain": t.min_brier_gain, "max_ranking_drop": t.max_ranking_drop}
        crit = PredictorGateCriteria(**{**rec.get("thresholds", {}), **tuned})  # keeps the recorded score
        gd = predictor_gate(rec["current"], rec["proposed"], crit, rec.get("n_units", 0))
    rows.append(
        Decision(
            run, k, name, _gate_outcome(rec), _gate_outcome(asdict(gd)), "; ".join(gd.reasons) or "passes"
        )
    )
    return gd.passed


class GateMatrixInfo(NamedTuple):
    """Rows = (run, decision), columns = cycles; cell = recomputed outcome, flips marked."""

    rows: list[str]
    cycles: list[int]
    outcome: list[list[str | None]]
    recorded: list[list[str | None]]
    reasons: list[list[str]]
    n_flipped: int
    n_decisions: int


def gate_matrix_info(decisions: Sequence[Decision]) -> GateMatrixInfo:
    """The data of :func:`plot_gate_matrix`: recomputed decisions as a (run · decision) × cycle grid.

    ```python
    gi = gate_inputs(run)
    info = gate_matrix_info(recompute(gi, gi.declared))
    info.n_flipped  # 0: the recompute reproduces the record
    ```
    """
    cycles = sorted({d.cycle for d in decisions})
    rows: list[str] = []
    for d in decisions:
        label = f"{d.run} · {d.decision}"
        if label not in rows:
            rows.append(label)
    col = {c: i for i, c in enumerate(cycles)}
    row = {r: i for i, r in enumerate(rows)}
    out: list[list[str | None]] = [[None] * len(cycles) for _ in rows]
    rec: list[list[str | None]] = [[None] * len(cycles) for _ in rows]
    why = [[""] * len(cycles) for _ in rows]
    for d in decisions:
        i, j = row[f"{d.run} · {d.decision}"], col[d.cycle]
        out[i][j], rec[i][j], why[i][j] = d.recomputed, d.recorded, d.reasons
    flipped = sum(d.flipped for d in decisions)
    return GateMatrixInfo(rows, cycles, out, rec, why, flipped, len(decisions))


_CODES = {"reliable": 1.0, "pass": 1.0, "on": 0.75, "insufficient": 0.5, "skip": 0.5, "off": 0.25, "n/a": 0.5,
          NOT_RECORDED: 0.5, NOT_ATTEMPTED: 0.5, "unreliable": 0.0, "fail": 0.0}  # fmt: skip


def _get_gate_matrix_info(
    runs: RunLike | Sequence[ProtocolRun] | Sequence[Decision] | GateMatrixInfo,
) -> GateMatrixInfo:
    if isinstance(runs, GateMatrixInfo):
        return runs
    items = as_protocol_runs(runs)  # type: ignore[arg-type]
    if all(isinstance(d, Decision) for d in items):
        return gate_matrix_info(items)  # type: ignore[arg-type]
    decisions = [d for r in items for gi in [gate_inputs(r)] for d in recompute(gi, gi.declared)]
    return gate_matrix_info(decisions)


def plot_gate_matrix(
    runs: RunLike | Sequence[ProtocolRun] | Sequence[Decision] | GateMatrixInfo, *, title: str | None = None
) -> go.Figure:
    """Heatmap of decisions per cycle (green pass/reliable, red fail/unreliable, grey skip/insufficient);
    a cell whose decision flips against the record is outlined and starred.

    ``runs``: decisions from :func:`recompute` (or their :func:`gate_matrix_info`), or protocol runs
    (a run, runs, an experiment directory), whose decisions are recomputed at the declared thresholds.

    ```python
    plot_gate_matrix("runs/notebooks/code_repair").show()
    ```
    """
    import plotly.graph_objects as go

    info = _get_gate_matrix_info(runs)

    z = [[None if o is None else _CODES.get(o, 0.5) for o in r] for r in info.outcome]
    text = [
        ["" if o is None else (f"★ {o}" if o != rc else o) for o, rc in zip(r, rr)]
        for r, rr in zip(info.outcome, info.recorded)
    ]
    hover = [
        [
            f"recorded: {rc}<br>with these thresholds: {o}<br>{w}" if o is not None else ""
            for o, rc, w in zip(r, rr, ww)
        ]
        for r, rr, ww in zip(info.outcome, info.recorded, info.reasons)
    ]
    scale = [[0.0, VERDICT_COLOURS["fail"]], [0.5, VERDICT_COLOURS["skip"]], [1.0, VERDICT_COLOURS["pass"]]]
    fig = go.Figure(
        go.Heatmap(
            z=z, x=[f"cycle {c}" for c in info.cycles], y=info.rows, text=text, texttemplate="%{text}",
            customdata=hover, hovertemplate="%{y}<br>%{x}<br>%{customdata}<extra></extra>",
            colorscale=scale, zmin=0, zmax=1, showscale=False, xgap=2, ygap=2,
        )
    )  # fmt: skip
    fig.update_layout(
        title=title or f"gate decisions: {info.n_flipped} of {info.n_decisions} flip (★)",
        yaxis={"autorange": "reversed"},
        height=max(260, 80 + 26 * len(info.rows)),
        margin={"l": 10, "r": 10, "t": 50, "b": 40},
        template="plotly_white",
    )
    return fig
