"""Cycle stepper: scrub a finished protocol run cycle by cycle, or step a live loop one cycle at a time.

Each step shows every task's candidates (validity, predicted utility, rank), the selection, the
observed feedback, and the learn/retain decisions with their reasons. Stepping runs
``Loop.step()`` in the background (the page stays usable; new events stream in as they land);
it is offered only to the run's owner: a notebook holding the loop, or ``rsi-workbench serve --live``.

    panel serve widgets/cycle_stepper.py --args --run runs/<experiment>/runs/<method>-seed<s>
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

import panel as pn
import param

from rsi_workbench.records import Run
from rsi_workbench.viz.cycles import (
    actions_are_programs,
    candidate_diff,
    cycle_detail,
    cycle_timeline_info,
    diff_markdown,
    plot_cycle_timeline,
)
from rsi_workbench.viz.html import Section, figure_with_states
from rsi_workbench.viz.protocol import load_protocol_run, protocol_run_paths
from rsi_workbench.widgets._app import BackgroundJob, RunTail, served_app

APP_NAME = "cycles"
NO_DIFF_SELECTED = "*Click a candidate row to see its unified diff against the kept program.*"
# the diff pane (and its hint) is shown only where the run's actions are programs (not reactions, GUI steps...)
EXPORT_MAX_DIFFS = 300  # candidate diffs per run in a static report


class CycleStepper(pn.viewable.Viewer):
    """One protocol run, one cycle at a time (``loop`` given = live stepping enabled)."""

    run = param.String(doc="protocol run directory (or an experiment: pick the run with `run_name`)")
    run_name = param.Selector(default=None, objects=[], doc="which run of an experiment")
    cycle = param.Integer(default=1, bounds=(1, None), doc="the cycle shown")
    poll_ms = param.Integer(
        default=1000, bounds=(0, None), doc="how often to look for new events (0 = never)"
    )

    def __init__(self, loop: Any = None, **params: Any):
        super().__init__(**params)
        self._paths = named_run_paths(self.run)
        if not self._paths:
            raise ValueError(f"{self.run}: no protocol run here (no loop_opened event)")
        self.param.run_name.objects = list(self._paths)
        if self.run_name not in self._paths:
            self.run_name = next(iter(self._paths))
        self.loop = loop
        self.job = BackgroundJob()
        self._summary = pn.pane.Markdown(sizing_mode="stretch_width", css_classes=["rsi-cycle-summary"])
        self._timeline = pn.pane.Plotly(sizing_mode="stretch_width", config={"displaylogo": False})
        self._cands = pn.widgets.Tabulator(
            sizing_mode="stretch_width",
            height=300,
            disabled=True,
            show_index=False,
            groupby=["task"],
            layout="fit_data_fill",
        )
        self._decisions = pn.widgets.Tabulator(
            sizing_mode="stretch_width", height=260, disabled=True, show_index=False, layout="fit_data_fill"
        )
        self._sample = pn.pane.Markdown("", sizing_mode="stretch_width", css_classes=["rsi-llm-sample"])
        self._diff = pn.pane.Markdown(
            NO_DIFF_SELECTED, sizing_mode="stretch_width", css_classes=["rsi-candidate-diff"]
        )
        self._cands.selectable = 1
        # a GUI run: one episode's step at this cycle (DOM before/after, candidates, chosen action)
        self._gui_episode = pn.widgets.Select(name="GUI episode", options=[], visible=False)
        self._gui_step = pn.pane.Markdown("", sizing_mode="stretch_width", css_classes=["rsi-gui-step"])
        self._gui_before = pn.pane.Markdown("", sizing_mode="stretch_width", css_classes=["rsi-gui-dom"])
        self._gui_after = pn.pane.Markdown("", sizing_mode="stretch_width", css_classes=["rsi-gui-dom"])
        self._gui_doms = pn.Row(self._gui_before, self._gui_after, sizing_mode="stretch_width")
        self._gui_cands = pn.widgets.Tabulator(
            sizing_mode="stretch_width", height=220, disabled=True, show_index=False, layout="fit_data_fill"
        )
        self._gui_episode.param.watch(lambda e: self._refresh_gui(), "value")
        self._cands.param.watch(self._show_sample, "selection")
        self._slider = pn.widgets.IntSlider(name="cycle", start=1, end=2, value=1)
        self._prev = pn.widgets.Button(name="◀ previous cycle")
        self._next = pn.widgets.Button(name="next cycle ▶", button_type="primary")
        self._step = pn.widgets.Button(name="▶▶ step one cycle (live)", button_type="success")
        self._job_status = pn.pane.Markdown("", css_classes=["rsi-job-status"])
        self._run_select = pn.widgets.Select.from_param(
            self.param.run_name, name="run", visible=len(self._paths) > 1
        )
        self._slider.param.watch(lambda e: setattr(self, "cycle", e.new), "value_throttled")
        self._prev.on_click(lambda e: self._move(-1))
        self._next.on_click(lambda e: self._move(+1))
        self._step.on_click(self._on_step)
        self.param.watch(self._load, "run_name")
        self.param.watch(self._refresh, "cycle")
        self._load()
        if self.poll_ms:
            pn.state.onload(self._start_polling)

    def _start_polling(self) -> None:
        pn.state.add_periodic_callback(self._poll, period=self.poll_ms)

    # -- data ------------------------------------------------------------------------------------
    def _load(self, *_: Any) -> None:
        path = self._paths[self.run_name]
        self._tail = RunTail(path)
        self._tail.poll()
        self._pr = load_protocol_run(path)
        self._sync_programs()
        self._max = max(self._pr.cycles, default=0)
        self._slider.end = max(2, self._max)
        self._slider.disabled = self._max <= 1
        if self.cycle != max(1, self._max):
            self.cycle = max(1, self._max)
        else:
            self._refresh()

    def _poll(self) -> None:
        if self._tail.poll():
            self._pr = load_protocol_run(self._paths[self.run_name])
            self._sync_programs()
            at_end = self.cycle >= self._max
            self._max = max(self._pr.cycles, default=0)
            self._slider.end = max(2, self._max)
            self._slider.disabled = self._max <= 1
            if at_end and self.cycle != max(1, self._max):
                self.cycle = max(1, self._max)
            else:
                self._refresh()
        self._show_job()

    def _sync_programs(self) -> None:
        """Show the diff pane, with its "click to see the diff" hint, only where actions are programs."""
        self._programs = actions_are_programs(self._pr)
        self._diff.visible = self._programs
        if not self._programs:
            self._diff.object = ""

    def _move(self, d: int) -> None:
        self.cycle = min(max(1, self.cycle + d), max(1, self._max))

    # -- live stepping ---------------------------------------------------------------------------
    def _on_step(self, *_: Any) -> None:
        if self.loop is None or getattr(self.loop, "finished", False):
            self._job_status.object = "the loop is finished: nothing left to step"
            return
        if self.job.start(f"cycle {self.loop.k + 1}", self.loop.step):
            self._job_status.object = f"running {self.job.label} in the background…"
        self._step.disabled = True

    def _show_job(self) -> None:
        if self.loop is None or not self.job.label:
            return
        if self.job.running:
            self._job_status.object = (
                f"running {self.job.label} in the background… (events so far: {len(self._tail.events)})"
            )
            return
        self._step.disabled = bool(getattr(self.loop, "finished", False))
        if self.job.error:
            self._job_status.object = f"[failed] {self.job.label} failed:\n```\n{self.job.error}\n```"
        else:
            self._job_status.object = f"[done] {self.job.label} done" + (
                " — the loop is finished" if self._step.disabled else ""
            )

    # -- view ------------------------------------------------------------------------------------
    def _refresh(self, *_: Any) -> None:
        k = self.cycle
        if self._slider.value != k:
            self._slider.value = k
        self._prev.disabled = k <= 1
        self._next.disabled = k >= self._max
        info = cycle_timeline_info(self._pr)
        fig = plot_cycle_timeline(info, title=f"{self._pr.name}: cycle timeline ({self._pr.rule})")
        if self._max:
            fig.add_vrect(x0=k - 0.4, x1=k + 0.4, fillcolor="#F58518", opacity=0.12, line_width=0)
        self._timeline.object = fig
        if not self._max:
            self._summary.object = f"### {self._pr.name}\nno finished cycle yet"
            return
        d = cycle_detail(self._pr, k)
        c = d.candidates
        sel = c[c["selected"]]
        solved = int((sel["observed"] == "solved").sum()) if len(sel) else 0
        self._summary.object = (
            f"### {self._pr.name} · **cycle {k} of {self._max}**\n"
            f"{c['task'].nunique()} tasks · {len(c)} candidates ({int(c['valid'].sum())} valid) · "
            f"{len(sel)} selected by {self._pr.rule} · {solved} solved · decisions: "
            + ", ".join(f"{r['decision']} **{r['outcome']}**" for r in d.decisions)
        )
        self._cands.value = c
        if self._cands.selection:
            self._cands.selection = []  # a row of another cycle: its diff would not be this cycle's
        self._show_sample()
        self._decisions.value = __import__("pandas").DataFrame(
            d.decisions, columns=["decision", "outcome", "reasons"]
        )
        self._refresh_gui()

    def _refresh_gui(self) -> None:
        """A GUI run's episode step at this cycle; hidden for other runs."""
        view = gui_step_view(self._pr, self._gui_episode.value, self.cycle)
        for w in (self._gui_episode, self._gui_step, self._gui_doms, self._gui_cands):
            w.visible = view is not None
        if view is None:
            return
        if list(self._gui_episode.options) != view.episodes:
            self._gui_episode.options = view.episodes
        if self._gui_episode.value != view.episode:
            self._gui_episode.value = view.episode  # re-enters once with the same view
            return
        self._gui_step.object, self._gui_before.object, self._gui_after.object = view.parts
        self._gui_cands.value = view.candidates

    def _show_sample(self, *_: Any) -> None:
        """The selected candidate's unified diff against the kept program, and for a model-proposed
        one its prompt and raw answer (invalid ones with their reason)."""
        c, sel = self._cands.value, self._cands.selection
        if c is None or not sel or sel[0] >= len(c):
            self._sample.object = ""
            self._diff.object = NO_DIFF_SELECTED if self._programs else ""
            return
        row = c.iloc[sel[0]]
        if self._programs:
            self._diff.object = diff_markdown(
                candidate_diff(self._pr, str(row["task"]), self.cycle, int(row["candidate"]))
            )
        s = llm_sample(self._paths[self.run_name], str(row["task"]), self.cycle, int(row["candidate"]))
        self._sample.object = (
            sample_markdown(s) if s else "(not a model-proposed candidate: no prompt or answer)"
        )

    def __panel__(self) -> pn.viewable.Viewable:
        return pn.Column(
            pn.Row(
                self._run_select,
                self._prev,
                self._slider,
                self._next,
                *([self._step] if self.loop is not None else []),  # read-only: no stepping at all
                sizing_mode="stretch_width",
            ),
            self._job_status,
            self._summary,
            self._timeline,
            pn.pane.Markdown(
                "**Candidates** (rank = the selection rule's order; observed = feedback of the executed one)"
            ),
            self._cands,
            self._diff,
            self._sample,
            pn.pane.Markdown("**Learn and retain decisions** (with the reasons recorded in their events)"),
            self._decisions,
            self._gui_episode,
            self._gui_step,
            self._gui_cands,
            self._gui_doms,
            sizing_mode="stretch_width",
        )


