"""Markdown (.md, .markdown, .mdx) -> blocks, with markdown-it-py's block parser only.

Headings are what markdown-it-py says they are (ATX and setext; nothing inside code
fences, indented code or HTML blocks). Inline parsing runs only on heading texts that
carry markup, to turn them into plain titles.
"""

from __future__ import annotations

import re
from functools import lru_cache
from itertools import islice

from markdown_it import MarkdownIt
from markdown_it.token import Token

from .chunks import part_blocks
from .limits import cut_title, source_cut
from .model import Block
from .text import LineIndex, front_matter_lines

# Starts only where a run of spaces starts: a start inside one fails as the run's first did,
# and trying each one made a long run quadratic.
_ATTR_LIST = re.compile(r"(?<!\s)\s*\{\s*[#.][^{}]*\}\s*$")
_MARKUP_CHARS = re.compile(r"[`*_\[\]<>&\\!~]")
_SPACES = re.compile(r"\s+")


@lru_cache(maxsize=1)
def _block_parser() -> MarkdownIt:
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


def _is_heading(tok: Token, data: bytes, lines: LineIndex) -> bool:
    """False for a setext "heading" whose text is a list item: with lists parsed, that
    line is a list item and its underline a thematic break or lazy text."""
    if tok.markup not in ("=", "-") or tok.map is None:
        return True
    line = data[lines.offset(tok.map[0]) : lines.offset(tok.map[0] + 1)]
    return not _LIST_MARKER.match(line.decode("utf-8"))


@lru_cache(maxsize=1)
def _inline_parser() -> MarkdownIt:
    return MarkdownIt("commonmark")


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
        tokens = _inline_parser().parseInline(content)
        content = _plain_inline(tokens[0].children or []) if tokens else content
    return cut_title(_SPACES.sub(" ", content).strip())


def parse_markdown(text: str, data: bytes, limit: int | None = None) -> list[Block]:
    """Blocks of a normalized Markdown text (``data`` is its UTF-8 encoding). With
    ``limit``, only the first ``limit + 1`` blocks are sure to be found (and the end of the
    last block returned may be wrong): what a caller that keeps ``limit`` blocks needs."""
    lines = LineIndex(data)
    fm_lines = front_matter_lines(text)
    body_start = lines.offset(fm_lines)
    if fm_lines:
        # Keep line numbers: blank out the front matter instead of cutting it.
        text = "\n" * fm_lines + text[len(data[:body_start].decode("utf-8")) :]
    headings = _headings(text, data, lines, limit)
    if not headings:
        return part_blocks(data, body_start, fenced=True)
    blocks: list[Block] = []
    first = headings[0][0]
    if data[body_start:first].strip():
        blocks.append(Block("root", "", 0, body_start, first))
    for n, (start, level, title) in enumerate(headings):
        end = headings[n + 1][0] if n + 1 < len(headings) else len(data)
        blocks.append(Block("heading", title, level, start, end))
    return blocks


_HEADING_LIKE = re.compile(r"^ {0,3}(?:#{1,6}(?:[ \t]|$)|=+[ \t]*$|-+[ \t]*$)", re.MULTILINE)


def _headings(text: str, data: bytes, lines: LineIndex,
              limit: int | None) -> list[tuple[int, int, str]]:
    """(start byte, level, title) of the headings; with ``limit``, at least the first
    ``limit + 1`` of them (or all).

    A file with far more headings than kept is parsed by prefixes (cut at a line end,
    doubled until enough headings are found): markdown-it-py spends about 20 us and 1.5 KB
    per heading, 4 GB on a 10 MB file of ``#`` lines. Block parsing is line by line, each
    block decided by the lines from its start to its end, so a prefix parses like the
    whole text except for its last top-level block, which may be cut: it is left out."""
    cut = len(text)
    # A candidate is a line: a text of fewer lines than the one looked for is not scanned.
    if limit is not None and text.count("\n") >= 2 * limit + 2:
        candidates = _HEADING_LIKE.finditer(text)
        nth = next(islice(candidates, 2 * limit + 2, None), None)
        if nth is not None:
            cut = _line_end(text, nth.end())
    while True:
        whole = cut >= len(text)
        tokens = _block_parser().parse(text if whole else text[:cut])
        trusted = len(tokens) if whole else _last_top_level_block(tokens)
        headings = []
        for i, tok in enumerate(tokens[:trusted]):
            if tok.type == "heading_open" and tok.map is not None and _is_heading(tok, data, lines):
                title = heading_title(tokens[i + 1].content)
                headings.append((lines.offset(tok.map[0]), int(tok.tag[1:]), title))
        if whole or limit is None or len(headings) > limit:
            return headings
        cut = _line_end(text, 2 * cut)


def _line_end(text: str, at: int) -> int:
    """The offset just after the end of the line holding ``at`` (the text's end at most)."""
    nl = text.find("\n", at)
    return len(text) if nl == -1 else nl + 1


def _last_top_level_block(tokens: list[Token]) -> int:
    """The index of the token that opens the last top-level block (0 if there is none)."""
    for i in range(len(tokens) - 1, -1, -1):
        if tokens[i].level == 0 and tokens[i].nesting >= 0:
            return i
    return 0
