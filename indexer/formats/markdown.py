"""Markdown (``.md``, ``.markdown``, ``.mdx``): headings as markdown-it-py's block parser
finds them (``indexer.markdown``). Also the format of any other file a source passes."""

from __future__ import annotations

from ..model import Block
from .format import Format


def _blocks(text: str, raw: bytes, limit: int | None, notes: list[str] | None) -> list[Block]:
    from ..markdown import parse_markdown  # lazy: markdown-it-py costs a build that parses nothing

    return parse_markdown(text, raw, limit, notes)


def _warm() -> None:
    from ..markdown import warm_parsers  # lazy: markdown-it-py costs a build that parses nothing

    warm_parsers()


FORMAT = Format("Markdown", (".md", ".markdown", ".mdx"), _blocks, _warm, fenced=True,
                syntax="md", fallback=True)
