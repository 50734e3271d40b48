"""A GUI episode step by step, read back from a protocol run's events (for the cycle stepper).

Every step of an episode is already in the records: the ``proposal`` event holds the page before
the step (utterance and serialised DOM elements) and every candidate action with its validity (an
invalid one with its reason) and the world model's prediction (each control's checked state after
it, whether a submit right after it would succeed); the ``selection`` event the rank and the chosen
one; the ``observation`` event the page after the executed action and its E0 feedback. Screenshots
are not recorded (the environment's screenshot option is off in the experiment), so the page is
shown as its serialised element tree.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from rsi_workbench.domains.gui.features import StepState, controls
from rsi_workbench.records import Event


class GuiCandidate(NamedTuple):
    """One proposed action: its text, validity, the world model's predicted outcome, rank, chosen."""

    candidate: int  # its index among the step's proposals
    action: str
    valid: bool
    reason: str
    utility: float | None
    p_success: float | None  # predicted: a submit right after this action succeeds
    predicted_checked: str  # predicted checked state of each control after it, e.g. "ch0 0.93, ch1 0.04"
    rank: int | None
    chosen: bool


class GuiStep(NamedTuple):
    """One step of one episode: the page before, the candidates, the chosen action, the page after."""

    task_id: str
    cycle: int
    split: str
    utterance: str
    before: list[dict[str, Any]]
    candidates: list[GuiCandidate]
    chosen: str | None
    after: list[dict[str, Any]] | None  # None: nothing executed (refused, or the run stopped)
    ended: bool
    raw_reward: float | None  # E0, the page's verdict at the episode's end (never shown to the policy)
    checked_after: str  # observed checked states after the action


def is_gui_events(events: Iterable[Event]) -> bool:
    """True when the run's proposals hold GUI page states (an utterance and DOM elements)."""
    for e in events:
        if e.kind == "proposal":
            st = e.payload.get("state")
            return isinstance(st, Mapping) and "utterance" in st and "elements" in st
    return False


def gui_episodes(events: Iterable[Event]) -> list[str]:
    """The episodes (task ids) that made at least one step, in order of first appearance."""
    seen: dict[str, None] = {}
    for e in events:
        if e.kind == "proposal":
            seen.setdefault(str(e.payload["task_id"]), None)
    return list(seen)


def action_text(action: Mapping[str, Any] | None) -> str:
    """``click(6)``, ``type(4, "abc")``, ``submit()``; a model's unparsed line as it was written."""
    if action is None:
        return ""
    kind = action.get("type")
    if kind == "click":
        return f"click({action.get('ref')})"
    if kind == "type":
        return f"type({action.get('ref')}, {action.get('text')!r})"
    if kind in ("submit", "key"):
        return f"{kind}({action.get('key', '') or ''})"
    return str(action.get("raw") or action)


def _checked_text(state: StepState, values: Sequence[float] | None = None) -> str:
    ctrls = controls(state)
    vals = [float(c.checked) for c in ctrls] if values is None else list(values)
    names = [
        next((e.get("id") for e in state.elements if e["ref"] == c.ref), "") or str(c.ref) for c in ctrls
    ]
    return ", ".join(f"{n} {v:.2f}" if values is not None else f"{n} {int(v)}" for n, v in zip(names, vals))


def gui_episode_steps(events: Iterable[Event], task_id: str) -> list[GuiStep]:
    """Every step of episode ``task_id`` in cycle order (the effective events of a protocol run)."""
    props: dict[int, dict[str, Any]] = {}
    sels: dict[int, dict[str, Any]] = {}
    obs: dict[int, dict[str, Any]] = {}
    for e in events:
        if e.payload.get("task_id") != task_id or e.cycle is None:
            continue
        k = int(e.cycle)
        if e.kind == "proposal":
            props[k] = e.payload
        elif e.kind == "selection":
            sels[k] = e.payload
        elif e.kind == "observation":
            obs[k] = e.payload
    return [_step(task_id, k, props[k], sels.get(k, {}), obs.get(k)) for k in sorted(props)]


