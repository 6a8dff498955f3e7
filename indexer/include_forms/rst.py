"""reStructuredText ``.. include::`` and ``.. literalinclude::`` (docutils, Sphinx): paths
from the including file's folder, ``/x`` from the docs root; ``literalinclude`` text
becomes a ``::`` literal block. Their options are the engine's (``indexer.includes``)."""

from __future__ import annotations

import re
from collections.abc import Iterator

from ..directives import Directive, rst_directives
from .form import IncludeForm


def _directives(texts: list[str]) -> Iterator[Directive]:
    return rst_directives(texts, {"include", "literalinclude"})


FORM = IncludeForm(
    "rst", "rst", None,
    mark=re.compile(r"\.\.[ \t]+(?:literal)?include::"),
    # (autodoc and module directives too: a page holding one is expanded)
    page_mark=re.compile(rb"\.\.[ \t]+(?:auto\w+|literalinclude|include|(?:py:)?(?:current)?"
                         rb"module)::"),
    directives=_directives)
