"""Include directives expanded as the renderer would show the page: the engine.

The forms are a registry, one module each in ``indexer/include_forms/`` (``rst``: RST
``.. include::`` and ``.. literalinclude::``; ``myst``: MyST ```` ```{include} ```` and
```` ```{literalinclude} ````; ``mdbook``: ``{{#include p:sel}}`` and
``{{#rustdoc_include}}``; ``snippets``: pymdownx ``--8<-- "p:sel"``; ``fastapi``:
``{* p ln[..] hl[..] *}``; ``mdx``: mdx_include ``{! p !}``), each saying where its paths
are resolved from. This engine runs the forms of a page's syntax and holds what they
share: reading a target under the bounds, the directive options of Sphinx's ``include``
and ``literalinclude`` (for RST and MyST), the span map and the dependencies.

Every target path is normalised and must stay inside the source
(:func:`module_finder.normalize`, then ``path_problem``); a target that is missing,
outside, too large, not text, in a cycle or past the depth limit leaves a one-line note
``[include <why>: <path>]`` in the text, never an error. The result carries the
expanded text, a span map (byte ranges of it -> file and lines they came from) and the
dependencies (every file read, with its hash, and every target not found), so a cache
can cite both places and re-parse the page when one of them changes.
"""

from __future__ import annotations

import hashlib
import posixpath
from collections.abc import Callable, Iterable
from typing import NamedTuple

from .directives import Directive
from .include_forms import FORMS, forms_of, line_marks
from .include_forms.form import (
    Refused,
    SourceLine,
    Target,
    fenced,
    indented,
)
from .module_finder import Reader, normalize
from .python_source import parse_module

_LANGUAGES = {
    ".py": "python", ".pyi": "python", ".rs": "rust", ".js": "javascript", ".mjs":
    "javascript", ".ts": "typescript", ".tsx": "tsx", ".jsx": "jsx", ".json": "json",
    ".toml": "toml", ".yaml": "yaml", ".yml": "yaml", ".sh": "bash", ".bash": "bash",
    ".html": "html", ".css": "css", ".c": "c", ".h": "c", ".cpp": "cpp", ".go": "go",
    ".java": "java", ".rb": "ruby", ".sql": "sql", ".ini": "ini", ".cfg": "ini",
    ".xml": "xml", ".md": "markdown", ".rst": "rst", ".txt": "text",
}


class IncludeLimits(NamedTuple):
    """What one page's includes may cost. Text: ``max_page_bytes`` included into a page
    (nested text counted at each level), ``max_directive_bytes`` by one directive (its
    nested includes too). Work: ``max_page_work_bytes`` of included files a page's
    directives read and select from (the same file counted at each use), so that
    directives whose text is refused, or whose selector matches nothing, cost bounded
    time too (3,000 includes of a 1 MB file took 64 s for one page)."""

    max_file_bytes: int = 1024 * 1024  # one included file
    max_page_bytes: int = 8 * 1024 * 1024  # all text included into one page
    max_depth: int = 8  # includes inside includes
    max_includes: int = 2000  # include directives expanded in one page
    max_directive_bytes: int = 2 * 1024 * 1024  # the text one directive includes
    max_page_work_bytes: int = 32 * 1024 * 1024  # included files' bytes a page works on


DEFAULT_LIMITS = IncludeLimits()


class Span(NamedTuple):
    """``text_bytes[start:end]`` came from ``file`` lines ``first_line..last_line``
    (1-based, inclusive). Text the expansion made (fences, notes, omission comments)
    is attributed to the directive that made it."""

    start: int
    end: int
    file: str
    first_line: int
    last_line: int


class Dependency(NamedTuple):
    """A file the page's text depends on: ``status`` is ``read`` (``hash`` set) or why
    it gave no text (``not found``, ``outside the source``, ``too large``...)."""

    path: str
    status: str
    hash: str | None = None


class Expanded(NamedTuple):
    text: str
    spans: tuple[Span, ...]
    dependencies: tuple[Dependency, ...]
    notes: tuple[str, ...]


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def syntax_of(path: str) -> str:
    """``rst`` for reStructuredText pages, ``md`` for the rest (Markdown)."""
    return "rst" if path.lower().endswith((".rst", ".rest", ".txt", ".inc")) else "md"


