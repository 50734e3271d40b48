"""The built-in MiniWoB++ verifier: visible requirements against the final page, never the page's reward.

It sees :class:`~rsi_workbench.memory.Evidence` only: the utterance (requirements), the DOM before the
episode's last action (``final_state``) and the execution record (actions with the element each one
targeted, invalid actions, the program's error, whether the page ended the episode). It never calls
or copies MiniWoB++'s scorer. What it checks, per page family:

- checkboxes (click-checkboxes, -large, -transfer): every checkbox is checked iff its label is one of
  the words the utterance lists; the last action submitted; the page ended the episode.
- fields (enter-text, enter-password, login-user, enter-date): every requested value sits in an input
  (an input whose id is the field's name must hold that field; a date input holds the date as
  yyyy-mm-dd; both password inputs hold the password); submitted; the page ended the episode.
- autocomplete (use-autocomplete): the input's value starts (and, if asked, ends) with the requested strings;
  submitted; ended.
- datepicker (choose-date, -easy, -medium, -nodelay): the picker's input holds the requested date as
  mm/dd/yyyy; submitted; ended.
- fields also covers enter-text-dynamic, autocomplete use-autocomplete-nodelay.
- click (click-button, click-link, click-dialog-2): the last action clicked an element whose text is the
  requested one; ended.
- option (click-option): exactly the radio option labelled with the requested text is selected; submitted;
  ended.
- email-inbox and email-inbox-delete, star/delete tasks: the last action clicked the star/trash icon inside the email thread
  whose sender is the requested one; ended.
Every other page or task (e.g. book-flight, email replies) answers UNVERIFIED when the page ended the
episode (no checker can decide) and FAIL when it did not (nothing was submitted: visible).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from rsi_workbench.memory import Evidence, Project, VerifierReport

from .miniwob import parse_instruction

Check = tuple[str, bool, str]  # (name, passed, evidence line)
FAMILIES = {
    "checkboxes": ("click-checkboxes", "click-checkboxes-large", "click-checkboxes-transfer"),
    "fields": ("enter-text", "enter-text-dynamic", "enter-password", "login-user", "enter-date"),
    "autocomplete": ("use-autocomplete", "use-autocomplete-nodelay"),
    "datepicker": ("choose-date", "choose-date-easy", "choose-date-medium", "choose-date-nodelay"),
    "click": ("click-button", "click-link", "click-dialog-2"),
    "option": ("click-option",),
    "email": ("email-inbox", "email-inbox-delete"),
}
COMMIT = ({"type": "submit"}, {"type": "key", "key": "<Enter>"})


def family(page: str) -> str | None:
    return next((f for f, pages in FAMILIES.items() if page in pages), None)


def _fields(ex: Mapping[str, Any]) -> dict[str, str]:
    return {str(k): str(v) for k, v in ex.get("fields") or []}


def _label(box: Mapping[str, Any], els: Sequence[Mapping[str, Any]]) -> str:
    return " ".join(
        (e.get("text") or "").strip()
        for e in els
        if e["parent_ref"] == box["parent_ref"] and e["ref"] != box["ref"] and (e.get("text") or "").strip()
    )


def _inputs(els: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return [e for e in els if str(e["tag"]).startswith("input_") or e["tag"] == "textarea"]


def _committed(ex: Mapping[str, Any]) -> Check:
    acts = list(ex.get("actions") or [])
    last = acts[-1] if acts else None
    ok = last is not None and any(all(last.get(k) == v for k, v in c.items()) for c in COMMIT)
    return ("submitted", ok, f"last action {last} {'commits' if ok else 'does not commit'} the form")


def check_checkboxes(
    f: dict[str, str], els: Sequence[Mapping[str, Any]], ex: Mapping[str, Any]
) -> list[Check]:
    wanted = {v.lower() for k, v in f.items() if k.startswith("target")}
    out: list[Check] = []
    for box in (e for e in els if e["tag"] == "input_checkbox"):
        label = _label(box, els)
        ok = bool(box.get("value")) == (label.lower() in wanted)
        out.append(
            (
                f"box {label}",
                ok,
                f"checkbox {label!r} checked={bool(box.get('value'))}, wanted={label.lower() in wanted}",
            )
        )
    return [*out, _committed(ex)]


def check_option(f: dict[str, str], els: Sequence[Mapping[str, Any]], ex: Mapping[str, Any]) -> list[Check]:
    """A radio option is selected iff its label is the requested one; then submitted."""
    want = f.get("target", "\0").strip().lower()
    out: list[Check] = []
    for r in (e for e in els if e["tag"] == "input_radio"):
        label = _label(r, els)
        ok = bool(r.get("value")) == (label.strip().lower() == want)
        out.append((f"option {label}", ok, f"option {label!r} selected={bool(r.get('value'))}"))
    if not out:
        out.append(("options", False, "no radio option on the page"))
    return [*out, _committed(ex)]


def _want(tag: str, key: str, value: str) -> str:
    if tag == "input_date" and value.count("/") == 2:
        m, d, y = value.split("/")
        return f"{y}-{m}-{d}"
    return value


def check_fields(f: dict[str, str], els: Sequence[Mapping[str, Any]], ex: Mapping[str, Any]) -> list[Check]:
    inputs = _inputs(els)
    out: list[Check] = []
    for k, v in f.items():
        named = [e for e in inputs if str(e.get("id", "")).lower() == k.lower()]
        pool = named or inputs
        holders = [e for e in pool if str(e.get("value") or "") == _want(str(e["tag"]), k, v)]
        out.append(
            (
                f"field {k}",
                bool(holders),
                f"{k}={v!r}: {'held by ' + str([e.get('id') or e['tag'] for e in holders]) if holders else 'in no input'}",
            )
        )
    pw = [e for e in inputs if e["tag"] == "input_password"]
    if len(pw) > 1 and "target" in f:
        ok = all(e.get("value") == f["target"] for e in pw)
        out.append(
            ("all passwords", ok, f"{len(pw)} password inputs {'all' if ok else 'not all'} hold the password")
        )
    return [*out, _committed(ex)]


def check_autocomplete(
    f: dict[str, str], els: Sequence[Mapping[str, Any]], ex: Mapping[str, Any]
) -> list[Check]:
    val = next((str(e.get("value") or "") for e in _inputs(els)), "")
    ok = val.lower().startswith(f.get("start", "\0").lower()) and val.lower().endswith(
        f.get("end", "").lower()
    )
    want = f"starts with {f.get('start')!r}" + (f" and ends with {f['end']!r}" if "end" in f else "")
    return [("value", ok, f"input holds {val!r}; requested: {want}"), _committed(ex)]


def check_datepicker(
    f: dict[str, str], els: Sequence[Mapping[str, Any]], ex: Mapping[str, Any]
) -> list[Check]:
    want = f"{int(f['month']):02d}/{int(f['day']):02d}/{int(f['year']):04d}"
    val = next(
        (str(e.get("value") or "") for e in els if "hasDatepicker" in str(e.get("classes", "")).split()), ""
    )
    return [("date", val == want, f"date input holds {val!r}, requested {want!r}"), _committed(ex)]


def _last_target(ex: Mapping[str, Any]) -> Mapping[str, Any] | None:
    targets = list(ex.get("targets") or [])
    return targets[-1].get("element") if targets else None


def check_click(f: dict[str, str], els: Sequence[Mapping[str, Any]], ex: Mapping[str, Any]) -> list[Check]:
    el = _last_target(ex)
    text = (el or {}).get("text") or ""
    ok = el is not None and text.strip().lower() == f.get("target", "\0").strip().lower()
    return [("clicked", ok, f"last action clicked {text!r}, requested {f.get('target')!r}")]


def check_email(
    f: dict[str, str], els: Sequence[Mapping[str, Any]], ex: Mapping[str, Any]
) -> list[Check] | None:
    icon = {"star": "star", "delete": "trash"}.get(f.get("task", ""))
    if icon is None:
        return None
    el = _last_target(ex)
    by_ref = {e["ref"]: e for e in els}
    thread = el
    while thread is not None and "email-thread" not in str(thread.get("classes", "")).split():
        thread = by_ref.get(thread["parent_ref"])
    sender = None
    if thread is not None:
        kids = [e for e in els if "email-sender" in str(e.get("classes", "")).split()]
        sender = next((k.get("text") for k in kids if _inside(k, thread["ref"], by_ref)), None)
    ok_icon = el is not None and icon in str(el.get("classes", "")).split()
    ok_row = sender is not None and sender.strip().lower() == f.get("by", "").strip().lower()
    return [
        ("icon", ok_icon, f"last action clicked {el and el.get('classes')!r}, requested the {icon} icon"),
        ("thread", ok_row, f"inside the thread of {sender!r}, requested {f.get('by')!r}"),
    ]


def _inside(e: Mapping[str, Any], ancestor: int, by_ref: Mapping[int, Mapping[str, Any]]) -> bool:
    cur: Mapping[str, Any] | None = e
    while cur is not None:
        if cur["ref"] == ancestor:
            return True
        cur = by_ref.get(cur["parent_ref"])
    return False


CHECKERS: dict[str, Callable[..., list[Check] | None]] = {
    "checkboxes": check_checkboxes,
    "fields": check_fields,
    "autocomplete": check_autocomplete,
    "datepicker": check_datepicker,
    "click": check_click,
    "option": check_option,
    "email": check_email,
}


class MiniwobVerifier:
    """Checks visible requirements only (module docstring); PASS / FAIL / UNVERIFIED with evidence."""

    def verify(self, project: Project, evidence: Evidence) -> VerifierReport:
        page = parse_instruction(project.instruction).page
        ex, els = evidence.execution, list(evidence.final_state.get("elements") or [])
        lines = [f"page {page}: requirement {evidence.requirements!r}"]
        if ex.get("program_error"):
            lines.append(f"the action program failed: {ex['program_error']}")
        ended = bool(ex.get("ended_by_page"))
        fam = family(page)
        checks = CHECKERS[fam](_fields(ex), els, ex) if fam else None
        if checks is None:
            if not ended:
                return VerifierReport(
                    "FAIL",
                    (*lines, "the page never ended the episode: nothing was submitted"),
                    {"ended": False},
                )
            return VerifierReport(
                "UNVERIFIED", (*lines, f"no checker decides {page} ({fam or 'no family'})"), {"ended": True}
            )
        checks = [*checks, ("ended", ended, f"the page {'ended' if ended else 'did not end'} the episode")]
        ok = all(c[1] for c in checks)
        return VerifierReport(
            "PASS" if ok else "FAIL",
            (*lines, *(("ok: " if c[1] else "FAILED: ") + c[2] for c in checks)),
            {c[0]: c[1] for c in checks},
        )
