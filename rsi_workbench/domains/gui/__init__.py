"""GUI domain: MiniWoB++ tasks in Debian's offline headless Chromium, driven by plain-data actions.

``GuiEnv`` runs one task page in one browser; ``BrowserPool`` plays episodes across browsers with
per-episode reset, a wall clock, and retries on a fresh browser after a crash or hang;
``play_episode`` records the page's raw reward as E0 evidence at the end of an episode. Policies
only ever see :class:`GuiObservation` and return actions as data, validated by :func:`parse_action`;
:class:`ProgramPolicy` runs an untrusted action program in a sandbox session (data in, data out).
Needs the ``gui`` extra (``miniwob``, ``gymnasium``) and Debian ``chromium`` + ``chromium-driver``.
"""

from __future__ import annotations

from .actions import Click, InvalidAction, Key, Submit, TypeText, parse_action
from .browser import BrowserFailure
from .env import GuiEnv
from .episode import EpisodeLimits, EpisodeResult, GuiPolicy, play_episode
from .observation import GuiElement, GuiObservation
from .policies import ClickCheckboxesPolicy, SubmitAtOncePolicy, checkbox_targets
from .pool import BrowserPool
from .programs import ProgramFailure, ProgramPolicy
from .tasks import UnknownTaskError, resolve_task, task_names

__all__ = [
    "BrowserFailure",
    "BrowserPool",
    "Click",
    "ClickCheckboxesPolicy",
    "EpisodeLimits",
    "EpisodeResult",
    "GuiElement",
    "GuiEnv",
    "GuiObservation",
    "GuiPolicy",
    "InvalidAction",
    "Key",
    "ProgramFailure",
    "ProgramPolicy",
    "Submit",
    "SubmitAtOncePolicy",
    "TypeText",
    "UnknownTaskError",
    "checkbox_targets",
    "parse_action",
    "play_episode",
    "resolve_task",
    "task_names",
]