def expand_includes(text: str, page: str, read: Reader, *, syntax: str | None = None,
                    docs_root: str = "", config_dir: str | None = None,
                    snippet_bases: Iterable[str] | None = None,
                    forms: Iterable[str] = FORMS, limits: IncludeLimits = DEFAULT_LIMITS,
                    hasher: Callable[[bytes], str] = sha256_hex) -> Expanded:
    """Expand the include directives of ``text``, the page at repo-relative ``page``.

    ``read(path)`` gives a repo-relative file's bytes or None; ``docs_root`` is where a
    RST/MyST path starting with ``/`` is taken from; ``config_dir`` is the mkdocs.yml
    folder (the base of FastAPI's and mdx_include's paths, and the first snippet base;
    the page's folder when not given); ``hasher`` makes the dependency hashes (give the
    one the cache's ``file_hashes`` use, e.g. git blob SHAs)."""
    expander = _Expander(read, docs_root, config_dir, snippet_bases, frozenset(forms),
                         limits, hasher, page)
    out = expander.expand(page_lines(text, page), syntax or syntax_of(page), 0, (page,))
    return _result(out, expander)


def page_lines(text: str, page: str) -> list[SourceLine]:
    """A page's text as lines (split at ``\n`` only), each from its own line."""
    return [SourceLine(t, page, n) for n, t in enumerate(text.split("\n"), 1)]


def expand_include_lines(lines: list[SourceLine], page: str, read: Reader, *,
                         syntax: str | None = None, docs_root: str = "",
                         config_dir: str | None = None,
                         snippet_bases: Iterable[str] | None = None,
                         forms: Iterable[str] = FORMS, limits: IncludeLimits = DEFAULT_LIMITS,
                         hasher: Callable[[bytes], str] = sha256_hex,
                         ) -> tuple[list[SourceLine], list[Dependency], list[str], int]:
    """:func:`expand_includes` on lines, for a caller that expands more (autodoc):
    (lines, dependencies, notes, number of include directives met)."""
    expander = _Expander(read, docs_root, config_dir, snippet_bases, frozenset(forms),
                         limits, hasher, page)
    out = expander.expand(lines, syntax or syntax_of(page), 0, (page,))
    return out, list(expander.dependencies.values()), expander.notes, expander.count


def _result(lines: list[SourceLine], expander: _Expander) -> Expanded:
    return build_expanded(lines, expander.dependencies.values(), expander.notes)


def build_expanded(lines: list[SourceLine], dependencies: Iterable[Dependency],
                   notes: Iterable[str]) -> Expanded:
    """The text of ``lines`` joined by ``\n`` and its span map (byte offsets)."""
    text = "\n".join(line.text for line in lines)
    spans: list[list] = []  # [start, end, file, first, last], made Spans at the end
    offset = 0
    count = len(lines)
    mark = -1  # the documented object of the last span: one span per object
    for index, line in enumerate(lines):
        size = len(line.text.encode("utf-8")) + (1 if index + 1 < count else 0)
        last = spans[-1] if spans else None
        line_last = line.last if line.last > line.line else line.line
        if last and last[2] == line.file and last[1] == offset and line.mark == mark \
                and last[3] <= line.line <= last[4] + 1:
            last[1] = offset + size
            if line_last > last[4]:
                last[4] = line_last
        elif size:
            spans.append([offset, offset + size, line.file, line.line, line_last])
            mark = line.mark
        offset += size
    return Expanded(text, tuple(Span(*s) for s in spans), tuple(dependencies),
                    tuple(notes))


# The text an include form of each syntax needs (``nested``'s test, per line).
_LINE_MARKS = {syntax: line_marks(syntax) for syntax in ("rst", "md")}


