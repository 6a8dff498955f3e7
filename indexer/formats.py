"""Which files are documentation, and in which markup, by their names."""

from __future__ import annotations

MARKDOWN_SUFFIXES = (".md", ".markdown", ".mdx")
RST_SUFFIXES = (".rst",)
DOC_SUFFIXES = MARKDOWN_SUFFIXES + RST_SUFFIXES
# A ``.txt`` file reaches the parser only where the project's Sphinx ``source_suffix`` makes
# it reStructuredText (``store.sources.docs_folder``); every other ``.txt`` is skipped and counted.
TXT_SUFFIX = ".txt"

# Formats a person would call documentation that doc-index does not index: each skipped
# file of these kinds is counted in the build summary (longest suffix first: ``.rst.txt``,
# Sphinx's copies of its sources, is told from ``.txt``).
OTHER_DOC_SUFFIXES = (
    ".rst.txt", ".md.txt", ".txt", ".adoc", ".asciidoc", ".asc", ".qmd", ".rmd", ".ipynb",
    ".org", ".textile", ".rdoc", ".pod", ".wiki", ".mediawiki", ".creole",
)


def is_doc_path(path: str) -> bool:
    return path.lower().endswith(DOC_SUFFIXES)


def is_rst_path(path: str) -> bool:
    """``.rst``, and ``.txt`` (only passed on to the parser when it is Sphinx's RST)."""
    return path.lower().endswith((*RST_SUFFIXES, TXT_SUFFIX))


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