def named_run_paths(run: str | Path) -> dict[str, Path]:
    """The protocol runs at ``run`` by name: the directory's name, or its path under the experiment
    when names repeat (a GUI experiment's ``runs/<method>-seed<s>/gen<g>``)."""
    paths = protocol_run_paths(run)
    if len({p.name for p in paths}) == len(paths):
        return {p.name: p for p in paths}
    root = Path(run)
    return {str(p.relative_to(root / "runs") if p.is_relative_to(root / "runs") else p): p for p in paths}


class GuiStepView(NamedTuple):
    """One GUI episode's step at a cycle: the episodes to pick from, the one shown, its HTML and candidates."""

    episodes: list[str]
    episode: str
    parts: tuple[str, str, str]  # header, DOM before, DOM after (Markdown)
    candidates: Any  # pandas.DataFrame of GuiCandidate rows


def gui_step_view(pr: Any, episode: str | None, cycle: int) -> GuiStepView | None:
    """The step of ``episode`` (default: the first episode acting in ``cycle``) in a GUI protocol run;
    None for a run that is not a GUI run."""
    from rsi_workbench.domains.gui import steps

    if not steps.is_gui_events(pr.events):
        return None
    episodes = steps.gui_episodes(pr.events)
    acting = [str(p.payload["task_id"]) for p in pr.of("proposal", cycle)]
    if episode not in episodes:
        episode = acting[0] if acting else episodes[0] if episodes else ""
    step = next((s for s in steps.gui_episode_steps(pr.events, episode) if s.cycle == cycle), None)
    if step is None:
        done = steps.gui_episode_steps(pr.events, episode)
        text = f"**{episode}**: no step in cycle {cycle} (the episode made {len(done)} steps"
        text += f", in cycles {[s.cycle for s in done]})" if done else ")"
        return GuiStepView(episodes, episode, (text, "", ""), steps.candidates_frame(None))
    return GuiStepView(episodes, episode, steps.step_parts(step), steps.candidates_frame(step))