class _Expander:
    """Runs the registered include forms of a page's syntax under the page's bounds: the
    :class:`~.include_forms.form.Expansion` every form reads files through."""

    def __init__(self, read: Reader, docs_root: str, config_dir: str | None,
                 snippet_bases: Iterable[str] | None, forms: frozenset[str],
                 limits: IncludeLimits, hasher: Callable[[bytes], str], page: str) -> None:
        self.read = read
        self.docs_root = docs_root
        self.config_dir = config_dir
        config = config_dir if config_dir is not None else posixpath.dirname(page)
        self.config_base = config
        self.snippet_bases = tuple(snippet_bases) if snippet_bases is not None \
            else tuple(dict.fromkeys([config, ""]))
        self.forms = forms
        self.limits = limits
        self.hasher = hasher
        self.dependencies: dict[str, Dependency] = {}
        self.cache: dict[str, list[SourceLine] | str] = {}
        self.notes: list[str] = []
        self.included_bytes = 0
        self.work_bytes = 0
        self.count = 0  # include directives met (each expanded or left as one note)
        self.sizes: dict[str, int] = {}  # path -> bytes, of each file loaded
        self.plain: dict[str, bool] = {}  # load key -> holds no include form at all
        self.page = page

    # -- reading --------------------------------------------------------------------------

    def depend(self, path: str, status: str, digest: str | None = None) -> None:
        if self.dependencies.get(path, Dependency(path, "")).status != "read":
            self.dependencies[path] = Dependency(path, status, digest)

    def load(self, path: str, tab_width: int | None = None) -> list[SourceLine] | str:
        """The lines of repo-relative ``path`` or the reason it has none."""
        key = f"{path}\0{tab_width}"
        if key not in self.cache:
            self.cache[key] = self._load(path, tab_width)
        return self.cache[key]

    def _load(self, path: str, tab_width: int | None) -> list[SourceLine] | str:
        data = self.read(path)
        if data is None:
            self.depend(path, "not found")
            return "not found"
        digest = self.hasher(data)
        if len(data) > self.limits.max_file_bytes:
            self.depend(path, "too large", digest)
            return "too large"
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError:
            self.depend(path, "not text", digest)
            return "not text"
        if "\0" in text:
            self.depend(path, "not text", digest)
            return "not text"
        self.depend(path, "read", digest)
        self.sizes[path] = len(data)
        text = text.replace("\r\n", "\n").replace("\r", "\n")
        if tab_width is not None and tab_width > 0:
            text = text.expandtabs(min(tab_width, 64))
        if text.endswith("\n"):
            text = text[:-1]
        return [SourceLine(t, path, n) for n, t in enumerate(text.split("\n"), 1)]

    def target(self, written: str, bases: Iterable[str], stack: tuple[str, ...],
               depth: int, tab_width: int | None = None) -> Target:
        """The first base under which ``written`` names a readable file. Every call is
        one directive met (``count``), whatever its outcome: each refusal is one note."""
        self.count += 1
        if "://" in written:
            raise Refused("not fetched (URL)")
        if depth >= self.limits.max_depth:
            raise Refused("depth limit")
        if self.count > self.limits.max_includes:
            raise Refused("skipped, too many includes")
        if self.included_bytes >= self.limits.max_page_bytes:
            raise Refused("skipped, page size cap")  # (before any work on the target)
        reason = "not found"
        for base in bases:
            path = normalize(base, written)
            if path is None:
                reason = "outside the source"
                continue
            if path in stack:
                raise Refused("refused, cycle")
            loaded = self.load(path, tab_width)
            if isinstance(loaded, str):
                if loaded != "not found":
                    raise Refused(loaded)
                continue
            size = self.sizes.get(path, 0)
            if self.work_bytes + size > self.limits.max_page_work_bytes:
                raise Refused("skipped, page work cap")
            self.work_bytes += size
            return Target(path, loaded)
        raise Refused(reason)

    def admit(self, lines: list[SourceLine]) -> list[SourceLine]:
        size = sum(len(line.text) + 1 for line in lines)
        if size > self.limits.max_directive_bytes:
            raise Refused("skipped, directive size cap")
        if self.included_bytes + size > self.limits.max_page_bytes:
            raise Refused("skipped, page size cap")
        self.included_bytes += size
        return lines

    def nested(self, lines: list[SourceLine], syntax: str, depth: int,
               stack: tuple[str, ...], path: str) -> list[SourceLine]:
        """``lines`` selected from the included file ``path`` with their own includes
        expanded; as they are when the file holds no include form at all (remembered per
        file: a file included 3,000 times is scanned once)."""
        key = f"{path}\0{syntax}"
        if key not in self.plain:
            self.plain[key] = not self.may_include(path, syntax)
        if self.plain[key]:
            return lines
        return self.expand(lines, syntax, depth + 1, (*stack, path))

    def may_include(self, path: str, syntax: str) -> bool:
        """Whether the loaded file ``path`` holds text an include form of ``syntax``
        acts on (a superset: a false match costs one scan, no change)."""
        marks = _LINE_MARKS.get(syntax) or line_marks(syntax)
        return any(isinstance(loaded, list) and any(marks.search(ln.text) for ln in loaded)
                   for key, loaded in self.cache.items() if key.split("\0", 1)[0] == path)

    def note(self, reason: str, written: str, at: SourceLine, indent: str = "") -> SourceLine:
        shown = written.replace("\n", " ")[:200]
        text = f"[include {reason}: {shown}]"
        self.notes.append(text)
        return SourceLine(indent + text, at.file, at.line)

    def relative(self, written: str) -> str:
        return written.lstrip("/") if written.startswith("/") else written

    # -- the page -------------------------------------------------------------------------

    def expand(self, lines: list[SourceLine], syntax: str, depth: int,
               stack: tuple[str, ...]) -> list[SourceLine]:
        """``lines`` with the includes of the forms of ``syntax`` the page's configuration
        turns on expanded: block directives first found over the whole text, then each
        other line offered to the line forms in order."""
        forms = [form for form in forms_of(syntax) if form.name in self.forms]
        finders = [form.directives for form in forms if form.directives is not None]
        handlers = [form.line for form in forms if form.line is not None]
        texts = [line.text for line in lines] if finders else []
        if not handlers:  # (directives only: copied between them)
            out: list[SourceLine] = []
            done = 0
            for find in finders:
                for directive in find(texts):
                    out += lines[done:directive.start]
                    out += self.directive(directive, lines, depth, stack)
                    done = directive.end
            return out + lines[done:]
        blocks = {d.start: d for find in finders for d in find(texts)}
        out = []
        index = 0
        while index < len(lines):
            if index in blocks:
                out += self.directive(blocks[index], lines, depth, stack)
                index = blocks[index].end
                continue
            for handle in handlers:
                taken = handle(self, lines, index, depth, stack)
                if taken is not None:
                    out += taken[0]
                    index = taken[1]
                    break
            else:
                out.append(lines[index])
                index += 1
        return out

    def directive(self, directive: Directive, lines: list[SourceLine], depth: int,
                  stack: tuple[str, ...]) -> list[SourceLine]:
        at = lines[directive.start]
        written = directive.argument.strip()
        if written.startswith("<") and written.endswith(">"):
            return lines[directive.start:directive.end]  # docutils' standard includes
        options = directive.options
        tab = _int(options.get("tab-width"))
        if directive.name == "include" and directive.syntax == "rst" and tab is None:
            tab = 8  # docutils expands tabs in included text
        try:
            target = self.target(self.relative(written), self.rst_bases(written),
                                 stack, depth, tab)
            if directive.name == "literalinclude":
                selected = literalinclude_lines(target.lines, options, target.path)
                return self.admit(self.code_block(selected, directive, at, target.path))
            selected = include_lines(target.lines, options)
            if "literal" in options or "code" in options:
                return self.admit(self.code_block(selected, directive, at, target.path))
            inner = self.nested(selected, directive.syntax if directive.syntax == "rst"
                                else "md", depth, stack, target.path)
            return self.admit([ln._replace(text=indented(directive.indent, ln.text))
                               for ln in inner])
        except Refused as refused:
            return [self.note(refused.args[0], written, at, directive.indent)]

    def rst_bases(self, written: str) -> list[str]:
        """Sphinx resolves an include's path from the page's folder (also inside an
        included file), ``/x`` from the docs root."""
        return [self.docs_root] if written.startswith("/") else [posixpath.dirname(self.page)]

    def code_block(self, selected: list[SourceLine], directive: Directive, at: SourceLine,
                   path: str) -> list[SourceLine]:
        options = directive.options
        language = options.get("language") or options.get("code") or _language(path)
        indent = directive.indent
        if directive.syntax == "rst":
            body = [ln._replace(text=indented(indent + "   ", ln.text)) for ln in selected]
            return [SourceLine(indent + "::", at.file, at.line), SourceLine("", at.file, at.line),
                    *body]
        return fenced(selected, language, at, indent)


