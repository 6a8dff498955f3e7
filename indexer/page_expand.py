"""A page as its renderer shows it: includes inlined, autodoc directives documented.

This is the one entry point the indexer needs (see docs/decisions/autodoc-and-includes.md): it runs
the include expansion, then replaces each autodoc directive of the expanded text with
its documented objects written in the page's own markup (a heading per object, its
signature in a code block, its docstring), and returns the text, the span map, the
dependencies and where each documented object lies (byte ranges: the sections to be).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from typing import NamedTuple

from .autodoc import Autodoc, AutodocRequest, Documented, markdown_requests, rst_requests
from .directives import markdown_code_mask
from .includes import (
    DEFAULT_LIMITS,
    FORMS,
    Dependency,
    IncludeLimits,
    SourceLine,
    build_expanded,
    expand_include_lines,
    fenced,
    page_lines,
    sha256_hex,
    syntax_of,
)
from .module_finder import ModuleFinder, Reader, SphinxConf, search_roots

_RST_NEW_STYLES = "~^\"'`+#*=-:._"
_ADORNMENT = re.compile(r"([!-/:-@\[-`{-~])\1+[ \t]*")
_ATX = re.compile(r"(#{1,6})[ \t]")


class PageObject(NamedTuple):
    """A documented object's place in the expanded text (the section it makes)."""

    object: Documented
    start: int  # byte offsets into the expanded text
    end: int
    level: int  # heading level given to it (0: shown without a heading)


class PageExpansion(NamedTuple):
    text: str
    spans: tuple  # of includes.Span
    dependencies: tuple[Dependency, ...]
    notes: tuple[str, ...]
    objects: tuple[PageObject, ...]
    unresolved: tuple[str, ...]  # "<name>: <reason>" for each directive not documented
    includes: int  # include directives met (expanded, or left as a note)


class PageContext(NamedTuple):
    """What a build knows about a source, once for all its pages. ``finder`` caches the
    modules read; make it with :func:`make_finder` (one per build and source)."""

    read: Reader
    conf: SphinxConf | None = None
    finder: ModuleFinder | None = None
    docs_root: str = ""
    config_dir: str | None = None
    snippet_bases: tuple[str, ...] | None = None
    forms: frozenset[str] = FORMS
    autodoc: bool = True
    limits: IncludeLimits = DEFAULT_LIMITS
    hasher: Callable[[bytes], str] = sha256_hex


def make_finder(read: Reader, conf: SphinxConf | None = None,
                roots: Sequence[str] | None = None,
                hasher: Callable[[bytes], str] = sha256_hex) -> ModuleFinder:
    """The module finder of a source: ``roots`` default to :func:`search_roots`."""
    return ModuleFinder(read, tuple(roots) if roots is not None else search_roots(conf),
                        outside=conf.outside if conf else (), hasher=hasher)


def expand_page(text: str, page: str, context: PageContext,
                syntax: str | None = None) -> PageExpansion:
    syntax = syntax or syntax_of(page)
    lines, dependencies, notes, includes = expand_include_lines(
        page_lines(text, page), page, context.read, syntax=syntax,
        docs_root=context.docs_root, config_dir=context.config_dir,
        snippet_bases=context.snippet_bases, forms=context.forms, limits=context.limits,
        hasher=context.hasher)
    objects: list[Documented] = []
    unresolved: list[str] = []
    levels: dict[int, int] = {}
    if context.autodoc:
        finder = context.finder or make_finder(context.read, context.conf,
                                               hasher=context.hasher)
        finder.touched = {}
        lines = _document(lines, syntax, Autodoc(finder, context.conf), objects, unresolved,
                          levels)
        known = {d.path for d in dependencies}
        dependencies += [Dependency(path, "not found" if digest is None else "read", digest)
                         for path, digest in sorted(finder.touched.items())
                         if path not in known]
    expanded = build_expanded(lines, dependencies, notes)
    return PageExpansion(expanded.text, expanded.spans, expanded.dependencies,
                         expanded.notes, _places(lines, objects, levels), tuple(unresolved),
                         includes)


def _document(lines: list[SourceLine], syntax: str, autodoc: Autodoc,
              objects: list[Documented], unresolved: list[str],
              levels: dict[int, int]) -> list[SourceLine]:
    texts = [line.text for line in lines]
    requests = list(rst_requests(texts) if syntax == "rst" else markdown_requests(texts))
    if not requests:
        return lines
    writer: _RstWriter | _MarkdownWriter = \
        _RstWriter(texts) if syntax == "rst" else _MarkdownWriter(texts)
    out: list[SourceLine] = []
    done = 0
    for request in requests:
        if request.start < done:
            continue
        out += lines[done:request.start]
        result = autodoc.document(request)
        at = lines[request.start]
        if result.problem:
            unresolved.append(result.problem)
            out.append(at._replace(text=f"{request.indent}[autodoc not found: "
                                        f"{result.problem[:300]}]"))
        else:
            for documented in result.objects:
                objects.append(documented)
                out += writer.write(documented, request, len(objects) - 1)
        done = request.end
    levels.update(writer.levels)
    return out + lines[done:]


def _places(lines: list[SourceLine], objects: list[Documented],
            levels: dict[int, int]) -> tuple[PageObject, ...]:
    ranges: dict[int, list[int]] = {}
    offset = 0
    for index, line in enumerate(lines):
        size = len(line.text.encode("utf-8")) + (1 if index + 1 < len(lines) else 0)
        if line.mark >= 0:
            span = ranges.setdefault(line.mark, [offset, offset])
            span[1] = offset + size
        offset += size
    return tuple(PageObject(objects[mark], start, end, levels.get(mark, 0))
                 for mark, (start, end) in sorted(ranges.items()))