def llm_sample(run: Path, task: str, cycle: int, index: int) -> dict[str, Any] | None:
    """The model sample behind candidate ``index`` of ``task`` in ``cycle``: its prompt (from the
    coder run's artifacts, ``<experiment>/coder/seed<s>``), raw answer, validity and reason; None
    for a candidate no model proposed."""
    pr = load_protocol_run(run)
    for p in pr.of("proposal", cycle):
        if p.payload["task_id"] != task:
            continue
        cand = next((c for c in p.payload["candidates"] if int(c["index"]) == index), None)
        if cand is None:
            return None
        meta = p.payload["actions"][cand["slot"]].get("meta", {})
        if meta.get("coder") != "llm":
            return None
        seed = pr.settings.get("seed", Run.open(run).config.get("seed"))
        prompt = None
        coder_run = Path(run).parent.parent / "coder" / f"seed{seed}"
        try:
            prompt = Run.open(coder_run).artifacts.get(meta["prompt_sha256"]).decode()
        except Exception:  # noqa: BLE001 - a run copied without its coder run still shows the answer
            prompt = None
        return {
            "sample": meta.get("sample"),
            "valid": bool(cand["valid"]),
            "reason": cand.get("reason") or "",
            "raw": meta.get("raw", ""),
            "finish_reason": meta.get("finish_reason", ""),
            "prompt": prompt,
            "prompt_sha256": meta.get("prompt_sha256"),
        }
    return None


