"""reStructuredText (``.rst``; ``.txt`` where a source passes it: Sphinx's
``source_suffix``): section titles as docutils decides them (``indexer.rst``)."""

from __future__ import annotations

from ..model import Block
from .format import Format


def _blocks(text: str, raw: bytes, limit: int | None, notes: list[str] | None) -> list[Block]:
    from ..rst import parse_rst  # lazy: docutils costs a build that parses nothing

    return parse_rst(text, raw, limit, notes)


def _warm() -> None:
    from ..rst_structure import parser  # lazy: docutils costs a build that parses nothing

    parser()


FORMAT = Format("reStructuredText", (".rst",), _blocks, _warm, syntax="rst",
                parsed_suffixes=(".txt",))
