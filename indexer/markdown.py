"""Markdown (.md, .markdown, .mdx) -> blocks, with markdown-it-py's block parser only.

Headings are what markdown-it-py says they are (ATX and setext; nothing inside code
fences, indented code or HTML blocks). Inline parsing runs only on heading texts that
carry markup, to turn them into plain titles.
"""

from __future__ import annotations

import re
from functools import lru_cache

from markdown_it import MarkdownIt
from markdown_it.token import Token

from .chunks import part_blocks
from .limits import (
    MARKDOWN_WINDOW_BYTES,
    MAX_MARKDOWN_BLOCK_BYTES,
    MAX_PARSE_LINES,
    cut_title,
    source_cut,
)
from .model import Block
from .text import LineIndex, front_matter_lines

# Starts only where a run of spaces starts: a start inside one fails as the run's first did,
# and trying each one made a long run quadratic.
_ATTR_LIST = re.compile(r"(?<!\s)\s*\{\s*[#.][^{}]*\}\s*$")
_MARKUP_CHARS = re.compile(r"[`*_\[\]<>&\\!~]")
_SPACES = re.compile(r"\s+")


@lru_cache(maxsize=1)
def block_parser() -> MarkdownIt:
    # Only block structure, and no list rule: with it, block parsing takes about twice as
    # long (fastapi-docs: 0.23 s against 0.11 s). Without it, list items are paragraph
    # text, which changes what is a heading in and next to list items:
    # - "- item" over a "---" or "===" line parses as a setext heading; _is_heading drops
    #   it (with lists: an item and a thematic break or text; setext headings nested in
    #   an item, "- item" over "  ===", are dropped too);
    # - an ATX heading in an item is a heading when its line is indented 0-3 spaces
    #   ("1. item", blank, "   # Title"), not on the marker line ("- # Title") nor
    #   indented 4 or more (then indented code); with lists, all three are headings
    #   nested in the item;
    # - a code fence opened on the marker line ("- ```") is not seen, so "# ..." lines
    #   inside it are headings.
    md = MarkdownIt("commonmark")
    md.core.ruler.enableOnly(["block"])
    md.block.ruler.disable(["list"])
    return md


_LIST_MARKER = re.compile(r"^ {0,3}(?:[-+*]|\d{1,9}[.)])(?:[ \t]|$)")


def _is_heading(tok: Token, source: _Source, first: int) -> bool:
    """False for a setext "heading" whose text is a list item: with lists parsed, that
    line is a list item and its underline a thematic break or lazy text. (``tok``: of a
    window starting at line ``first``.)"""
    if tok.markup not in ("=", "-") or tok.map is None:
        return True
    at = first + tok.map[0]
    line = source.data[source.lines.offset(at) : source.lines.offset(at + 1)]
    return not _LIST_MARKER.match(line.decode("utf-8"))


@lru_cache(maxsize=1)
def inline_parser() -> MarkdownIt:
    return MarkdownIt("commonmark")


def warm_parsers() -> None:
    """Set up both parsers now (a build does, before forking its parse workers)."""
    block_parser()
    inline_parser()


def _plain_inline(tokens: list[Token]) -> str:
    out: list[str] = []
    for tok in tokens:
        if tok.type in ("text", "code_inline"):
            out.append(tok.content)
        elif tok.type in ("softbreak", "hardbreak"):
            out.append(" ")
        elif tok.type == "image":
            out.append(_plain_inline(tok.children or []))
    return "".join(out)


def heading_title(content: str) -> str:
    """A heading's plain text: ``{ #anchor }`` attributes and inline markup removed,
    code spans and link texts kept, whitespace collapsed, cut to ``MAX_TITLE_CHARS`` (of
    the first ``MAX_TITLE_SOURCE_CHARS`` of its source: the inline parser holds tokens per
    character of markup)."""
    content = source_cut(_ATTR_LIST.sub("", content.strip()))
    if _MARKUP_CHARS.search(content):
        tokens = inline_parser().parseInline(content)
        content = _plain_inline(tokens[0].children or []) if tokens else content
    return cut_title(_SPACES.sub(" ", content).strip())


def parse_markdown(text: str, data: bytes, limit: int | None = None,
                   notes: list[str] | None = None) -> list[Block]:
    """Blocks of a normalized Markdown text (``data`` is its UTF-8 encoding). With
    ``limit``, only the first ``limit + 1`` blocks are sure to be found (and the end of the
    last block returned may be wrong): what a caller that keeps ``limit`` blocks needs.
    What a cap left out is said in ``notes``."""
    lines = LineIndex(data)
    fm_lines = front_matter_lines(text)
    body_start = lines.offset(fm_lines)
    # Keep line numbers: blank out the front matter instead of cutting it.
    source = _Source(data, lines, fm_lines)
    headings = _headings(source, limit, notes)
    if not headings:
        return part_blocks(data, body_start, fenced=True)
    blocks: list[Block] = []
    first = headings[0][0]
    if data[body_start:first].strip():
        blocks.append(Block("root", "", 0, body_start, first))
    stop = source.stop if source.stop is not None and source.stop > headings[-1][0] \
        else len(data)
    for n, (start, level, title) in enumerate(headings):
        end = headings[n + 1][0] if n + 1 < len(headings) else stop
        blocks.append(Block("heading", title, level, start, end))
    if stop < len(data):  # no heading looked for past a cap: the rest in parts
        blocks += part_blocks(data, stop, fenced=True)
    return blocks