def sample_markdown(s: dict[str, Any]) -> str:
    """A model sample as Markdown: validity (with the reason), prompt and raw answer."""
    head = "valid" if s["valid"] else f"**invalid**: {s['reason']}"
    prompt = (
        s["prompt"]
        if s["prompt"] is not None
        else f"(prompt {s['prompt_sha256']} not found in the coder run)"
    )
    return (
        f"**Model sample {s['sample']}** — {head} (finish: {s['finish_reason']})\n\n"
        f"<details><summary>prompt</summary>\n\n```\n{prompt}\n```\n</details>\n\n"
        f"**raw answer**\n\n```\n{s['raw']}\n```"
    )


def diff_section(pr: Any) -> Section | None:
    """Static report part: every recorded candidate's unified diff against the kept program, per
    cycle and task (collapsed; None when the run's actions are not programs)."""
    details: list[tuple[str, str]] = []
    total = 0
    for k in pr.cycles:
        c = cycle_detail(pr, k).candidates
        for row in c.itertuples(index=False):
            d = candidate_diff(pr, str(row.task), k, int(row.candidate))
            if d is None:
                continue
            total += 1
            if len(details) >= EXPORT_MAX_DIFFS:
                continue
            verdict = "valid" if d.valid else f"invalid: {d.reason}"
            extra = " · selected" if row.selected else ""
            extra += f" · observed {row.observed}" if isinstance(row.observed, str) else ""  # NaN: not run
            summary = f"cycle {k} · {d.task} · candidate {d.candidate} · {verdict}{extra}"
            details.append((summary, d.diff or "(identical to the kept program)"))
    if not total:
        return None
    text = (
        f"{total} recorded candidates; click one for its unified diff against the program the task kept "
        "in that cycle" + (f" (the first {len(details)} shown)" if len(details) < total else "")
    )
    return Section(f"Candidate diffs · {pr.name}", text, [], details=details)


