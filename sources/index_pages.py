"""Index pages read as untrusted data, in time and memory linear in their size.

A project page of a PyPI simple index (PEP 503 HTML, PEP 691 JSON) is at most
``package_fetch.MAX_SIMPLE_PAGE_BYTES`` (16 MiB; PyPI's largest project pages measured:
botocore 2.0 MB, boto3 1.7 MB, tf-nightly 1.1 MB), an npm packument at most
``MAX_PAGE_BYTES`` (64 MiB; the largest measured: ``next``, 21 MB, ``typescript``,
10.5 MB, ``@types/node``, 9.4 MB). Within that size two things still cost far more than
the bytes:

- ``html.parser.HTMLParser`` scans an unterminated start tag again at each ``<`` it is fed
  (1 MB of ``<a `` did not finish in minutes; 64 MiB of real anchors took 187 s on this
  machine, loaded). pip uses it, but doc-index needs only the ``<a>`` and ``<base>`` start
  tags: :func:`start_tags` finds them in one pass, skipping comments, and reads their
  attributes as HTMLParser does (names lowercased, values unquoted and unescaped, a name
  without a value gives None; the last of two of one name wins);
- ``json.loads`` makes a Python object of each value: 64 MiB of ``[{},{},...`` would be
  21 million dicts, about 1.4 GB. :func:`load_json` refuses a page with more than
  ``MAX_PAGE_VALUES`` values before parsing it (counted from its commas and brackets, an
  upper bound): the ``next`` packument holds 0.76 million in 21 MB, so a real page of the
  whole 64 MiB would hold about 2.3 million.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterator
from typing import Any

MAX_PAGE_VALUES = 4_000_000
MAX_TAG_NAMES = ("a", "base")

# Where something that may be a wanted start tag, or a comment, begins.
_TAG_START = re.compile(r"<(?:(!--)|([aA]|[bB][aA][sS][eE])(?=[\s/>]))")
# One attribute as HTMLParser's ``attrfind_tolerant`` reads it (value optional); what no
# attribute starts with is passed over. A quoted value with no closing quote matches as
# an unquoted one (linear: a failed quote means no such quote is left in the tag).
_ATTRIBUTE = re.compile(
    r"""(?P<name>[^\s/>"'=][^\s/>=]*)"""
    r"""(?:\s*=\s*(?:"(?P<dq>[^"]*)"|'(?P<sq>[^']*)'|(?P<uq>[^\s>]*)))?""")
MAX_TAG_CHARS = 64 * 1024  # a real anchor is under 2 KB (its URL, hash and metadata)


def start_tags(text: str) -> Iterator[tuple[str, dict[str, str | None]]]:
    """(name, attributes) of each ``<a>`` and ``<base>`` start tag of ``text``, in order,
    outside comments. A tag ends at its first ``>`` (a ``>`` is written ``%3E`` in a URL);
    one longer than ``MAX_TAG_CHARS`` is passed over; an unterminated tag or comment ends
    the scan. One pass: each step moves past what it looked at."""
    pos = 0
    while True:
        match = _TAG_START.search(text, pos)
        if match is None:
            return
        if match.group(1):  # a comment: to its end
            end = text.find("-->", match.end())
            if end < 0:
                return
            pos = end + 3
            continue
        end = text.find(">", match.end())
        if end < 0:
            return
        pos = end + 1
        if end - match.end() <= MAX_TAG_CHARS:
            yield match.group(2).lower(), _attributes(text[match.end():end])


def _attributes(tag: str) -> dict[str, str | None]:
    """A start tag's attributes (the text between its name and its ``>``)."""
    found: dict[str, str | None] = {}
    for attribute in _ATTRIBUTE.finditer(tag):
        name = attribute.group("name").lower()  # (a second of a name wins, as in the
        value = attribute.group("dq")
        if value is None:
            value = attribute.group("sq")
            if value is None:
                value = attribute.group("uq")
        found[name] = html.unescape(value) if value else value  # dict of HTMLParser's list)
    return found


def value_count(body: bytes) -> int:
    """At most how many values a JSON text holds: one more than its commas and opening
    brackets (three passes in C over the bytes)."""
    return body.count(b",") + body.count(b"[") + body.count(b"{") + 1


def load_json(body: bytes, what: str) -> Any:
    """``json.loads(body)`` when it holds at most ``MAX_PAGE_VALUES`` values; ValueError
    naming ``what`` otherwise (and for text that does not parse, or nests too deep)."""
    if value_count(body) > MAX_PAGE_VALUES:
        raise ValueError(f"{what} holds more than {MAX_PAGE_VALUES} JSON values: not read")
    try:
        return json.loads(body)
    except RecursionError:
        raise ValueError(f"{what} nests too deeply") from None


__all__ = ["MAX_PAGE_VALUES", "load_json", "start_tags", "value_count"]