def _step(
    task_id: str, k: int, prop: Mapping[str, Any], sel: Mapping[str, Any], ob: Mapping[str, Any] | None
) -> GuiStep:
    state = StepState.from_json(prop["state"])
    rank = {int(i): r for r, i in enumerate(sel.get("order", []))}
    chosen_idx = {int(i) for i in sel.get("selected", [])}
    cands = []
    for c in prop["candidates"]:
        i = int(c["index"])
        pred = c.get("prediction") or {}
        ca = (pred.get("extra") or {}).get("checked_after")
        cands.append(
            GuiCandidate(
                i,
                action_text(prop["actions"][c["slot"]]),
                bool(c["valid"]),
                c.get("reason") or "",
                c.get("utility"),
                (pred.get("utility_terms") or {}).get("p_success"),
                _checked_text(state, ca) if ca is not None else "",
                rank.get(i),
                i in chosen_idx,
            )
        )
    chosen = next((c.action for c in cands if c.chosen), None)
    after = ended = raw = None
    checked_after = ""
    if ob is not None:
        o = ob["pair"]["observation"]
        d = o.get("detail", {})
        after = [dict(e) for e in d.get("after", [])]
        ended, raw = bool(d.get("ended")), d.get("raw_reward")
        after_state = StepState(task_id, state.seed, state.utterance, tuple(after))
        checked_after = _checked_text(after_state)
    return GuiStep(
        task_id,
        k,
        str(prop.get("split", "")),
        state.utterance,
        [dict(e) for e in state.elements],
        cands,
        chosen,
        after,
        bool(ended),
        raw,
        checked_after,
    )


def dom_text(elements: Sequence[Mapping[str, Any]], *, changed: set[int] | None = None) -> str:
    """The serialised elements as an indented tree: ``[ref] tag#id "text"``, a checkbox as ``[x]``
    or ``[ ]``; refs in ``changed`` are marked ``*``."""
    kids: dict[Any, list[Mapping[str, Any]]] = {}
    refs = {e["ref"] for e in elements}
    for e in elements:
        parent = e.get("parent_ref") if e.get("parent_ref") in refs else None
        kids.setdefault(parent, []).append(e)
    lines: list[str] = []

    def walk(parent: Any, depth: int) -> None:
        for e in kids.get(parent, []):
            tag = str(e["tag"])
            box = ""
            if tag in ("input_checkbox", "input_radio"):
                box = "[x] " if e.get("value") else "[ ] "
            ident = f"#{e['id']}" if e.get("id") else ""
            text = f' "{e["text"]}"' if e.get("text") else ""
            mark = "*" if changed and e["ref"] in changed else " "
            if int(e["ref"]) < 0:  # a text node: its ref is renumbered on every observation
                lines.append(f"{mark}{'  ' * depth}{text.strip()}")
            else:
                lines.append(f"{mark}{'  ' * depth}{box}[{e['ref']}] {tag}{ident}{text}")
            walk(e["ref"], depth + 1)

    walk(None, 0)
    return "\n".join(lines)


def changed_refs(before: Sequence[Mapping[str, Any]], after: Sequence[Mapping[str, Any]]) -> set[int]:
    """Refs (of ``after``) whose element differs between two pages (value, text or tag), or that appear
    only after; text nodes (negative refs, renumbered on every observation) by parent and text."""

    def key(e: Mapping[str, Any]) -> Any:
        return ("text", e.get("parent_ref"), e.get("text")) if int(e["ref"]) < 0 else e["ref"]

    b = {key(e): e for e in before}
    out = set()
    for e in after:
        old = b.get(key(e))
        if old is None or (int(e["ref"]) >= 0 and old != e):
            out.add(int(e["ref"]))
    return out


def step_parts(step: GuiStep) -> tuple[str, str, str]:
    """A step as (header Markdown, DOM before as Markdown, DOM after as Markdown): the utterance, the
    chosen action and its observed effect, then each page as a code block (changes marked ``*``)."""
    ch = changed_refs(step.before, step.after) if step.after is not None else set()
    verdict = ""
    if step.ended:
        verdict = f" · episode ended, page reward (E0) **{step.raw_reward}**"
    after = "(nothing executed)" if step.after is None else dom_text(step.after, changed=ch) or "(empty page)"
    header = (
        f"**{step.task_id} · cycle {step.cycle}** ({step.split}) — *{step.utterance}*\n\n"
        f"chosen: **{step.chosen or '(none)'}**{verdict}"
        + (f" · observed checked: {step.checked_after}" if step.checked_after else "")
    )
    before_md = f"**DOM before**\n\n```text\n{dom_text(step.before)}\n```"
    after_md = f"**DOM after** (* changed)\n\n```text\n{after}\n```"
    return header, before_md, after_md


def step_markdown(step: GuiStep) -> str:
    """The step as one Markdown text (header, DOM before, DOM after)."""
    return "\n\n".join(step_parts(step))


def candidates_frame(step: GuiStep | None) -> Any:
    """The step's candidates as a DataFrame (the stepper's table; no rows for no step)."""
    import pandas as pd

    rows = [c._asdict() for c in step.candidates] if step is not None else []
    return pd.DataFrame(rows, columns=list(GuiCandidate._fields))