def applies(run: Path, kinds: set[str]) -> bool:
    """For protocol runs and experiments grouping them (not a reactions experiment: its hundreds of
    protocol runs are opened one at a time)."""
    return "loop_opened" in kinds or ("cohort_finished" not in kinds and bool(protocol_run_paths(run)))


def build(run: Path, extra: dict[str, str], live: Any = None) -> CycleStepper:
    """The stepper for ``run``; with ``live`` (a loop from :func:`open_live`) it can step it."""
    view = CycleStepper(run=str(run), loop=live)
    if pn.state.location is not None:
        pn.state.location.sync(view, {"cycle": "cycle", "run_name": "run"})
    return view


def open_live(run: Path, owner: Any) -> Any:
    """Once per ``serve --live``: the loop of the run's first unfinished protocol run, or None."""
    return open_live_loop(run, owner)


def open_live_loop(run: Path, owner: Any) -> Any:
    """Rebuild the engine's loop for an unfinished code-repair or ``experiment: protocol`` run so the
    owner can step it (None if finished)."""
    import json

    from rsi_workbench.experiments.code_repair import experiment as cr
    from rsi_workbench.protocol.loop import Loop
    from rsi_workbench.records import Run

    paths = protocol_run_paths(run)
    for p in paths:
        cfg = json.loads((p / "config.json").read_text())
        if cfg.get("experiment") == "protocol":  # a domain of one's own (experiment: protocol)
            from rsi_workbench.experiments.protocol_plugin import open_live_loop as open_own

            loop = open_own(p, owner)
            if loop is not None:
                return loop
            continue
        if "method" not in cfg or not load_protocol_run(p).of("loop_opened"):
            continue
        pr = load_protocol_run(p)
        if any(e.payload.get("report", {}).get("finished") for e in pr.of("cycle_finished")):
            continue
        config = cr.Config.model_validate(cfg["experiment"])
        from rsi_workbench.domains.code_repair import Sandbox

        tasks = cr.load_tasks(config.tasks)
        env = cr.CodeRepairEnvironment(
            tasks, Sandbox(config.sandbox.mode), cache=cr.ExecutionCache(p.parent.parent / "exec_cache.jsonl")
        )
        predictor = cr.build_predictor(config, cfg["method"], cfg["seed"], tasks, env, p.parent.parent)
        spec = cr.make_spec(
            config, env, tasks, predictor, cfg["method"], seed=cfg["seed"], out=p.parent.parent
        )
        handle = owner if Path(owner.path) == p else Run.open(p, mode="a")
        return Loop.open(spec, handle, cr.method_settings(config.protocol, cfg["method"]), seed=cfg["seed"])
    return None


def export_sections(run: Path) -> list[Section]:
    """Static report part: each run's cycle timeline with a pre-computed slider over cycles."""
    figs = []
    for p in protocol_run_paths(run):
        pr = load_protocol_run(p)
        info = cycle_timeline_info(pr)
        states, labels = [], []
        for k in pr.cycles:
            f = plot_cycle_timeline(info, title=f"{pr.name}: cycle {k}")
            f.add_vrect(x0=k - 0.4, x1=k + 0.4, fillcolor="#F58518", opacity=0.12, line_width=0)
            states.append(f)
            labels.append(str(k))
        figs.append(
            figure_with_states(states, labels, prefix="cycle ") if states else plot_cycle_timeline(info)
        )
    from rsi_workbench.viz.calibration import (
        calibration_info,
        plot_calibration_curves,
        plot_reliability_diagram,
    )

    cal = calibration_info([load_protocol_run(p) for p in protocol_run_paths(run)])
    sections = [
        Section("Cycles", "proposals → predictions → selection → feedback → gates, per cycle and run", figs)
    ]
    sections.extend(s for p in protocol_run_paths(run) if (s := diff_section(load_protocol_run(p))))
    if len(cal.per_cycle):
        text = "every proposed candidate's predicted test outcomes against its audited outcome (metrics only)"
        sections.append(
            Section("Prediction quality", text, [plot_reliability_diagram(cal), plot_calibration_curves(cal)])
        )
    return sections


if pn.state.served:
    served_app(build)
