"""The MiniWoB++ environment's and the built-in curriculum's settings blocks, and the built-in arm.

``environment: {kind: miniwob, targets, max_actions, page_timer_s, vary_template}`` and
``curriculum: {...}`` in an ``rsiagent`` config are :class:`MiniwobSettings` and
:class:`CurriculumSettings`; :func:`build_miniwob_arm` makes one seed's (environment, actor factory,
verifier, curriculum) from them.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator

from rsi_workbench.config import StrictModel

DEFAULT_PAGES = (
    "click-checkboxes",
    "enter-date",
    "login-user",
    "use-autocomplete",
    "choose-date",
    "book-flight",
    "email-inbox",
)


class MiniwobTarget(StrictModel):
    """``count`` known targets on one MiniWoB++ page (their seeds are drawn by the environment)."""

    page: str = Field(description="a MiniWoB++ task name, e.g. click-checkboxes")
    count: int = Field(default=1, ge=1, le=50)

    @field_validator("page")
    @classmethod
    def _known_page(cls, v: str) -> str:
        from rsi_workbench.domains.gui import resolve_task

        return resolve_task(v)


class MiniwobSettings(StrictModel):
    """The MiniWoB++ environment (``environment: {kind: miniwob, ...}``)."""

    kind: Literal["miniwob"] = "miniwob"
    targets: list[MiniwobTarget] = Field(
        default_factory=lambda: [MiniwobTarget(page=p) for p in DEFAULT_PAGES], min_length=1
    )
    max_actions: int = Field(default=20, ge=1, le=60, description="actions per episode")
    page_timer_s: float = Field(default=60.0, gt=0, description="the page's own episode timer")
    vary_template: bool = Field(
        default=False,
        description="each experiment seed takes its targets from a different utterance template of the page",
    )
    reload_between_candidates: bool = Field(
        default=False,
        description="reload the page before every episode, so each candidate starts from a freshly loaded "
        "page (the choose-date pages are reachable only so)",
    )


class CurriculumSettings(StrictModel):
    """The built-in curriculum's knobs (see :mod:`.curriculum`)."""

    per_page: int = Field(default=1, ge=1, le=8, description="broad projects per open target page and wave")
    cover_passes: int = Field(default=2, ge=1, description="practice PASSes that cover a target page")
    give_up: int = Field(default=4, ge=1, description="projects without a PASS before a page is dropped")
    deep_projects: int = Field(default=2, ge=1, le=8, description="deep projects after a target FAIL")
    brs_pages: Literal["targets", "others"] = Field(
        default="targets",
        description="targets: broad waves practise the target pages (and their prerequisites); others: "
        "only pages other than every target (cross-page transfer: transfer_pages, else the targets' "
        "prerequisites); deep practice (DRS) works on the target either way",
    )
    transfer_pages: list[str] = Field(
        default_factory=list, description="with brs_pages: others, the pages broad waves practise"
    )

    @field_validator("transfer_pages")
    @classmethod
    def _known_pages(cls, v: list[str]) -> list[str]:
        from rsi_workbench.domains.gui import resolve_task

        return [resolve_task(p) for p in v]


def build_miniwob_arm(
    e: MiniwobSettings, curriculum: CurriculumSettings, seed: int, *, model_actor: bool = False
) -> tuple[Any, Any, Any, Any]:
    """(environment, actor factory, verifier, curriculum) for one seed: the built-in MiniWoB++ roles
    (with ``model_actor`` the environment offers text workspaces, :mod:`.miniwob_llm`)."""
    from .actor import BuiltinActor
    from .curriculum import BuiltinCurriculum
    from .miniwob import MiniwobEnvironment
    from .verifier import MiniwobVerifier

    env = MiniwobEnvironment(
        [(t.page, t.count) for t in e.targets],
        seed=seed,
        max_actions=e.max_actions,
        page_timer_s=e.page_timer_s,
        vary_template=e.vary_template,
        reload_between_candidates=e.reload_between_candidates,
    )
    cur = BuiltinCurriculum(**curriculum.model_dump())
    if model_actor:
        from .miniwob_llm import MiniwobTextEnvironment  # a model actor reads the page as text

        return MiniwobTextEnvironment(env), BuiltinActor, MiniwobVerifier(), cur
    return env, BuiltinActor, MiniwobVerifier(), cur
