"""GUI actions as plain data, validated by the host before it applies them.

A policy (or a program in the sandbox) hands back a JSON-like mapping such as
``{"type": "click", "ref": 12}``; :func:`parse_action` accepts only the four action kinds below,
with no extra keys, integer refs that exist on the current page, text without control characters
and keys from MiniWoB++'s safe key list. Nothing a policy sends can name a script, the driver or
the reward: anything else is :class:`InvalidAction`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr, TypeAdapter, ValidationError

from .observation import GuiObservation

MAX_TEXT = 200
# MiniWoB++'s safe key list (Humphreys et al. 2022, as in miniwob.constants.DEFAULT_ALLOWED_KEYS)
SPECIAL_KEYS = (
    "<Enter>",
    "<PageUp>",
    "<PageDown>",
    "<Backspace>",
    "<Delete>",
    "<Tab>",
    "<Space>",
    "<ArrowUp>",
    "<ArrowRight>",
    "<ArrowDown>",
    "<ArrowLeft>",
    "C-a",
    "C-c",
    "C-v",
    "C-x",
    "C-z",
)


class InvalidAction(ValueError):
    """A policy's action is not valid data for the current page; it is recorded and has no effect."""


class _Action(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Click(_Action):
    """Click the element with this ref."""

    type: Literal["click"] = "click"
    ref: StrictInt


class TypeText(_Action):
    """Click (focus) the element with this ref, then type ``text`` into it."""

    type: Literal["type"] = "type"
    ref: StrictInt
    text: StrictStr = Field(max_length=MAX_TEXT)


class Key(_Action):
    """Press one key (``<Enter>``, ``<Tab>``, a printable character, ``C-a`` ...) on the focused element."""

    type: Literal["key"] = "key"
    key: StrictStr


class Submit(_Action):
    """Click the page's submit button (``#subbtn`` or a button reading "Submit")."""

    type: Literal["submit"] = "submit"


GuiAction = Annotated[Click | TypeText | Key | Submit, Field(discriminator="type")]
_ADAPTER: TypeAdapter[Click | TypeText | Key | Submit] = TypeAdapter(GuiAction)


def _printable(text: str) -> bool:
    return all(ch.isprintable() and ord(ch) < 0xE000 for ch in text)


def parse_action(data: Any, obs: GuiObservation) -> Click | TypeText | Key | Submit:
    """Validate a policy's action (plain data) against the current observation."""
    if isinstance(data, Click | TypeText | Key | Submit):
        data = data.model_dump()
    if not isinstance(data, Mapping):
        raise InvalidAction(
            f"an action is a mapping such as {{'type': 'click', 'ref': 3}}, not {type(data).__name__}"
        )
    try:
        action = _ADAPTER.validate_python(dict(data))
    except ValidationError as err:
        raise InvalidAction(f"invalid GUI action {dict(data)!r}: {err.errors(include_url=False)}") from None
    if isinstance(action, Click | TypeText) and action.ref not in obs.refs:
        raise InvalidAction(f"no element with ref {action.ref} on the page")
    if isinstance(action, TypeText) and not _printable(action.text):
        raise InvalidAction("typed text may hold printable characters only")
    if isinstance(action, Key) and not (
        action.key in SPECIAL_KEYS or (len(action.key) == 1 and _printable(action.key))
    ):
        raise InvalidAction(
            f"key {action.key!r} is not allowed; use one printable character or one of {SPECIAL_KEYS}"
        )
    if isinstance(action, Submit) and submit_ref(obs) is None:
        raise InvalidAction("this page has no submit button")
    return action


def submit_ref(obs: GuiObservation) -> int | None:
    """The ref of the page's submit button, if it has one."""
    for e in obs.elements:
        if e.id == "subbtn":
            return e.ref
    for e in obs.elements:
        if e.tag == "button" and (e.text or "").strip().lower() == "submit":
            return e.ref
    return None
