"""AsciiDoc (``.adoc``, ``.asciidoc``): sections from its one-line titles.

A title is a line of 1 to 6 ``=`` (or ``#``, Asciidoctor's Markdown-style titles, which it
reads the same) then a space and the text; trailing markers of a symmetric title
(``== Setup ==``) are dropped. As Asciidoctor reads them: a title starts a block, so it
follows a blank line, a title, a block attribute or anchor line (``[[id]]``, ``[#id]``), a
comment or the start of the text (``== x`` right under paragraph text is that paragraph's
text); nothing inside a delimited block is a title (listing ``----``, literal ``....``,
example ``====``, sidebar ``****``, quote ``____``, passthrough ``++++``, comment
``////``, open ``--``, tables ``|===``, fenced code ````` ``` `````), up to the line that
closes it; a ``[discrete]`` or ``[float]`` heading is no section (it is not in the
document's outline). The depth is the marker's length (``=``, the document title: 1).
Two-line titles (text underlined with ``=``, ``-``, ``~``...) are legacy AsciiDoc.py syntax
Asciidoctor only reads when asked to: not read. Pages are not expanded: ``include::``
directives stay as text.

Bounds, as the other formats (``indexer.limits``): titles are looked for in the first
``MAX_PARSE_LINES`` lines only (past them the rest of the file is cut into parts, said in
the notes); a title's source is cut to ``MAX_TITLE_SOURCE_CHARS`` and the title to
``MAX_TITLE_CHARS``; the lines are read from the bytes one at a time (nothing held a line),
and every pattern runs in time linear in its line.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from ..chunks import part_blocks
from ..limits import MAX_PARSE_LINES, cut_title, source_cut
from ..model import Block
from ..text import front_matter_lines
from .format import Format

_TITLE = re.compile(rb"(={1,6}|#{1,6})[ \t]+(\S.*)")
_DELIMITER = re.compile(rb"(-{4,}|\.{4,}|={4,}|\*{4,}|_{4,}|\+{4,}|/{4,}|--|[|,:!]={3,})"
                        rb"[ \t]*")
_FENCE = re.compile(rb"(`{3,})[^`]*")
_ATTRIBUTES = re.compile(rb"\[[^\[\]]*\]|\[\[[^\[\]]*\]\]")  # (whole line)
_DISCRETE = re.compile(rb"\[(?:discrete|float)(?:[#.%,\]]|$)")
_ATTRIBUTE_ENTRY = re.compile(rb":!?[\w-]+!?:(?:[ \t].*)?")

_ANCHORS = re.compile(r"\[\[[^\[\]]*\]\]|\[#[^\[\]]*\]")
_XREF = re.compile(r"<<([^<>,]*)(?:,([^<>]*))?>>")
_MACRO = re.compile(r"(?:\b(?:https?|ftp|irc)://|\b(?:link|xref|mailto):)[^\s\[\]]*"
                    r"\[([^\[\]]*)\]")
_PASSTHROUGH = re.compile(r"(\+\+\+|\+\+|``|\+|`)([^+`]+)\1")
_UNCONSTRAINED = re.compile(r"(\*\*|__|##|~~|\^\^)([^*_#~^]+)\1")
_CONSTRAINED = re.compile(r"(?<!\w)([*_#])([^*_#\s](?:[^*_#]*[^*_#\s])?)\1(?!\w)")
_SPACES = re.compile(r"\s+")


def title_text(source: str, marker: str) -> str:
    """A title's plain text from what follows its marker: anchors dropped, a symmetric
    title's closing marker dropped, link and cross-reference texts kept, inline formatting
    marks removed, whitespace collapsed, cut to ``MAX_TITLE_CHARS``."""
    text = source_cut(source).rstrip()
    if text.endswith(" " + marker):
        text = text[: -len(marker)].rstrip()
    text = _ANCHORS.sub("", text)
    text = _XREF.sub(lambda m: m.group(2) or m.group(1), text)
    text = _MACRO.sub(lambda m: m.group(1), text)
    text = _PASSTHROUGH.sub(lambda m: m.group(2), text)
    text = _UNCONSTRAINED.sub(lambda m: m.group(2), text)
    text = _CONSTRAINED.sub(lambda m: m.group(2), text)
    return cut_title(_SPACES.sub(" ", text).strip())


def _lines(data: bytes, start: int) -> Iterator[tuple[int, bytes]]:
    """(byte offset, line without its ``\\n``) from ``start`` on, one at a time."""
    find = data.find
    pos, size = start, len(data)
    while pos < size:
        nl = find(b"\n", pos)
        end = size if nl == -1 else nl
        yield pos, data[pos:end]
        pos = end + 1


def _titles(data: bytes, body: int, first_line: int, limit: int | None,
            notes: list[str] | None) -> tuple[list[tuple[int, int, str]], int]:
    """(start byte, depth, title) of the section titles, and where looking stopped (the
    data's end, or the start of line ``MAX_PARSE_LINES + 1``); with ``limit``, at least the
    first ``limit + 1`` titles (or all)."""
    titles: list[tuple[int, int, str]] = []
    closer: bytes | None = None  # the line that closes the delimited block we are in
    boundary, discrete = True, False  # (a title may start here; it would be discrete)
    attributes: int | None = None  # where the attribute lines just above started
    for number, (offset, line) in enumerate(_lines(data, body), first_line + 1):
        if number > MAX_PARSE_LINES:
            if notes is not None:
                notes.append(f"more than {MAX_PARSE_LINES} lines: no heading looked for "
                             f"from line {MAX_PARSE_LINES + 1}")
            return titles, offset
        stripped = line.rstrip()
        if closer is not None:
            if stripped == closer:
                closer, boundary, discrete = None, True, False
            continue
        if not stripped:
            boundary, discrete, attributes = True, False, None
            continue
        delimiter = _DELIMITER.fullmatch(line) or _FENCE.fullmatch(line)
        if delimiter is not None:
            closer, attributes = delimiter.group(1), None
            continue
        if _ATTRIBUTES.fullmatch(stripped) or stripped.startswith(b"//") \
                or _ATTRIBUTE_ENTRY.fullmatch(stripped):
            discrete = discrete or _DISCRETE.match(stripped) is not None
            attributes = offset if attributes is None else attributes
            continue  # (a block's attribute lines, a comment: the boundary stays)
        title = _TITLE.fullmatch(stripped) if boundary and not discrete else None
        start = offset if attributes is None else attributes  # ([[id]] is the section's)
        boundary, discrete, attributes = False, False, None
        if title is not None:
            marker = title.group(1).decode("ascii")
            text = title.group(2).decode("utf-8", "replace")
            titles.append((start, len(marker), title_text(text, marker)))
            boundary = True
            if limit is not None and len(titles) > limit:
                break
    return titles, len(data)


def parse_asciidoc(text: str, data: bytes, limit: int | None = None,
                   notes: list[str] | None = None) -> list[Block]:
    """Blocks of a normalized AsciiDoc text (``data``: its UTF-8 bytes), as
    ``indexer.formats.format.BlockParser`` says. A leading YAML front matter block (Jekyll
    and Hugo pages) holds no title."""
    skipped = front_matter_lines(text)
    body = 0
    for _ in range(skipped):
        body = data.index(b"\n", body) + 1
    titles, stop = _titles(data, body, skipped, limit, notes)
    if not titles:
        return part_blocks(data, body, fenced=True)
    blocks: list[Block] = []
    first = titles[0][0]
    if data[body:first].strip():
        blocks.append(Block("root", "", 0, body, first))
    for n, (start, depth, title) in enumerate(titles):
        end = titles[n + 1][0] if n + 1 < len(titles) else stop
        blocks.append(Block("heading", title, depth, start, end))
    if stop < len(data):  # the rest, where no title was looked for, in parts
        blocks += part_blocks(data, stop, fenced=True)
    return blocks


def _warm() -> None:
    """Nothing to set up: the parser is this module's patterns."""


# fenced: headingless text is not cut inside a ``` fence (AsciiDoc has them too).
FORMAT = Format("AsciiDoc", (".adoc", ".asciidoc"), parse_asciidoc, _warm, fenced=True)
