"""MyST ```` ```{include} ```` and ```` ```{literalinclude} ```` in Markdown pages of a
Sphinx project using myst_parser or myst_nb: resolved as reStructuredText's; literal and
code includes become fenced blocks."""

from __future__ import annotations

import re
from collections.abc import Iterator

from ..directives import Directive, myst_directives
from .form import IncludeForm


def _directives(texts: list[str]) -> Iterator[Directive]:
    return myst_directives(texts, {"include", "literalinclude"})


FORM = IncludeForm(
    "myst", "md", ("conf.py", (b"myst_parser", b"myst_nb")),
    mark=re.compile(r"\{(?:literal)?include\}"),
    # (autodoc and eval-rst too: a page holding one is expanded)
    page_mark=re.compile(rb"\{(?:literalinclude|include|auto\w+|eval-rst)\}"),
    directives=_directives)
