"""The data the indexer produces: sections found in one file, and their final metadata.

Records are NamedTuples: immutable, cheap to pickle between processes, and cheap to import
(a build imports no ``dataclasses``: tests/test_import_rules.py).
"""

from __future__ import annotations

from typing import NamedTuple


class Block(NamedTuple):
    """A span a format parser found in a normalized file.

    ``kind`` is ``heading`` (a titled section), ``root`` (text before the first heading) or
    ``part`` (a chunk of a file without headings). ``start``/``end`` are byte offsets into the
    file's UTF-8 bytes (``\\n`` line endings); ``end`` is exclusive.
    """

    kind: str
    title: str
    depth: int
    start: int
    end: int


class ParsedSection(NamedTuple):
    """One section of one file, with everything that does not depend on other files.

    The id and the parent id are assigned later, in one global pass over all files
    (``indexer.ids``), because collisions are resolved across the whole repository.
    """

    file: str
    kind: str
    title: str
    depth: int
    byte_offset: int
    byte_length: int
    line_count: int
    version: str
    tokens: int
    summary: str
    keywords: list[str]
    dedup_hash: str
    parent_index: int | None
    # term -> its frequencies in the title, path and body fields in one int,
    # title << 24 | path << 16 | body, capped at 255, 255 and 65535 (packed in
    # indexer.document, read in server.native_selection)
    terms: dict[str, int] = {}  # noqa: RUF012 (never mutated)
    total_words: int = 0
    lens: tuple[int, int, int] = (0, 0, 0)  # terms in the title, path and body fields
    # Where the section's text came from when the page pulled it in (an include, an
    # autodoc docstring): (file, first line, last line), source-relative; () for the page.
    origins: tuple[tuple[str, int, int], ...] = ()


class PageStats(NamedTuple):
    """What expanding one page did, for the build summary."""

    documented: int = 0  # autodoc directives documented
    objects: int = 0  # objects written (members included)
    unresolved: tuple[str, ...] = ()  # "name: reason" of each directive not documented
    includes: int = 0  # include directives met
    notes: tuple[str, ...] = ()  # the one-line notes left for includes not inlined


class ParsedFile(NamedTuple):
    """The result of indexing one file: its normalized text and its sections in file order."""

    path: str
    raw: bytes
    sections: list[ParsedSection]
    raw_digest: str = ""  # sha256 hex of ``raw`` (set by the store's workers)
    note: str = ""  # for the build summary: what the indexer did to the file (a cap)
    # What the page's expansion read (includes, autodoc): (path, hash or None: looked for,
    # not found), source-relative; the page is parsed again when one of them changes.
    dependencies: tuple[tuple[str, str | None], ...] = ()
    expansion: PageStats | None = None

