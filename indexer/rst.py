"""reStructuredText (.rst) -> blocks, with docutils' parser.

docutils decides which lines are section titles and how deep they nest (the document's
own order of adornment styles). Sphinx directives and roles it does not know produce
system messages inside the doctree; they never stop the parse, and since section text is
cut from the source bytes, no error text reaches a section. Parsing never reads another file:
no directive runs (``rst_structure``), and file inclusion and raw directives are disabled.
"""

from __future__ import annotations

import re
from array import array
from itertools import islice

from .chunks import part_blocks
from .limits import MAX_PARSE_LINES, cut_title, source_cut
from .model import Block

# A role, with the run of name characters before it (group 1): as in summary._ROLE, no
# match starts inside a chain like ":a:a:a", which made a long one quadratic.
_ROLE = re.compile(r"((?<![A-Za-z0-9_+.:-])[A-Za-z0-9_+.-]+|(?<![A-Za-z0-9_+.-]))"
                   r":(?:[A-Za-z0-9_+.-]+:)+`((?:[^`\\]|\\.)*)`")
_INLINE_MARKUP = re.compile(r"``(.+?)``|\*\*(.+?)\*\*|\*(.+?)\*|`([^`]+?)`_{0,2}")
_ADORNMENT = re.compile(r"^([!-/:-@\[-`{-~])\1+\s*$")
_SPACES = re.compile(r"\s+")


def _target_text(raw: str) -> str:
    """``text`` of ``text <target>`` ("" when there is no target). String methods, not the
    regex ``^(.*?)\\s*<[^<>]*>$`` (DOTALL), which is quadratic on a long run of spaces; the
    same answer: ``$`` also matches before a final newline."""
    body = raw[:-1] if raw.endswith(">\n") else raw
    if not body.endswith(">"):
        return ""
    lt = body.rfind("<")
    if lt < 0 or ">" in body[lt + 1 : -1]:
        return ""
    return body[:lt].rstrip()


def role_text(raw: str) -> str:
    """The visible text of a role's content: ``text <target>`` -> text, ``~a.b`` -> b."""
    raw = raw.replace("\\`", "`")
    text = _target_text(raw)
    if text:
        return text
    raw = raw.lstrip("!")
    if raw.startswith("~"):
        raw = raw[1:].rsplit(".", 1)[-1]
    return raw


def plain_title(source_line: str) -> str:
    """A title's plain text from its source line: roles and inline markup removed."""
    text = _ROLE.sub(lambda m: m.group(1) + role_text(m.group(2)), source_line.strip())
    text = _INLINE_MARKUP.sub(lambda m: next(g for g in m.groups() if g is not None), text)
    return _SPACES.sub(" ", text).strip()


_MAYBE_ADORNMENT = re.compile(r"^([!-/:-@\[-`{-~])\1*[^\S\n]*$", re.MULTILINE)
# Line breaks of str.splitlines other than "\n", which docutils also splits lines at.
_OTHER_LINE_BREAKS = re.compile("[\x1c\x1d\x1e\x85\u2028\u2029]")


def _titles(text: str) -> list[tuple[int, int]]:
    """(0-based line of the title text, depth) of every section title, in order.

    A text without a line docutils could take for an adornment (one punctuation character
    repeated, then whitespace) has no title: docutils is not run on it."""
    if not _MAYBE_ADORNMENT.search(text) and not _OTHER_LINE_BREAKS.search(text):
        return []
    from .rst_structure import section_titles

    return [(line - 2, depth) for line, depth in section_titles(text)]


_ADORNMENT_LINE = re.compile(r"^([!-/:-@\[-`{-~])\1*[ \t]*$", re.MULTILINE)  # one char too
_MARGIN = 8  # lines before a prefix's end within which a title may still change


def _titles_limited(text: str, limit: int | None,
                    notes: list[str] | None = None) -> list[tuple[int, int]]:
    """``_titles``; with ``limit``, at least the first ``limit + 1`` (or all). Titles are
    looked for in the first ``MAX_PARSE_LINES`` lines only (docutils holds about 130 bytes a
    line: a 10 MB file of short lines took gigabytes), saying so in ``notes``.

    As for Markdown (``markdown._headings``), a file with far more titles than kept is
    parsed by prefixes, doubled until enough titles are found: docutils spends about
    100 us and 6 KB per title. A title is decided by its own lines and those before it,
    so only titles near a prefix's end, whose underline or the construct around them
    the cut may change, are left out."""
    end = len(text)
    if _line_count(text) > MAX_PARSE_LINES:
        end = _Lines(text).starts[MAX_PARSE_LINES]
        if notes is not None:
            notes.append(f"more than {MAX_PARSE_LINES} lines: no title looked for after line "
                         f"{MAX_PARSE_LINES - _MARGIN}")
    # An adornment is a line: a text of fewer lines than the one looked for is not scanned.
    if limit is not None and text.count("\n", 0, end) >= 2 * limit + 2:
        nth = next(islice(_ADORNMENT_LINE.finditer(text, 0, end), 2 * limit + 2, None), None)
        cut = end if nth is None else nth.end()
        while cut < end:
            prefix = text[:cut]
            edge = prefix.count("\n") - _MARGIN
            found = [t for t in _titles(prefix) if t[0] < edge]
            if len(found) > limit:
                return found
            cut = 2 * cut
    if end < len(text):
        return [t for t in _titles(text[:end]) if t[0] < MAX_PARSE_LINES - _MARGIN]
    return _titles(text)


