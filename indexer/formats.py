"""Which files are documentation, and in which markup, by their names."""

from __future__ import annotations

MARKDOWN_SUFFIXES = (".md", ".markdown", ".mdx")
RST_SUFFIXES = (".rst",)
DOC_SUFFIXES = MARKDOWN_SUFFIXES + RST_SUFFIXES


def is_doc_path(path: str) -> bool:
    return path.lower().endswith(DOC_SUFFIXES)


def is_rst_path(path: str) -> bool:
    return path.lower().endswith(RST_SUFFIXES)
