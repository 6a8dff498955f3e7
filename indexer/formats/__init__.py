"""Documentation formats as a registry: one module of this package a format.

A format is a module here that declares ``FORMAT``, a :class:`~.format.Format` (its
suffixes, how its text becomes blocks, whether its pages are expanded and how): the
package lists its modules when first imported and takes each ``FORMAT`` (``indexer.registry``:
markdown-it-py's shape, a rule list of one file a rule; adding a format is adding its file
and its test).

Everything that asks "which files are documentation, in which markup" asks here: the
sources (which files to index), the indexer (which parser), the store's expansion (which
include forms) and its parse workers (which parsers to set up before forking).

The modules are read in name order, and each must claim suffixes no other claims
(``tests/test_format_registry.py``). Importing them costs no parser: each imports its
parser when first called.
"""

from __future__ import annotations

from ..registry import declared
from .format import Format

# A ``.txt`` file reaches the parser only where the project's Sphinx ``source_suffix`` makes
# it reStructuredText (``sources.docs_folder``); every other ``.txt`` is skipped and counted.
TXT_SUFFIX = ".txt"

# Formats a person would call documentation that doc-index does not index: each skipped
# file of these kinds is counted in the build summary (longest suffix first: ``.rst.txt``,
# Sphinx's copies of its sources, is told from ``.txt``). A registered format's suffixes
# are left out (``other_doc_kind``).
_DOC_LIKE_SUFFIXES = (
    ".rst.txt", ".md.txt", ".txt", ".adoc", ".asciidoc", ".asc", ".qmd", ".rmd", ".ipynb",
    ".org", ".textile", ".rdoc", ".pod", ".wiki", ".mediawiki", ".creole",
)

FORMATS = tuple(declared(__name__, __path__, "FORMAT", Format))
DOC_SUFFIXES = tuple(suffix for f in FORMATS for suffix in f.suffixes)
OTHER_DOC_SUFFIXES = tuple(s for s in _DOC_LIKE_SUFFIXES if not s.endswith(DOC_SUFFIXES))
FALLBACK = next(f for f in FORMATS if f.fallback)


def format_of(path: str) -> Format:
    """The format ``path`` is parsed as: the one claiming its suffix (or passed suffix,
    ``.txt``), else the fallback (Markdown: ``--everything`` passes files of any name)."""
    lower = path.lower()
    for candidate in FORMATS:
        if lower.endswith(candidate.suffixes) or (
                candidate.parsed_suffixes and lower.endswith(candidate.parsed_suffixes)):
            return candidate
    return FALLBACK


def is_doc_path(path: str) -> bool:
    return path.lower().endswith(DOC_SUFFIXES)


def is_txt_path(path: str) -> bool:
    lower = path.lower()
    return lower.endswith(TXT_SUFFIX) and not lower.endswith((".rst.txt", ".md.txt"))


def other_doc_kind(path: str) -> str | None:
    """The suffix (lower case) of a documentation-like file doc-index does not index, or
    None (an indexed format, or no documentation at all)."""
    lower = path.lower()
    for suffix in OTHER_DOC_SUFFIXES:
        if lower.endswith(suffix):
            return suffix
    return None


def described() -> str:
    """The indexed formats as an error message names them: ``Markdown (.md, .markdown,
    .mdx) or reStructuredText (.rst)``."""
    names = [f"{f.name} ({', '.join(f.suffixes)})" for f in FORMATS]
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"


__all__ = ["DOC_SUFFIXES", "FALLBACK", "FORMATS", "OTHER_DOC_SUFFIXES", "TXT_SUFFIX", "Format",
           "described", "format_of", "is_doc_path", "is_txt_path", "other_doc_kind"]
