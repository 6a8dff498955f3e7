"""Directive blocks found in a page's lines: RST ``.. name:: arg`` and MyST fences.

Shared by the include expansion and autodoc: both need a directive's argument, options
and content, and both must leave alone what only looks like a directive, inside a
literal block (RST ``::`` paragraphs, ``code-block``, comments) or a Markdown code fence.
Lines are the page split at ``\\n`` only (offsets into the raw file stay byte-exact);
every scan is one pass.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import NamedTuple

# `.. name:: argument` (name may carry a domain: py:module); one anchored pass.
_RST_DIRECTIVE = re.compile(r"([ \t]*)\.\.[ \t]+([A-Za-z][\w:+-]*)::(?:[ \t]+(.*)|[ \t]*)")
_FENCE = re.compile(r"([ \t]*)(`{3,}|~{3,}|:{3,})(.*)")
_MYST_INFO = re.compile(r"\{([A-Za-z][\w:+-]*)\}(?:[ \t]+(.*)|[ \t]*)")
# RST directives whose content is not RST: nothing inside them is a directive.
RST_LITERAL = {"code-block", "code", "sourcecode", "highlight", "doctest", "testcode",
               "testoutput", "raw", "math", "productionlist", "parsed-literal", "csv-table",
               "literalinclude", "graphviz", "mermaid", "uml", "ipython", "jupyter-execute"}
# RST directives known to show their content as part of the page (admonitions,
# containers, tabs, object descriptions): directives are looked for inside them. The
# content of any other directive is left alone, like a literal block: a project's own
# directive may hide it (SQLAlchemy's ``changelog_imports`` includes every older
# changelog only to read it).
RST_CONTAINERS = {
    "note", "warning", "tip", "hint", "important", "caution", "danger", "error",
    "attention", "admonition", "seealso", "versionadded", "versionchanged", "deprecated",
    "versionremoved", "topic", "sidebar", "container", "only", "ifconfig", "tab", "tabs",
    "group-tab", "tab-set", "tab-item", "rst-class", "cssclass", "compound", "glossary",
    "hlist", "list-table", "table", "figure", "epigraph", "highlights", "pull-quote",
    "class", "dropdown", "card", "grid", "grid-item", "grid-item-card", "details",
    "todo", "centered", "function", "method", "attribute", "data", "exception", "module",
    "decorator", "classmethod", "staticmethod", "property", "describe", "object",
    "envvar", "program", "option", "confval", "automodule", "autoclass", "autoexception",
    "autofunction", "automethod", "autoattribute", "autodata", "autoproperty",
}
# MyST directives whose body is code or another language, not Markdown.
MYST_CODE = {"code-block", "code", "sourcecode", "code-cell", "math", "raw", "mermaid",
             "eval-rst", "literalinclude", "include", "csv-table", "graphviz"}


class Directive(NamedTuple):
    """One directive block. Lines are 0-based indexes into the page's lines:
    ``lines[start:end]`` is the whole block (trailing blank lines excluded)."""

    name: str
    argument: str
    options: dict[str, str]  # a flag option has the value ""
    content: list[str]  # dedented
    start: int
    end: int
    indent: str  # the indentation of the directive's first line
    syntax: str  # "rst" or "myst"


def indent_of(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def _option(line: str) -> tuple[str, str] | None:
    """``:name: value`` -> (name, value); None when ``line`` is not an option line."""
    stripped = line.strip()
    if not stripped.startswith(":"):
        return None
    end = stripped.find(":", 1)
    if end <= 1:
        return None
    name = stripped[1:end]
    rest = stripped[end + 1:]
    if any(c.isspace() for c in name) or (rest and not rest[0].isspace()):
        return None
    return name, rest.strip()


def _dedent(lines: list[str]) -> list[str]:
    margins = [indent_of(line) for line in lines if line.strip()]
    margin = min(margins) if margins else 0
    return [line[margin:] for line in lines]


def _rst_block(lines: list[str], start: int, name: str, argument: str) -> Directive:
    """The RST directive starting at ``lines[start]``: argument continuation lines,
    options (with continuation lines), then content, until the first non-blank line
    indented no deeper than the directive."""
    indent = indent_of(lines[start])
    index = start + 1
    inner = lambda i: i < len(lines) and lines[i].strip() and indent_of(lines[i]) > indent  # noqa: E731
    while inner(index) and _option(lines[index]) is None:
        argument = f"{argument} {lines[index].strip()}".strip()
        index += 1
    options: dict[str, str] = {}
    last = index
    while inner(index):
        option = _option(lines[index])
        if option is None:
            break
        option_indent = indent_of(lines[index])
        index += 1
        value = option[1]
        while inner(index) and indent_of(lines[index]) > option_indent:
            value = f"{value} {lines[index].strip()}".strip()
            index += 1
        options[option[0]] = value
        last = index
    content_start = index
    while index < len(lines) and (not lines[index].strip() or indent_of(lines[index]) > indent):
        if lines[index].strip():
            last = index + 1
        index += 1
    content = _dedent(lines[content_start:last]) if last > content_start else []
    while content and not content[0].strip():
        content.pop(0)
    return Directive(name, argument, options, content, start, max(last, start + 1),
                     lines[start][:indent], "rst")


def rst_directives(lines: list[str], names: set[str] | frozenset[str]) -> Iterator[Directive]:
    """The directives named in ``names``, in order, outside literal blocks and
    comments. The content of the directives of ``RST_CONTAINERS`` and of domain
    directives (``py:function``...) is looked into (a ``note`` may hold an
    ``include``); the content of any other directive is skipped."""
    literal_indent: int | None = None
    index = 0
    while index < len(lines):
        line = lines[index]
        if literal_indent is not None:
            if not line.strip() or indent_of(line) > literal_indent:
                index += 1
                continue
            literal_indent = None
        match = _RST_DIRECTIVE.fullmatch(line)
        if match and match.group(2) in names:
            block = _rst_block(lines, index, match.group(2), (match.group(3) or "").strip())
            yield block
            index = block.end
            continue
        if match:
            name = match.group(2)
            if (":" not in name or name.rsplit(":", 1)[-1] in RST_LITERAL) \
                    and name not in RST_CONTAINERS:
                literal_indent = indent_of(line)
        elif line.lstrip().startswith("..") and (line.strip() == ".." or
                                                 line.lstrip()[2:3] in (" ", "\t")):
            literal_indent = indent_of(line)  # a comment, a target, a footnote
        elif line.rstrip().endswith("::"):
            literal_indent = indent_of(line)  # "Example::" starts a literal block
        index += 1


def _closes(line: str, char: str, length: int) -> bool:
    stripped = line.strip()
    return len(stripped) >= length and stripped == char * len(stripped)


class _Fence(NamedTuple):
    kind: str  # "code", "directive" (a MyST directive whose body is not Markdown)
    name: str  # the directive's name, "" for code
    argument: str
    start: int
    end: int  # index of the closing fence line (len(lines) when unclosed)
    indent: str


def _fences(lines: list[str], blocks: frozenset[str] | set[str] = MYST_CODE
            ) -> Iterator[_Fence]:
    """The fenced blocks of a Markdown page, in order. A MyST directive whose body is
    Markdown (``note``, ``tab``...) is a container: its body is scanned too, and its
    closing fence closes it (it does not open a code block)."""
    containers: list[tuple[str, int]] = []
    index = 0
    while index < len(lines):
        match = _FENCE.fullmatch(lines[index])
        if not match:
            index += 1
            continue
        fence, info = match.group(2), match.group(3).strip()
        if containers and not info and _closes(lines[index], *containers[-1]):
            containers.pop()
            index += 1
            continue
        directive = _MYST_INFO.fullmatch(info)
        if (fence[0] == ":" and not directive) or (fence[0] == "`" and "`" in info):
            index += 1  # a colon line, or an inline code span opening a line
            continue
        if directive and directive.group(1) not in blocks:
            containers.append((fence[0], len(fence)))
            index += 1
            continue
        end = index + 1
        while end < len(lines) and not _closes(lines[end], fence[0], len(fence)):
            end += 1
        name = directive.group(1) if directive else ""
        argument = (directive.group(2) or "").strip() if directive else ""
        yield _Fence("directive" if directive else "code", name, argument, index, end,
                     match.group(1))
        index = end + 1


def markdown_code_mask(lines: list[str]) -> list[bool]:
    """For each line, True when it belongs to a Markdown code fence (fence lines
    included) or to a MyST directive whose body is not Markdown (``MYST_CODE``)."""
    mask = [False] * len(lines)
    for fence in _fences(lines):
        for covered in range(fence.start, min(fence.end + 1, len(lines))):
            mask[covered] = True
    return mask


def myst_directives(lines: list[str], names: set[str] | frozenset[str]) -> Iterator[Directive]:
    """MyST fenced directives (```` ```{name} argument ````, ``:::{name}``) named in
    ``names``, with ``:key: value`` options or a ``---`` block of ``key: value`` lines
    (their body is taken as a block, not scanned as Markdown)."""
    for fence in _fences(lines, MYST_CODE | set(names)):
        if fence.kind == "directive" and fence.name in names:
            options, content = _myst_options(lines[fence.start + 1:fence.end])
            yield Directive(fence.name, fence.argument, options, _dedent(content),
                            fence.start, min(fence.end + 1, len(lines)), fence.indent, "myst")


def _myst_options(body: list[str]) -> tuple[dict[str, str], list[str]]:
    """A MyST directive's options (``:key: value`` lines or a ``---`` block of
    ``key: value`` lines at its start) and the rest, its content."""
    options: dict[str, str] = {}
    index = 0
    if body and body[0].strip() == "---":
        index = 1
        while index < len(body) and body[index].strip() != "---":
            key, sep, value = body[index].strip().partition(":")
            if sep and key:
                options[key.strip()] = value.strip().strip("\"'")
            index += 1
        return options, body[index + 1:]
    while index < len(body):
        option = _option(body[index])
        if option is None:
            break
        options[option[0]] = option[1]
        index += 1
    return options, body[index:]


__all__ = ["Directive", "MYST_CODE", "RST_CONTAINERS", "RST_LITERAL", "indent_of",
           "markdown_code_mask",
           "myst_directives", "rst_directives"]
