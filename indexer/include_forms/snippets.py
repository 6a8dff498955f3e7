"""pymdownx.snippets ``--8<-- "path:selector"`` (MkDocs with ``pymdownx.snippets``):
single-line and block forms, paths from the snippet bases (the mkdocs.yml folder, then the
source root); selectors ``3:5``, ``3``, ``:5``, ``1:3,5:6`` or a ``[start:name]`` section;
``;--8<--`` is an escaped marker (the ``;`` is dropped)."""

from __future__ import annotations

import re

from .form import (
    Expansion,
    IncludeForm,
    Refused,
    SourceLine,
    between_markers,
    indented,
)


def _line(expansion: Expansion, lines: list[SourceLine], index: int, depth: int,
          stack: tuple[str, ...]) -> tuple[list[SourceLine], int] | None:
    if "8<" not in lines[index].text:
        return None
    marker = _snippet_marker(lines[index].text)
    if marker is None:
        return None
    indent, escape, written = marker
    line = lines[index]
    if escape:
        return [line._replace(text=line.text.replace(";", "", 1))], index + 1
    if written is not None:
        return _snippet_file(expansion, written, line, indent, depth, stack), index + 1
    out: list[SourceLine] = []
    end = index + 1
    while end < len(lines):
        inner = _snippet_marker(lines[end].text)
        if inner is not None and inner[2] is None and not inner[1]:
            end += 1
            break
        path_text = lines[end].text.strip()
        if path_text and not path_text.startswith(";"):
            out += _snippet_file(expansion, path_text, lines[end], indent, depth, stack)
        end += 1
    return out, end


def _snippet_file(expansion: Expansion, written: str, at: SourceLine, indent: str,
                  depth: int, stack: tuple[str, ...]) -> list[SourceLine]:
    path, selector = _split_selector(written)
    try:
        target = expansion.target(path, expansion.snippet_bases, stack, depth)
        selected = snippet_lines(target.lines, selector)
        inner = expansion.nested(selected, "md", depth, stack, target.path)
        return expansion.admit([ln._replace(text=indented(indent, ln.text)) for ln in inner])
    except Refused as refused:
        return [expansion.note(refused.args[0], written, at, indent)]


def _snippet_marker(text: str) -> tuple[str, str, str | None] | None:
    """A pymdownx snippet line: (indent, escape ``;``, quoted path or None for a block
    marker), or None."""
    stripped = text.lstrip(" \t")
    indent = text[:len(text) - len(stripped)]
    escape = ""
    if stripped.startswith(";"):
        escape, stripped = ";", stripped[1:]
    head = stripped.lstrip("-")
    if head == stripped or not head.startswith("8<"):
        return None
    tail = head[2:]
    rest = tail.lstrip("-")
    if rest == tail:
        return None
    rest = rest.strip()
    if not rest:
        return indent, escape, None
    if len(rest) >= 2 and rest[0] in "'\"" and rest[-1] == rest[0]:
        return indent, escape, rest[1:-1]
    return None


def _split_selector(written: str) -> tuple[str, str]:
    """``file.md:3:5`` -> ("file.md", "3:5"); ``file.md:name`` -> ("file.md", "name")."""
    path, colon, selector = written.partition(":")
    return (path, selector) if colon else (written, "")


_SECTION = re.compile(r"-{1,}8<-{1,}[ \t]*\[(start|end):([\w-]+)\]")


def snippet_lines(lines: list[SourceLine], selector: str) -> list[SourceLine]:
    """pymdownx: ``3:5``, ``3`` or ``3:`` (to the end), ``:5``, ``1:3,5:6``, or a section
    name (``--8<-- [start:name]`` ... ``[end:name]``); section marker lines are never
    shown."""
    selector = selector.strip()
    if selector and not selector.replace(":", "").replace(",", "").replace("-", "") \
            .isdigit():
        selected = between_markers(lines, _SECTION, selector, lambda m: m.group(1), "section")
    elif selector:
        selected = []
        for part in selector.split(","):
            begin, _, end = part.partition(":")
            try:
                first = int(begin) if begin.strip() else 1
                last = int(end) if end.strip() else len(lines)
            except ValueError:
                raise Refused(f"bad line range ({selector[:60]})") from None
            selected += [ln for ln in lines if first <= ln.line <= last]
    else:
        selected = lines
    return [ln for ln in selected if not _SECTION.search(ln.text)]


FORM = IncludeForm("snippets", "md", ("mkdocs.yml", (b"pymdownx.snippets",)),
                   mark=re.compile(r"8<"), page_mark=re.compile(rb"8<"), order=10, line=_line)
