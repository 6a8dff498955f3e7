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
    terms: dict[str, int] = {}  # noqa: RUF012 (never mutated) term -> pack_tf(title, path, body)
    total_words: int = 0
    lens: tuple[int, int, int] = (0, 0, 0)  # terms in the title, path and body fields


class ParsedFile(NamedTuple):
    """The result of indexing one file: its normalized text and its sections in file order."""

    path: str
    raw: bytes
    sections: list[ParsedSection]
    raw_digest: str = ""  # sha256 hex of ``raw`` (set by the store's workers)
    note: str = ""  # for the build summary: what the indexer did to the file (a cap)


def pack_tf(title: int, path: int, body: int) -> int:
    """Term frequencies in a section's three fields, packed in one int (capped)."""
    return (min(title, 255) << 24) | (min(path, 255) << 16) | min(body, 65535)


def unpack_tf(packed: int) -> tuple[int, int, int]:
    return packed >> 24, (packed >> 16) & 0xFF, packed & 0xFFFF
