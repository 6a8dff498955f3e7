"""What a documentation format module declares: its file names and how its text becomes
blocks (``indexer.formats`` lists the modules that declare one)."""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from ..model import Block

# (normalized text, its UTF-8 bytes, the blocks a caller keeps or None, notes) -> blocks:
# with a limit, at least the first ``limit + 1`` blocks are found (the last one's end may
# be wrong); what a cap left out is said in the notes.
BlockParser = Callable[[str, bytes, "int | None", "list[str] | None"], list[Block]]


class Format(NamedTuple):
    """One documentation format, as its module's ``FORMAT``.

    ``suffixes`` (lower case) are the file names a source indexes as this format;
    ``parsed_suffixes`` are parsed as it too when a source passes such a file (``.txt``:
    only where Sphinx's ``source_suffix`` makes it reStructuredText, decided by the source).
    ``blocks`` finds the sections (headed, root, parts: ``indexer.model.Block``) under the
    indexer's caps (``indexer.limits``), imports its parser when first called, so a build
    that parses nothing imports none; ``warm`` sets the parser up once, before a build
    forks its workers. ``fenced``: text without headings is not cut inside a Markdown code
    fence. ``syntax``: the include and autodoc forms its pages are expanded with (``md``,
    ``rst``; None: its pages are not expanded). ``fallback``: the format a file of any
    other name is parsed as when a source passes it (``--everything``): one format has it.
    """

    name: str
    suffixes: tuple[str, ...]
    blocks: BlockParser
    warm: Callable[[], None]
    fenced: bool = False
    syntax: str | None = None
    parsed_suffixes: tuple[str, ...] = ()
    fallback: bool = False
