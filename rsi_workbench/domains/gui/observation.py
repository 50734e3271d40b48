"""What a GUI policy sees: the utterance and the page's DOM as plain data (never the driver, never a reward)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class GuiElement:
    """One DOM element; ``ref`` is MiniWoB++'s element id, stable for the whole episode."""

    ref: int
    parent_ref: int | None
    tag: str
    text: str | None
    value: bool | str | None  # a checkbox's checked state, an input's text
    id: str
    classes: str
    left: float
    top: float
    width: float
    height: float
    focused: bool = False


@dataclass(frozen=True)
class GuiObservation:
    """The page state before the policy's next action.

    ``actions_taken`` are this episode's earlier (validated) actions, so a stateless policy can
    avoid repeating itself; ``screenshot`` is a PNG only when the environment was asked for one.
    """

    task: str
    step: int
    utterance: str
    fields: tuple[tuple[str, str], ...]
    elements: tuple[GuiElement, ...]
    actions_taken: tuple[dict[str, Any], ...] = ()
    screenshot: bytes | None = field(default=None, repr=False)

    @property
    def refs(self) -> frozenset[int]:
        return frozenset(e.ref for e in self.elements)

    def element(self, ref: int) -> GuiElement:
        for e in self.elements:
            if e.ref == ref:
                return e
        raise KeyError(ref)

    def find(self, tag: str | None = None, id: str | None = None) -> list[GuiElement]:
        """Elements with this tag and/or DOM id (in document order)."""
        return [e for e in self.elements if (tag is None or e.tag == tag) and (id is None or e.id == id)]

    def to_json(self) -> dict[str, Any]:
        """The observation as JSON-able plain data (the screenshot as its byte length only)."""
        d = asdict(self)
        d["screenshot"] = None if self.screenshot is None else len(self.screenshot)
        return d


def flatten_dom(root: Any) -> tuple[GuiElement, ...]:
    """miniwob's ``DOMElement`` tree → elements in document order, each naming its parent's ref."""
    out: list[GuiElement] = []

    def walk(node: Any, parent_ref: int | None) -> None:
        value = node.value
        out.append(
            GuiElement(
                ref=int(node.ref),
                parent_ref=parent_ref,
                tag=str(node.tag),
                text=node.text,
                value=value if isinstance(value, bool | str) or value is None else str(value),
                id=str(node.id or ""),
                classes=str(node.classes or ""),
                left=float(node.left),
                top=float(node.top),
                width=float(node.width),
                height=float(node.height),
                focused=bool(node.focused),
            )
        )
        for child in node.children:
            walk(child, int(node.ref))

    walk(root, None)
    return tuple(out)
