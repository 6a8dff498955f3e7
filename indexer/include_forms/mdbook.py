"""mdBook ``{{#include path:selector}}`` and ``{{#rustdoc_include ...}}`` (a ``book.toml``
project): paths from the including file's folder; selectors ``5``, ``2:10``, ``2:``,
``:10`` or an ``ANCHOR`` name; anchor marker lines are never shown; ``\\{{`` escapes a
tag."""

from __future__ import annotations

import posixpath
import re

from .form import (
    Expansion,
    IncludeForm,
    Refused,
    SourceLine,
    between_markers,
    replace_tags,
)


def _line(expansion: Expansion, lines: list[SourceLine], index: int, depth: int,
          stack: tuple[str, ...]) -> tuple[list[SourceLine], int] | None:
    line = lines[index]
    if "{{" not in line.text:
        return None

    def include(body: str) -> list[SourceLine] | None:
        kind, _, argument = body.strip().partition(" ")
        if kind in ("#include", "#rustdoc_include") and argument.strip():
            return _include(expansion, argument.strip(), line, depth, stack)
        return None

    return replace_tags(line, "{{", "}}", include), index + 1


def _include(expansion: Expansion, argument: str, at: SourceLine, depth: int,
             stack: tuple[str, ...]) -> list[SourceLine]:
    path, _, selector = argument.partition(":")
    try:
        target = expansion.target(path, [posixpath.dirname(at.file)], stack, depth)
        selected = mdbook_lines(target.lines, selector)
        return expansion.admit(expansion.nested(selected, "md", depth, stack, target.path))
    except Refused as refused:
        return [expansion.note(refused.args[0], argument, at)]


_ANCHOR = re.compile(r"ANCHOR(_END)?:[ \t]*([\w-]+)")


def mdbook_lines(lines: list[SourceLine], selector: str) -> list[SourceLine]:
    """mdBook: ``5`` (one line), ``2:10``, ``2:``, ``:10`` (1-based, inclusive), an
    anchor name (the lines between ``ANCHOR: name`` and ``ANCHOR_END: name``), or all;
    anchor marker lines are never shown."""
    selector = selector.strip()
    if not selector:
        selected = lines
    elif all(part.strip().isdigit() or not part.strip() for part in selector.split(":")):
        parts = selector.split(":")
        first = int(parts[0]) if parts[0].strip() else 1
        last = int(parts[1]) if len(parts) > 1 and parts[1].strip() else \
            first if len(parts) == 1 else len(lines)
        selected = [ln for ln in lines if first <= ln.line <= last]
    else:
        selected = between_markers(lines, _ANCHOR, selector,
                                   lambda m: "end" if m.group(1) else "start", "anchor")
    return [ln for ln in selected if not _ANCHOR.search(ln.text)]


FORM = IncludeForm("mdbook", "md", ("book.toml", ()), mark=re.compile(r"\{\{"),
                   page_mark=re.compile(rb"\{\{"), order=30, line=_line)