def _int(value: str | None) -> int | None:
    if value is None:
        return None
    value = value.strip()
    return int(value) if value.lstrip("-").isdigit() and len(value) < 10 else None


def _language(path: str) -> str:
    return _LANGUAGES.get(posixpath.splitext(path)[1].lower(), "")


# -- selectors ----------------------------------------------------------------------------

def include_lines(lines: list[SourceLine], options: dict[str, str]) -> list[SourceLine]:
    """docutils ``include``: ``start-line``/``end-line`` (a Python slice of the lines),
    then ``start-after``/``end-before`` (text: the first occurrence, mid-line too)."""
    start, end = _int(options.get("start-line")), _int(options.get("end-line"))
    selected = lines[start:end] if start is not None or end is not None else list(lines)
    after = options.get("start-after")
    if after:
        selected = _after_text(selected, after)
    before = options.get("end-before")
    if before:
        selected = _before_text(selected, before)
    return selected


def _after_text(lines: list[SourceLine], marker: str) -> list[SourceLine]:
    for index, line in enumerate(lines):
        column = line.text.find(marker)
        if column >= 0:
            rest = line.text[column + len(marker):]
            head = [line._replace(text=rest)] if rest.strip() else []
            return head + lines[index + 1:]
    raise Refused(f"start-after text not found ({marker[:60]})")