def _object_lines(documented: Documented, mark: int, heading: list[str],
                  signature: list[str], indent: str,
                  body: list[str] | None = None) -> list[SourceLine]:
    def line(text: str) -> SourceLine:
        return SourceLine(text, documented.file, documented.first_line,
                          documented.last_line, mark)

    if body is None:
        body = documented.text.split("\n") if documented.text else []
    out = [line(text) for text in heading]
    out += [line(text) for text in signature]
    if body:
        out += [line(indent + text if text else "") for text in body] + [line("")]
    return out


class _MarkdownWriter:
    """Objects as Markdown: ``#`` headings one level below the enclosing heading (or at
    mkdocstrings' ``heading_level``), the signature in a ``python`` fence."""

    def __init__(self, texts: list[str]) -> None:
        self.texts = texts
        self.mask = markdown_code_mask(texts)
        self.levels: dict[int, int] = {}

    def level_before(self, index: int) -> int:
        for position in range(index - 1, -1, -1):
            match = _ATX.match(self.texts[position])
            if match and not self.mask[position]:
                return len(match.group(1))
        return 0

    def write(self, documented: Documented, request: AutodocRequest,
              mark: int) -> list[SourceLine]:
        level = self.level_before(request.start) + 1 + documented.depth
        if request.kind == "mkdocstrings":  # mkdocstrings' heading_level, default 2;
            base = request.options.get("heading_level")  # without a root heading its
            base = base if isinstance(base, int) and 1 <= base <= 6 else 2  # members
            shown = bool(request.options.get("show_root_heading"))  # take its level
            level = base + documented.depth - (0 if shown else 1)
        level = max(1, min(level, 6))
        heading = []
        if documented.title:
            heading = [f"{'#' * level} {documented.title}", ""]
            self.levels[mark] = level
        signature: list[str] = []
        if documented.signature:
            at = SourceLine("", documented.file, documented.first_line)
            signature = [ln.text for ln in fenced(
                [at._replace(text=t) for t in documented.signature.split("\n")],
                "python", at, "")] + [""]
        body = _shift_headings(documented.text.split("\n"), level) if documented.text else []
        return _object_lines(documented, mark, heading, signature, "", body)


def _shift_headings(lines: list[str], level: int) -> list[str]:
    """Markdown headings of a docstring put below the object's heading, as mkdocstrings
    does (``## Example`` under a level-3 object becomes ``#####``, at most 6)."""
    mask = markdown_code_mask(lines)
    out = []
    for text, in_code in zip(lines, mask):
        match = None if in_code else _ATX.match(text)
        if match:
            depth = min(len(match.group(1)) + level, 6)
            text = "#" * depth + text[len(match.group(1)):]
        out.append(text)
    return out


class _RstWriter:
    """Objects as RST: titles one level below the enclosing section, in the page's own
    adornment styles where it has one for that level (a new style otherwise); the
    signature as a literal block. An indented directive (inside another) gets no
    titles: a section cannot open there."""

    def __init__(self, texts: list[str]) -> None:
        self.texts = texts
        self.levels: dict[int, int] = {}  # mark -> the level of the title written
        self.styles: list[tuple[str, bool]] = []
        self.title_levels: list[tuple[int, int]] = []  # (line index, level)
        for index in range(1, len(texts)):
            style = self.style_at(index)
            if style is None:
                continue
            if style not in self.styles:
                self.styles.append(style)
            self.title_levels.append((index, self.styles.index(style) + 1))

    def style_at(self, index: int) -> tuple[str, bool] | None:
        line, title = self.texts[index], self.texts[index - 1]
        if not _ADORNMENT.fullmatch(line) or not title.strip() or title[0] in " \t":
            return None
        if _ADORNMENT.fullmatch(title):
            return None
        char = line[0]
        over = index >= 2 and self.texts[index - 2].rstrip() == line.rstrip()
        return char, over

    def level_before(self, index: int) -> int:
        level = 0
        for position, title_level in self.title_levels:
            if position >= index:
                break
            level = title_level
        return level

    def style_for(self, level: int) -> tuple[str, bool]:
        while len(self.styles) < level:
            used = {char for char, _ in self.styles}
            fresh = next((c for c in _RST_NEW_STYLES if c not in used), "~")
            self.styles.append((fresh, False))
        return self.styles[level - 1]

    def write(self, documented: Documented, request: AutodocRequest,
              mark: int) -> list[SourceLine]:
        indent = request.indent
        heading: list[str] = []
        if documented.title and not indent:
            level = self.level_before(request.start) + 1 + documented.depth
            self.levels[mark] = level
            char, over = self.style_for(level)
            rule = char * max(len(documented.title), 3)
            heading = ([rule] if over else []) + [documented.title, rule, ""]
        elif documented.title:
            heading = [f"{indent}**{documented.title}**", ""]
        signature: list[str] = []
        if documented.signature:
            signature = [f"{indent}::", ""]
            signature += [f"{indent}   {t}" for t in documented.signature.split("\n")]
            signature.append("")
        return _object_lines(documented, mark, heading, signature, indent)


def expand_pages(pages: Iterable[tuple[str, str]], context: PageContext
                 ) -> Iterable[tuple[str, PageExpansion]]:
    """:func:`expand_page` for each (path, text)."""
    for path, text in pages:
        yield path, expand_page(text, path, context)


__all__ = ["PageContext", "PageExpansion", "PageObject", "expand_page", "expand_pages",
           "make_finder"]
