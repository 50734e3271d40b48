"""The wire frames between the host and a sandboxed child: length-prefixed bodies (8-byte big-endian
length), written by the host with ``marshal`` and by the child as one JSON object. Everything the
child sends is data: :func:`decode_frame` accepts only the expected kinds and shapes and raises
:class:`FrameError` on anything else, whatever the bytes (too deep, too long, undecodable).
"""

from __future__ import annotations

import json
import marshal
from typing import Any

from rsi_workbench.sandbox import values


class FrameError(ValueError):
    pass


def split_frames(data: bytes) -> list[bytes]:
    """Length-prefixed frames (8-byte big-endian length, then the body); a torn tail is an error."""
    frames, i = [], 0
    while i < len(data):
        if len(data) - i < 8:
            raise FrameError("torn frame header")
        n = int.from_bytes(data[i : i + 8], "big")
        if n > len(data) - i - 8:
            raise FrameError("torn frame body")
        frames.append(data[i + 8 : i + 8 + n])
        i += 8 + n
    return frames


def decode_frame(body: bytes, allowed: frozenset[str]) -> tuple[str, Any, tuple[int, ...] | None]:
    """One frame's (kind, payload, covered lines); anything unexpected raises :class:`FrameError`,
    and so does any error while decoding (too deep, an int too long, out of memory): what the child
    sends is data, and no data it sends may raise anything else here."""
    try:
        return _decode(body, allowed)
    except FrameError:
        raise
    except Exception as e:  # ValueError, RecursionError, MemoryError, ...: the child's data, not ours
        raise FrameError(f"undecodable frame ({type(e).__name__}: {str(e)[:200]})") from None


def _decode(body: bytes, allowed: frozenset[str]) -> tuple[str, Any, tuple[int, ...] | None]:
    d = loads(_FRAME_DECODER, body.decode("ascii"))
    if type(d) is not dict:
        raise FrameError("frame is not an object")
    lines = d.pop("lines", None)
    if lines is not None and not (type(lines) is list and all(type(n) is int for n in lines)):
        raise FrameError("malformed lines")
    if len(d) != 1:
        raise FrameError("frame must hold exactly one result")
    ((kind, payload),) = d.items()
    if kind not in allowed:
        raise FrameError(f"unexpected frame kind {kind!r}"[:200])
    if kind == "value":
        try:
            payload = values.decode(payload, frame=True)
        except values.ValueFormatError as e:
            raise FrameError(f"malformed value ({e})") from None
        except RecursionError:
            raise FrameError("nested too deeply") from None
    elif kind in ("raised", "failed", "load_error"):
        if not (type(payload) is list and len(payload) == 2 and all(type(s) is str for s in payload)):
            raise FrameError("malformed exception")
    elif kind in ("unplain", "no_entry"):
        if type(payload) is not str:
            raise FrameError("malformed message")
    elif payload is not True:
        raise FrameError("malformed flag")
    return kind, payload, tuple(lines) if lines is not None else None


def _no_constant(name: str) -> Any:
    raise ValueError(f"bare {name}")


_FRAME_DECODER = json.JSONDecoder(parse_constant=_no_constant)  # a result frame: no NaN / Infinity


def loads(decoder: json.JSONDecoder, text: str) -> Any:
    """``decoder.decode(text)``, i.e. ``json.loads``, without its per-call wrappers on the common
    case: one scan from the first character to the last; anything else (leading or trailing
    whitespace, an error) goes through ``decode`` itself, so the value or the error is the same."""
    try:
        obj, end = decoder.scan_once(text, 0)  # type: ignore[attr-defined]  # set in __init__
        if end == len(text):
            return obj
    except Exception:  # StopIteration, ValueError, RecursionError, ...: decode says which
        pass
    return decoder.decode(text)


def _frame_out(obj: Any) -> bytes:
    body = marshal.dumps(obj)
    return len(body).to_bytes(8, "big") + body