def _line_count(text: str) -> int:
    """How many lines docutils splits ``text`` into (at most: a last line break ends no
    line for it)."""
    count = text.count("\n") + 1
    if _OTHER_LINE_BREAKS.search(text):
        count += len(_OTHER_LINE_BREAKS.findall(text))
    return count


class _Lines:
    """docutils' lines of a text (it splits at ``\n`` and at the other breaks of
    ``str.splitlines`` left in a normalized text: U+2028, U+2029, U+0085, ``\x1c``-``\x1e``):
    their starts as character offsets (8 bytes a line) and, for titles in line order, as
    byte offsets of the UTF-8 text."""

    def __init__(self, text: str) -> None:
        self.text = text
        starts = array("q", [0])
        append = starts.append
        if _OTHER_LINE_BREAKS.search(text):
            for match in _LINE_BREAK.finditer(text):
                append(match.end())
        else:
            find = text.find
            pos = find("\n")
            while pos != -1:
                append(pos + 1)
                pos = find("\n", pos + 1)
        self.starts = starts
        self._ascii = text.isascii()
        self._at = (0, 0)  # (character, byte) offsets of the last byte offset asked for

    def __len__(self) -> int:
        return len(self.starts)

    def line(self, n: int) -> str:
        """Line ``n`` (0-based) without its line break."""
        start = self.starts[n]
        end = self.starts[n + 1] - 1 if n + 1 < len(self.starts) else len(self.text)
        return self.text[start:end]

    def byte_offset(self, n: int) -> int:
        """The byte offset of line ``n``'s start (cheapest when asked in line order)."""
        char = self.starts[n]
        if self._ascii:
            return char
        last_char, last_byte = self._at if self._at[0] <= char else (0, 0)
        byte = last_byte + len(self.text[last_char:char].encode("utf-8", "surrogatepass"))
        self._at = (char, byte)
        return byte


_LINE_BREAK = re.compile("[\n\x1c\x1d\x1e\x85\u2028\u2029]")


def parse_rst(text: str, data: bytes, limit: int | None = None,
              notes: list[str] | None = None) -> list[Block]:
    """Blocks of a normalized reStructuredText text (``data`` is its UTF-8 encoding). With
    ``limit``, only the first ``limit + 1`` blocks are sure to be found (see
    ``markdown.parse_markdown``); what a cap left out is said in ``notes``. A section
    starts at its title's docutils line, which a line break other than ``\n`` may start
    inside one of the file's lines."""
    titles = _titles_limited(text, limit, notes)
    if not titles:
        return part_blocks(data, 0, fenced=False)
    lines = _Lines(text)
    stop = len(data)
    if len(lines) > MAX_PARSE_LINES and (limit is None or len(titles) <= limit):
        stop = lines.byte_offset(MAX_PARSE_LINES - _MARGIN)  # no title looked for past it
    headings: list[tuple[int, int, str]] = []
    prev_underline = -1
    for line_no, depth in titles:
        if not 0 <= line_no < len(lines) - 1:
            continue
        start_line = line_no
        above = line_no - 1
        title_line = lines.line(line_no)
        if above >= 0 and above != prev_underline:
            over = lines.line(above)
            if _ADORNMENT.match(over) and over.rstrip() == lines.line(line_no + 1).rstrip():
                start_line = above  # over- and underlined title
        prev_underline = line_no + 1
        start = lines.byte_offset(start_line)
        if headings and start <= headings[-1][0]:
            continue
        headings.append((start, depth, cut_title(plain_title(source_cut(title_line)))))
    if not headings:
        return part_blocks(data, 0, fenced=False)
    blocks: list[Block] = []
    first = headings[0][0]
    if data[:first].strip():
        blocks.append(Block("root", "", 0, 0, first))
    stop = max(stop, headings[-1][0])
    for n, (start, depth, title) in enumerate(headings):
        end = headings[n + 1][0] if n + 1 < len(headings) else stop
        blocks.append(Block("heading", title, depth, start, end))
    if stop < len(data):  # the rest, where no title was looked for, in parts
        blocks += part_blocks(data, stop, fenced=False)
    return blocks
