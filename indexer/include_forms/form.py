"""What an include form module declares, and what it may ask of the page's expansion.

An include form (``indexer.include_forms``) says which pages it acts in (``syntax``), how
a build learns that a project uses it (``enabled_by``: a docs tool's configuration file and
the words in it), how its text is recognised (``mark``, ``page_mark``) and what it does:
``directives`` finds its block directives in a page (their bodies are expanded by the
engine, ``indexer.includes``: Sphinx's ``include`` and ``literalinclude`` options, shared
by reStructuredText and MyST), ``line`` takes a line of it. A form reads files only through
:class:`Expansion`, which holds every bound (``indexer.includes.IncludeLimits``): each
target path is resolved inside the source, each file's and page's bytes capped, cycles and
depth refused; a refusal is a :class:`Refused` the form turns into a one-line note.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import NamedTuple, Protocol

from ..directives import Directive


class SourceLine(NamedTuple):
    """One line of an expanded page and where it came from (1-based line)."""

    text: str
    file: str
    line: int
    last: int = 0  # the last line of the origin when the line stands for several
    mark: int = -1  # the documented object (autodoc) the line belongs to


class Target(NamedTuple):
    path: str  # repo-relative
    lines: list[SourceLine]


class Refused(Exception):
    """A target that gives no text; ``args[0]`` is the note's reason."""


class Expansion(Protocol):
    """What a form may ask of the page's expansion (``indexer.includes``)."""

    count: int  # include directives met
    config_base: str  # the mkdocs.yml folder (else the page's)
    snippet_bases: tuple[str, ...]

    def target(self, written: str, bases: Iterable[str], stack: tuple[str, ...],
               depth: int, tab_width: int | None = None) -> Target: ...

    def admit(self, lines: list[SourceLine]) -> list[SourceLine]: ...

    def nested(self, lines: list[SourceLine], syntax: str, depth: int,
               stack: tuple[str, ...], path: str) -> list[SourceLine]: ...

    def note(self, reason: str, written: str, at: SourceLine,
             indent: str = "") -> SourceLine: ...


# (expansion, the page's lines, the line's index, depth, stack of files) -> the lines it
# becomes and the index of the next line, or None: not this form's line.
LineForm = Callable[[Expansion, list[SourceLine], int, int, tuple[str, ...]],
                    "tuple[list[SourceLine], int] | None"]


class IncludeForm(NamedTuple):
    """One include form, as its module's ``FORM``.

    ``name``: how a build's configuration names it (``ExpandConfig.forms``); ``syntax``:
    the pages it acts in (``rst`` or ``md``, as ``indexer.formats`` gives a page's);
    ``enabled_by``: (configuration file, words any of which it must hold; none: its being
    there), or None: always on; ``mark``: a line an include of it needs (a nested file that
    holds no form's mark is not scanned again); ``page_mark``: bytes a page needs for the
    build to expand it at all (a superset: autodoc directives of the syntax too);
    ``order``: line forms are tried in this order on a line, the first that takes it wins.
    """

    name: str
    syntax: str
    enabled_by: tuple[str, tuple[bytes, ...]] | None
    mark: re.Pattern[str]
    page_mark: re.Pattern[bytes]
    order: int = 0
    directives: Callable[[list[str]], Iterable[Directive]] | None = None
    line: LineForm | None = None


def indented(indent: str, text: str) -> str:
    return indent + text if text else text


def fenced(lines: list[SourceLine], language: str, at: SourceLine, indent: str) -> list[SourceLine]:
    """A Markdown fenced code block around ``lines``, longer than any fence inside."""
    longest = 2
    for line in lines:
        stripped = line.text.lstrip()
        run = len(stripped) - len(stripped.lstrip("`"))
        longest = max(longest, run)
    fence = "`" * (longest + 1)
    body = [ln._replace(text=indented(indent, ln.text)) for ln in lines]
    return [SourceLine(f"{indent}{fence}{language}", at.file, at.line), *body,
            SourceLine(f"{indent}{fence}", at.file, at.line)]


def replace_tags(line: SourceLine, opener: str, closer: str,
                 include: Callable[[str], list[SourceLine] | None]) -> list[SourceLine]:
    """``line`` with each ``opener``...``closer`` tag replaced by the lines ``include``
    gives for the tag's body; a tag stays text when ``include`` gives None or a backslash
    escapes it (the backslash is dropped)."""
    inline = _Inline(line)
    text = line.text
    position = 0
    while True:
        start = text.find(opener, position)
        close = text.find(closer, start + len(opener)) if start >= 0 else -1
        if start < 0 or close < 0:
            break
        inline.text(text[position:start])
        end = close + len(closer)
        lines = None
        if start > position and text[start - 1] == "\\":
            inline.drop_last_char()
        else:
            lines = include(text[start + len(opener):close])
        if lines is None:
            inline.text(text[start:end])
        else:
            inline.lines(lines)
        position = end
    inline.text(text[position:])
    return inline.done()


class _Inline:
    """A line whose tags are replaced by included lines: text before a tag starts the
    tag's first line, text after it ends the tag's last line."""

    def __init__(self, line: SourceLine) -> None:
        self.out: list[SourceLine] = []
        self.current = line._replace(text="")

    def text(self, text: str) -> None:
        self.current = self.current._replace(text=self.current.text + text)

    def drop_last_char(self) -> None:
        self.current = self.current._replace(text=self.current.text[:-1])

    def lines(self, lines: list[SourceLine]) -> None:
        if not lines:
            return
        first = lines[0]
        if self.current.text:
            first = first._replace(text=self.current.text + first.text)
        if len(lines) == 1:
            self.current = first
            return
        self.out += [first, *lines[1:-1]]
        self.current = lines[-1]

    def done(self) -> list[SourceLine]:
        return [*self.out, self.current]


def between_markers(lines: list[SourceLine], marker: re.Pattern[str], name: str,
                    role: Callable[[re.Match[str]], str], what: str) -> list[SourceLine]:
    """The lines after the first start marker of ``name`` (``marker``'s group 2) up to
    its next end marker, or to the end (``role``: a marker's "start", "end" or other);
    Refused without a start marker."""
    inside = False
    selected: list[SourceLine] = []
    for line in lines:
        match = marker.search(line.text)
        if match and match.group(2) == name:
            kind = role(match)
            if kind == "end" and inside:
                return selected
            inside = inside or kind == "start"
            continue
        if inside:
            selected.append(line)
    if not inside:
        raise Refused(f"{what} {name[:60]} not found")
    return selected


def number_ranges(spec: str) -> list[tuple[int, int]]:
    """``3:6,8,10:11`` -> [(3, 6), (8, 8), (10, 11)]."""
    ranges = []
    for part in spec.split(","):
        begin, colon, end = part.strip().partition(":")
        try:
            first = int(begin)
            ranges.append((first, int(end) if colon else first))
        except ValueError:
            raise Refused(f"bad line range ({spec[:60]})") from None
    return ranges
