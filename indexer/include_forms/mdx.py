"""mdx_include ``{! path [ln:2-3] !}`` (MkDocs with mdx_include): the path from the
mkdocs.yml folder, ``[ln:...]`` line ranges; ``\\{!`` escapes a tag."""

from __future__ import annotations

import re

from .form import (
    Expansion,
    IncludeForm,
    Refused,
    SourceLine,
    number_ranges,
    replace_tags,
)


def _line(expansion: Expansion, lines: list[SourceLine], index: int, depth: int,
          stack: tuple[str, ...]) -> tuple[list[SourceLine], int] | None:
    line = lines[index]
    if "{!" not in line.text:
        return None
    return replace_tags(line, "{!", "!}",
                        lambda body: _include(expansion, body, line, depth, stack)), index + 1


def _include(expansion: Expansion, body: str, at: SourceLine, depth: int,
             stack: tuple[str, ...]) -> list[SourceLine]:
    written = body.split("|", 1)[0].strip().lstrip(">+-").strip()
    spec: str | None = None
    if written.endswith("]") and "[ln:" in written:
        written, _, spec = written[:-1].rpartition("[ln:")
        written = written.strip()
    try:  # (a bad range too is a note: it was an internal error of the whole build)
        ranges = number_ranges(spec.replace("-", ":")) if spec is not None else []
        target = expansion.target(written, [expansion.config_base], stack, depth)
        selected = target.lines
        if ranges:
            selected = [ln for ln in selected if any(a <= ln.line <= b for a, b in ranges)]
        return expansion.admit(selected)
    except Refused as refused:
        return [expansion.note(refused.args[0], written, at)]


FORM = IncludeForm("mdx", "md", ("mkdocs.yml", (b"mdx_include",)), mark=re.compile(r"\{!"),
                   page_mark=re.compile(rb"\{!"), order=40, line=_line)
