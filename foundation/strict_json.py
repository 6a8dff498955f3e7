"""The one strict JSON parser (cache manifests and documents, MCP wire lines) and the one
writer of the JSON every door prints (:func:`dumps`; search prices answers with it too).

Strict UTF-8 (no BOM, no UTF-16 sniffing), no NaN/Infinity, and nesting too deep for the
parser is an invalid document (ValueError), not a crash. Written: compact or 2-space
pretty, non-ASCII kept, one trailing newline (serde_json's output).

The parser is the stdlib's (``json.loads`` with ``parse_constant``); what is ours is what
it lets through (a BOM, lone surrogates, RecursionError) and the streaming walk, since
the stdlib has no streaming parser: :func:`parse_json_object_streaming` scans the
top-level object with the stdlib's own ``scanstring`` and ``raw_decode`` so that a
manifest's sections are handed on one by one (docs/architecture.md, "Hand-written where
a library exists").
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from json.decoder import scanstring  # type: ignore[attr-defined]  # not in typeshed's stubs
from typing import Any

# Any surrogate escape. Only one that is not half of a high+low pair can decode to a lone
# surrogate; pairs are common (an ASCII-escaped emoji). False alarms only cost a walk.
# A search led by the literal ``\u`` scans at C speed: a single regex with the pairing
# as lookarounds took 0.7 s on a 27 MB manifest (16,600 escaped pairs), this 0.03 s.
_SURROGATE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_HIGH = re.compile(r"\\u[dD][89abAB][0-9a-fA-F]{2}")
_LOW = re.compile(r"\\u[dD][c-fC-F][0-9a-fA-F]{2}")


def lone_surrogate_escape(text: str) -> bool:
    """Whether ``text`` holds a surrogate escape that is not half of a high+low pair: a
    high one not followed by a low one, or a low one not preceded by a high one."""
    for found in _SURROGATE.finditer(text):
        at = found.start()
        if text[at + 3] in "89abAB":
            if not _LOW.match(text, at + 6):
                return True
        elif at < 6 or not _HIGH.match(text, at - 6):
            return True
    return False


def parse_json(data: bytes, *, lone_surrogates: bool = False) -> Any:
    """Parse JSON as serde_json would accept it; raise ValueError otherwise.

    A string escaping a lone surrogate is refused unless ``lone_surrogates``: a cache is
    UTF-8 text, while an MCP message may carry one in an id the server must echo back.
    """
    try:
        text = data.decode("utf-8")
        value = json.loads(text, parse_constant=_reject_constant)
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None
    if not lone_surrogates and lone_surrogate_escape(text):
        _check_encodable(value)
    return value


def dumps(value: Any, pretty: bool = False) -> str:
    """``value`` as the doors print it (trailing newline included)."""
    if pretty:
        return json.dumps(value, indent=2, ensure_ascii=False) + "\n"
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False) + "\n"


_WHITESPACE = re.compile(r"[ \t\n\r]*")


def parse_json_object_streaming(
    data: bytes | str, stream_key: str, on_item: Callable[[Any], None]
) -> tuple[Any, int | None]:
    """Parse JSON as :func:`parse_json` does, handing the elements of the top-level object's
    array member ``stream_key`` to ``on_item`` one at a time instead of building the array:
    a large manifest's sections are never all in memory as Python objects at once.

    Returns ``(value, count)``: the top-level value without ``stream_key`` and the number of
    elements streamed, or ``(value, None)`` when there was no such array (a top-level value
    that is not an object is returned whole; a ``stream_key`` that is not an array stays in
    the object). Raises ValueError where :func:`parse_json` would, and when ``stream_key``
    occurs twice (its first elements were already handed on). ``data`` may be given as
    text already decoded from UTF-8 (strictly), so the caller need not hold the bytes too."""
    try:
        text = data if isinstance(data, str) else data.decode("utf-8")
        at = _WHITESPACE.match(text).end()  # type: ignore[union-attr]
        if text[at : at + 1] != "{":
            return json.loads(text, parse_constant=_reject_constant), None
        # Elements are checked one by one as they are handed on, the rest at the end.
        surrogates = lone_surrogate_escape(text)
        value, count = _stream_object(text, at + 1, stream_key, on_item, surrogates)
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None
    if surrogates:
        _check_encodable(value)
    return value, count


def _stream_array(text: str, at: int, on_item: Callable[[Any], None], surrogates: bool,
                  ) -> tuple[int, int]:
    """Hand on the elements of the array whose ``[`` ends just before ``at``; their
    number, and where the array ends."""
    decode = json.JSONDecoder(parse_constant=_reject_constant).raw_decode
    count = 0
    at = _WHITESPACE.match(text, at).end()  # type: ignore[union-attr]
    if text[at : at + 1] == "]":
        return count, at + 1
    while True:
        item, at = decode(text, at)
        if surrogates:
            _check_encodable(item)
        on_item(item)
        count += 1
        done, at = _after_member(text, at, "]")
        if done:
            return count, at


def _after_member(text: str, at: int, closer: str) -> tuple[bool, int]:
    """After a member of an object or array: whether ``closer`` (after white space) ended
    it, and where what follows the ``,`` or ``closer`` starts."""
    at = _WHITESPACE.match(text, at).end()  # type: ignore[union-attr]
    sep = text[at : at + 1]
    at = _WHITESPACE.match(text, at + 1).end()  # type: ignore[union-attr]
    if sep == closer:
        return True, at
    if sep != ",":
        raise ValueError(f"expected ',' or '{closer}' at {at}")
    return False, at


def _stream_object(text: str, at: int, stream_key: str, on_item: Callable[[Any], None],
                   surrogates: bool) -> tuple[dict[str, Any], int | None]:
    """The object whose ``{`` ends just before ``at`` (see parse_json_object_streaming)."""
    decode = json.JSONDecoder(parse_constant=_reject_constant).raw_decode
    skip = _WHITESPACE.match
    value: dict[str, Any] = {}
    count: int | None = None
    at = skip(text, at).end()  # type: ignore[union-attr]
    if text[at : at + 1] == "}":
        at += 1
    else:
        while True:
            if text[at : at + 1] != '"':
                raise ValueError(f"expected a property name at {at}")
            key, at = scanstring(text, at + 1, True)
            at = skip(text, at).end()  # type: ignore[union-attr]
            if text[at : at + 1] != ":":
                raise ValueError(f"expected ':' at {at}")
            at = skip(text, at + 1).end()  # type: ignore[union-attr]
            if key == stream_key and (count is not None or key in value):
                raise ValueError(f"{stream_key!r} occurs twice")
            if key == stream_key and text[at : at + 1] == "[":
                count, at = _stream_array(text, at + 1, on_item, surrogates)
            else:
                value[key], at = decode(text, at)
            done, at = _after_member(text, at, "}")
            if done:
                break
    if skip(text, at).end() != len(text):  # type: ignore[union-attr]
        raise ValueError("extra data after the JSON value")
    return value, count


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _check_encodable(value: Any) -> None:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            item.encode("utf-8")
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
