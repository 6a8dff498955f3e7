"""FastAPI's ``{* path ln[...] hl[...] *}`` (MkDocs with markdown_include_variants):
the path from the mkdocs.yml folder, its preferred variant file (Annotated and the newest
Python first), the ``ln[...]`` ranges with a comment line where code is left out, as a
Python fenced block; the whole line must be the tag."""

from __future__ import annotations

import re

from .form import (
    Expansion,
    IncludeForm,
    Refused,
    SourceLine,
    Target,
    fenced,
    number_ranges,
)

_FASTAPI = re.compile(r"\{\*[ \t]*(\S+)[ \t]*(.*)\*\}")
_FASTAPI_CONFIG = re.compile(r"(\w+)\[([^\]]+)\]")


def _line(expansion: Expansion, lines: list[SourceLine], index: int, depth: int,
          stack: tuple[str, ...]) -> tuple[list[SourceLine], int] | None:
    line = lines[index]
    if not (line.text.startswith("{*") and line.text.rstrip().endswith("*}")):
        return None
    return _fastapi(expansion, line, depth, stack), index + 1


def _fastapi(expansion: Expansion, line: SourceLine, depth: int,
             stack: tuple[str, ...]) -> list[SourceLine]:
    match = _FASTAPI.fullmatch(line.text.rstrip())
    if match is None:
        return [line]
    written, config = match.group(1), match.group(2)
    try:
        target = _variant(expansion, written, stack, depth)
        ranges = []
        for name, value in _FASTAPI_CONFIG.findall(config):
            if name == "ln":
                ranges += number_ranges(value)
        selected = fastapi_lines(target.lines, sorted(ranges), line)
        return expansion.admit(fenced(selected, "python", line, ""))
    except Refused as refused:
        return [expansion.note(refused.args[0], written, line)]


def _variant(expansion: Expansion, written: str, stack: tuple[str, ...], depth: int) -> Target:
    """The file FastAPI's docs show for ``written``: its preferred variant (Annotated
    and the newest Python first), as markdown-include-variants picks it."""
    base = [expansion.config_base]
    stem, dot, ext = written.rpartition(".")
    if not dot:
        return expansion.target(written, base, stack, depth)
    for suffix in ("_an_py310", "_an_py39", "_an", "_py310", "_py39"):
        try:
            return expansion.target(f"{stem}{suffix}.{ext}", base, stack, depth)
        except Refused as refused:
            if refused.args[0] != "not found":
                raise
            expansion.count -= 1  # a variant looked for is not an include
    return expansion.target(written, base, stack, depth)


def fastapi_lines(lines: list[SourceLine], ranges: list[tuple[int, int]],
                  at: SourceLine) -> list[SourceLine]:
    """The code FastAPI's docs show for ``ln[...]`` ranges: the ranges, with a comment
    line where code is left out; the whole file without ranges."""
    if not ranges:
        return lines
    made = lambda text: SourceLine(text, at.file, at.line)  # noqa: E731
    out: list[SourceLine] = []
    for index, (first, last) in enumerate(ranges):
        if index == 0 and first > 1:
            out += [made("# Code above omitted 👆"), made("")]
        elif index > 0:
            out += [made(""), made("# Code here omitted 👈"), made("")]
        out += [ln for ln in lines if first <= ln.line <= last]
    if ranges[-1][1] < len(lines):
        out += [made(""), made("# Code below omitted 👇")]
    return out


FORM = IncludeForm("fastapi", "md", ("mkdocs.yml", (b"markdown_include_variants",)),
                   mark=re.compile(r"\{\*"), page_mark=re.compile(rb"\{\*"), order=20,
                   line=_line)