class _Source:
    """The text markdown-it-py is given: the file's bytes with a front matter's lines
    blanked (so line numbers are the file's), up to its ``MAX_PARSE_LINES``-th line, read a
    window at a time."""

    def __init__(self, data: bytes, lines: LineIndex, fm_lines: int) -> None:
        self.data = data
        self.lines = lines
        self.fm_lines = fm_lines
        self.end = lines.offset(MAX_PARSE_LINES)  # (the data's end when it has fewer lines)
        self._next = -1  # where the next line a heading needs starts (``end``: none)
        self.stop: int | None = None  # where a cap stopped the looking for headings

    def window(self, line: int, size: int) -> tuple[str, bool]:
        """The text from the start of ``line`` to the end of the line ``size`` bytes on
        (its whole lines), and whether it reaches ``end``."""
        start = self.lines.offset(max(line, self.fm_lines))
        nl = self.data.find(b"\n", start + size, self.end) if start + size < self.end else -1
        end = self.end if nl == -1 else nl + 1
        blank = "\n" * max(self.fm_lines - line, 0)
        return blank + self.data[start:end].decode("utf-8"), end == self.end

    def has_heading_line(self, line: int) -> bool:
        """Whether a line from ``line`` on could be (part of) a heading: an ATX heading's
        or a setext underline, after spaces, tabs and block quote markers. (The next such
        line is remembered: asked window after window, the text is scanned once.)"""
        start = self.lines.offset(line)
        if self._next < start:
            found = _HEADING_LINE.search(self.data, start, self.end)
            self._next = self.end if found is None else found.start()
        return self._next < self.end

    def cut_heading_line(self) -> bool:
        """Whether a line a heading needs is past ``MAX_PARSE_LINES``."""
        return _HEADING_LINE.search(self.data, self.end) is not None


# Liberal: a heading needs such a line (lists are not parsed: only ">" nests blocks).
_HEADING_LINE = re.compile(rb"^[ \t>]*(?:#|=+[ \t]*$|-+[ \t]*$)", re.MULTILINE)


class _Blocks(list):
    """The tokens the block parser pushes, reduced to what finding headings needs (it holds
    up to one token per byte of its text otherwise): each ``heading_open`` with its order
    and the inline token after it, and the last top-level block's opening token."""

    def __init__(self) -> None:
        super().__init__()
        self.pushed = 0
        self.last_top: tuple[int, Token] | None = None
        self._heading: tuple[int, Token] | None = None

    def append(self, tok: Token) -> None:
        if tok.level == 0 and tok.nesting >= 0:
            self.last_top = (self.pushed, tok)
        if self._heading is not None:  # the heading's inline token
            list.append(self, (*self._heading, tok))
            self._heading = None
        if tok.type == "heading_open":
            self._heading = (self.pushed, tok)
        self.pushed += 1


def _headings(source: _Source, limit: int | None,
              notes: list[str] | None) -> list[tuple[int, int, str]]:
    """(start byte, level, title) of the headings; with ``limit``, at least the first
    ``limit + 1`` of them (or all).

    The text is parsed in windows of ``MARKDOWN_WINDOW_BYTES`` (markdown-it-py holds about
    100 bytes a line, and spent 4.5 GB on 10 MB of "a\\n\\n"). Block parsing is line by
    line, each top-level block decided by its own lines, so a window parses like the whole
    text from its first line on, but for its last top-level block, which may be cut: it
    is left out, and the next window starts there. A window holding one block only grows,
    up to ``MAX_MARKDOWN_BLOCK_BYTES``; past that, or past ``MAX_PARSE_LINES`` lines, no
    heading is looked for (said in ``notes``; ``source.stop`` says where) and the rest of
    the file is cut into parts. Text without a line a heading needs is not parsed."""
    md = block_parser()
    headings: list[tuple[int, int, str]] = []
    line, size = 0, MARKDOWN_WINDOW_BYTES
    while True:
        if not source.has_heading_line(line):
            if source.cut_heading_line():
                _note(notes, f"more than {MAX_PARSE_LINES} lines: no heading looked for from "
                             f"line {MAX_PARSE_LINES + 1}")
                source.stop = source.end
            break
        text, whole = source.window(line, size)
        found = _Blocks()
        md.block.parse(text, md, {}, found)
        window_lines = text.count("\n")
        del text
        last = found.last_top
        complete = whole and source.end == len(source.data)
        trusted = found.pushed if complete or last is None else last[0]
        for order, tok, inline in found:
            if order < trusted and tok.map is not None and _is_heading(tok, source, line):
                title = heading_title(inline.content)
                headings.append((source.lines.offset(line + tok.map[0]), int(tok.tag[1:]), title))
        if complete or (limit is not None and len(headings) > limit):
            break
        # (a window of blank lines only: the next one starts after them)
        next_line = window_lines if last is None else (last[1].map or [0])[0]
        if whole:
            _note(notes, f"more than {MAX_PARSE_LINES} lines: no heading looked for from "
                         f"line {line + next_line + 1}")
            source.stop = source.lines.offset(line + next_line)
            break
        if next_line > 0:
            line, size = line + next_line, MARKDOWN_WINDOW_BYTES
        elif size < MAX_MARKDOWN_BLOCK_BYTES:
            size *= 2
        else:
            _note(notes, f"a block over {_size(MAX_MARKDOWN_BLOCK_BYTES)} at line {line + 1}: "
                         "no heading looked for from there")
            source.stop = source.lines.offset(line)
            break
    return headings


def _note(notes: list[str] | None, note: str) -> None:
    if notes is not None:
        notes.append(note)


def _size(n: int) -> str:
    return f"{n >> 20} MiB" if n >= 1 << 20 else f"{n >> 10} KiB"
