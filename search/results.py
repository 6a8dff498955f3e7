"""The three tools' results as Python objects (what the library API returns).

Field names are the specs' (``path`` of a listed cache is its name under the root), so
:mod:`.jsonout` renders each as the JSON the ``context`` CLI prints. NamedTuples and
TypedDicts, not dataclasses: a cold resolve never imports ``dataclasses``
(tests/test_import_rules.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple, TypedDict


class ByMeaning(NamedTuple):
    """Answer a native cache by meaning too when it holds vectors and a model is found
    (``search.meaning``); ``model_dir``: the model's folder (None: ``DOC_INDEX_MODEL_DIR``,
    else the user cache, else the packaged model). ``outcome``: a list the answer appends
    whether it used meaning to (``search.meaning.USED``, or the piece that was missing)."""

    model_dir: Path | None = None
    outcome: list[str] | None = None


class CacheEntry(NamedTuple):
    """One cache under a root: its name and whether ``manifest.json`` is a regular file."""

    path: str
    has_manifest: bool


class CacheInfo(NamedTuple):
    """What ``inspect`` says of a cache (the manifest's fields; ``valid`` false when the
    manifest is missing or unreadable, or a file's size cannot be read)."""

    cache_version: str
    document_count: int
    total_bytes: int
    valid: bool


class Why(TypedDict):
    query_terms: list[str]
    term_matches: int
    total_words: int


class Excerpt(TypedDict):
    """The part of a section a document holds: its lines in the raw file and the whole
    section's ``tokens``."""

    lines: list[int]
    of_tokens: int


class _Source(TypedDict):
    file: str
    title: str
    path: list[str]
    lines: list[int]


class Source(_Source, total=False):
    """Where a native document comes from (``search.provenance``): raw file, heading,
    heading path (ancestors, then the heading), first and last line; ``excerpt`` when the
    document holds part of the section (``search.packing``)."""

    excerpt: Excerpt


class _Document(TypedDict):
    id: str
    version: str
    content: str
    score: float
    tokens: int
    why: Why


class Document(_Document, total=False):
    """A selected section: ``score`` is a float (an ``F32`` for a Context Engine v0 cache,
    printed the reference's way). ``source``, after the spec's fields, only on a native
    cache (the spec allows optional provenance)."""

    source: Source


class Selection(TypedDict):
    query: str
    budget: int
    tokens_used: int
    documents_considered: int
    documents_selected: int
    documents_excluded_by_budget: int


class Answer(NamedTuple):
    """A SelectionResult: the selected sections, best first, and what was selected;
    ``meaning``: whether it used meaning (``search.meaning.USED``) or which piece was
    missing; None for a Context Engine v0 cache (answered by its own rules)."""

    documents: list[Document]
    selection: Selection
    meaning: str | None = None


READ_SCOPES = ("section", "page", "neighbours")
"""What ``read`` returns of a section: it, every section of its file, or those beside it."""


class OutlineSection(TypedDict):
    """One section in an outline: its id, heading (``""`` for a file's text before its
    first heading), depth (titled headings in its heading path: 0 for that text, 1 for a
    page's top heading) and stored token estimate."""

    id: str
    title: str
    depth: int
    tokens: int


class OutlineFile(TypedDict):
    """A file of an outline: its path, the tokens of all its sections (what reading it
    whole costs in content) and the sections listed, in file order."""

    file: str
    tokens: int
    sections: list[OutlineSection]


class OutlineSummary(TypedDict):
    """What an outline covers: the arguments (``depth`` and ``cursor`` null when not
    given), the files and sections that match them, how many sections this answer lists,
    and ``next``: the cursor to ask for the rest with (the id of the first section not
    listed), null when nothing is left."""

    prefix: str
    depth: int | None
    cursor: str | None
    budget: int
    files: int
    sections: int
    listed: int
    next: str | None


class Outline(NamedTuple):
    """A cache's files and headings within a budget (``search.navigation.outline``)."""

    files: list[OutlineFile]
    outline: OutlineSummary


class ReadDocument(TypedDict):
    """A section read by id: its text (or the marked part of it that fits, see
    ``Source.excerpt``), the estimate of that text, and the provenance resolve gives."""

    id: str
    content: str
    tokens: int
    source: Source


class ReadSummary(TypedDict):
    """What a read covers: its arguments (``line`` as given, null for the scope's start),
    the content tokens returned, the documents returned out of the sections in the scope,
    and ``next_line``: the line to ask from for the rest (same id and scope), null when
    everything was returned."""

    id: str
    scope: str
    line: int | None
    budget: int
    tokens_used: int
    documents_selected: int
    sections_in_scope: int
    next_line: int | None


class Reading(NamedTuple):
    """Sections read by id within a budget (``search.navigation.read``)."""

    documents: list[ReadDocument]
    read: ReadSummary