def _before_text(lines: list[SourceLine], marker: str) -> list[SourceLine]:
    for index, line in enumerate(lines):
        column = line.text.find(marker)
        if column >= 0:
            head = line.text[:column]
            return lines[:index] + ([line._replace(text=head)] if head.strip() else [])
    raise Refused(f"end-before text not found ({marker[:60]})")


def literalinclude_lines(lines: list[SourceLine], options: dict[str, str],
                         path: str) -> list[SourceLine]:
    """Sphinx ``literalinclude``'s filters, in its order: ``pyobject``, ``start-at`` /
    ``start-after``, ``end-at`` / ``end-before`` (first line containing the text),
    ``lines``, ``dedent``, then ``prepend`` / ``append``."""
    selected = list(lines)
    if options.get("pyobject"):
        selected = _pyobject(selected, options["pyobject"], path)
    for option, keep in (("start-at", True), ("start-after", False)):
        if options.get(option):
            index = _line_with(selected, options[option], option)
            selected = selected[index if keep else index + 1:]
    for option, keep in (("end-at", True), ("end-before", False)):
        if options.get(option):
            index = _line_with(selected, options[option], option)
            selected = selected[:index + 1 if keep else index]
    if options.get("lines"):
        selected = _pick_lines(selected, options["lines"])
    if "dedent" in options:
        selected = _dedent_lines(selected, _int(options["dedent"]))
    first = selected[0] if selected else (lines[0] if lines else SourceLine("", path, 1))
    if options.get("prepend"):
        selected = [first._replace(text=options["prepend"]), *selected]
    if options.get("append"):
        selected = [*selected, first._replace(text=options["append"])]
    return selected


def _line_with(lines: list[SourceLine], text: str, option: str) -> int:
    for index, line in enumerate(lines):
        if text in line.text:
            return index
    raise Refused(f"{option} text not found ({text[:60]})")


def _pyobject(lines: list[SourceLine], name: str, path: str) -> list[SourceLine]:
    """The lines of the Python object ``name`` (``Class.method``), decorators included."""
    source = "\n".join(line.text for line in lines).encode("utf-8")
    info = parse_module(source, path)
    obj = info.objects.get(name.strip())
    if info.problem or obj is None:
        raise Refused(f"pyobject {name.strip()[:60]} not found")
    return [line for line in lines if obj.first_line <= line.line <= obj.last_line]


def _pick_lines(lines: list[SourceLine], spec: str) -> list[SourceLine]:
    """Sphinx ``:lines:``: ``1,3,5-10,20-`` (1-based, in the order given, clamped to the
    lines there are)."""
    total = len(lines)
    picked: list[SourceLine] = []
    for part in spec.split(","):
        begin, dash, end = part.strip().partition("-")
        try:
            first = int(begin) if begin.strip() else 1
            last = (int(end) if end.strip() else total) if dash else first
        except ValueError:
            raise Refused(f"bad lines option ({spec[:60]})") from None
        first, last = max(first, 1), min(last, total)
        picked += lines[first - 1:last]
    return picked


def _dedent_lines(lines: list[SourceLine], amount: int | None) -> list[SourceLine]:
    if amount is None:
        margins = [len(ln.text) - len(ln.text.lstrip()) for ln in lines if ln.text.strip()]
        amount = min(margins) if margins else 0
        return [ln._replace(text=ln.text[amount:] if ln.text.strip() else "") for ln in lines]
    return [ln._replace(text=ln.text[amount:]) for ln in lines]


__all__ = ["Dependency", "Expanded", "FORMS", "IncludeLimits", "SourceLine", "Span",
           "build_expanded", "expand_include_lines", "expand_includes", "fenced",
           "sha256_hex", "syntax_of"]
