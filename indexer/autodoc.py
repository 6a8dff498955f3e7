"""API reference from docstrings, as Sphinx autodoc and mkdocstrings would render it.

A page says ``.. autofunction:: url_for`` (under ``.. currentmodule:: flask``) or
``::: fastapi.FastAPI``; the text a reader sees is the object's signature and docstring,
which live in the source. Here the directive is resolved with :class:`ModuleFinder`
(the source read with ``ast``, never imported) and turned into documented objects, in
the order the renderer shows them, each with its origin (file and lines).

Supported: ``automodule``, ``autoclass``, ``autoexception``, ``autofunction``,
``automethod``, ``autoattribute``, ``autoproperty``, ``autodata``, ``autodecorator``
with ``:members:`` (all, or a list), ``:undoc-members:``, ``:private-members:``,
``:special-members:``, ``:imported-members:``, ``:inherited-members:`` (all bases found
in the source; a list of bases to stop at is not read), ``:exclude-members:``,
``:member-order:`` and ``:noindex:`` (no effect on the text); ``currentmodule``/``module``
set the context. mkdocstrings ``::: path`` takes ``options:`` ``members`` (a list,
``true`` or ``false``), ``members_order``, ``show_if_no_docstring``,
``inherited_members``, ``show_root_heading``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import NamedTuple

from .directives import (
    Directive,
    indent_of,
    markdown_code_mask,
    myst_directives,
    rst_directives,
)
from .docstrings import cleandoc, reduce_xrefs, render_docstring
from .module_finder import Found, ModuleFinder, NotFound, SphinxConf
from .python_source import ModuleInfo, PyObject

AUTO_DIRECTIVES = frozenset({
    "automodule", "autoclass", "autoexception", "autofunction", "automethod",
    "autoattribute", "autoproperty", "autodata", "autodecorator"})
CONTEXT_DIRECTIVES = frozenset({"currentmodule", "module", "py:currentmodule", "py:module"})
MAX_OBJECTS_PER_DIRECTIVE = 2000
MAX_NESTING = 3  # module -> class -> nested class members

# Sphinx's groupwise order: the documenter's member_order, then the name.
_GROUP_ORDER = {"module": 0, "exception": 10, "class": 20, "function": 30, "data": 40,
                "classmethod": 49, "staticmethod": 49, "method": 50, "attribute": 60,
                "property": 60}
_PREFIX = {"class": "class ", "exception": "exception ", "classmethod": "classmethod ",
           "staticmethod": "static ", "property": "property ", "module": "module "}


class AutodocRequest(NamedTuple):
    """A directive asking for documentation, with the context it was written in."""

    kind: str  # automodule... or "mkdocstrings"
    name: str  # as written (``url_for``, ``fastapi.FastAPI``)
    signature: str  # an explicit signature written in the directive, else ""
    options: dict[str, object]
    context: tuple[str, ...]  # the current module, innermost first
    content: tuple[str, ...]  # the directive's own text, shown after the docstring
    start: int  # lines[start:end] of the page is the directive
    end: int
    indent: str


class Documented(NamedTuple):
    """One object as the built page shows it."""

    name: str  # the full dotted name as documented (``flask.url_for``)
    kind: str  # module, class, exception, function, method, ... attribute, data
    title: str  # ``url_for()``, ``Flask``, ``Flask.route()``; "" when shown without one
    signature: str  # ``flask.url_for(endpoint: str, ...) -> str`` (lines for overloads)
    text: str  # the rendered docstring, then the directive's own text
    file: str
    first_line: int
    last_line: int
    depth: int  # 0: the directive's object; members one deeper


class AutodocResult(NamedTuple):
    request: AutodocRequest
    objects: tuple[Documented, ...]
    problem: str | None  # why nothing could be documented (the finder's reason)


# -- finding the directives ---------------------------------------------------------------

def rst_requests(lines: Sequence[str]) -> Iterator[AutodocRequest]:
    """The autodoc directives of an RST page, each with its ``currentmodule``."""
    current = ""
    for directive in rst_directives(list(lines), AUTO_DIRECTIVES | CONTEXT_DIRECTIVES):
        if directive.name in CONTEXT_DIRECTIVES:
            argument = directive.argument.strip()
            current = "" if argument in ("None", "") else argument
            continue
        yield _request(directive, current)
        if directive.name == "automodule":  # it declares the module, as py:module does
            current = directive.argument.strip()


def _request(directive: Directive, current: str) -> AutodocRequest:
    argument = directive.argument.strip()
    name, signature = argument, ""
    if "(" in argument:
        name, _, rest = argument.partition("(")
        signature = "(" + rest
    name = name.strip()
    if "::" in name:  # "module::Class" (an old form): the module is explicit
        name = name.replace("::", ".")
    options: dict[str, object] = dict(directive.options)
    return AutodocRequest(directive.name, name, signature, options,
                          (current,) if current else (), tuple(directive.content),
                          directive.start, directive.end, directive.indent)


def markdown_requests(lines: Sequence[str]) -> Iterator[AutodocRequest]:
    """mkdocstrings ``::: dotted.path`` blocks (with their indented YAML options),
    MyST ```` ```{autoclass} ```` fences and autodoc inside ```` ```{eval-rst} ````."""
    lines = list(lines)
    mask = markdown_code_mask(lines)
    found: list[AutodocRequest] = []
    for directive in myst_directives(lines, AUTO_DIRECTIVES | {"eval-rst"}):
        if directive.name == "eval-rst":
            for inner in rst_requests(directive.content):
                offset = directive.start + 1
                found.append(inner._replace(start=inner.start + offset,
                                            end=inner.end + offset))
        else:
            found.append(_request(directive, ""))
    index = 0
    while index < len(lines):
        line = lines[index]
        if not mask[index] and line.startswith("::: ") and line[4:].strip():
            found.append(_mkdocstrings(lines, index))
            index = found[-1].end
        else:
            index += 1
    found.sort(key=lambda request: request.start)
    return iter(found)


def _mkdocstrings(lines: list[str], start: int) -> AutodocRequest:
    name = lines[start][4:].strip()
    end = start + 1
    last = end
    while end < len(lines) and (not lines[end].strip() or indent_of(lines[end]) > 0):
        if lines[end].strip():
            last = end + 1
        end += 1
    config = parse_yaml_subset(lines[start + 1:last])
    options = config.get("options") if isinstance(config, dict) else None
    return AutodocRequest("mkdocstrings", name, "", options if isinstance(options, dict)
                          else {}, (), (), start, last, "")


# A small YAML subset for the options block (mappings, lists, flow lists, scalars): the
# block is a few lines of configuration, not worth a YAML library.
def parse_yaml_subset(lines: Sequence[str]) -> object:
    """Block mappings and lists by indentation, ``[a, b]`` flow lists, quoted and plain
    scalars (``true``/``false``/``null``/integers typed); anything else is skipped."""
    items = [(indent_of(line), line.strip()) for line in lines
             if line.strip() and not line.strip().startswith("#")]
    value, _ = _yaml_block(items, 0, 0)
    return value


def _yaml_block(items: list[tuple[int, str]], index: int, depth: int) -> tuple[object, int]:
    if index >= len(items) or depth > 16:
        return None, index
    indent = items[index][0]
    if items[index][1].startswith("- ") or items[index][1] == "-":
        result: list[object] = []
        while index < len(items) and items[index][0] == indent \
                and (items[index][1].startswith("- ") or items[index][1] == "-"):
            text = items[index][1][1:].strip()
            index += 1
            if text:
                result.append(_yaml_scalar(text))
            else:
                nested, index = _yaml_block(items, index, depth + 1)
                result.append(nested)
        return result, index
    mapping: dict[str, object] = {}
    while index < len(items) and items[index][0] == indent:
        key, sep, rest = items[index][1].partition(":")
        index += 1
        if not sep:
            continue
        rest = rest.strip()
        if rest:
            mapping[key.strip()] = _yaml_scalar(rest)
        elif index < len(items) and items[index][0] > indent:
            mapping[key.strip()], index = _yaml_block(items, index, depth + 1)
        else:
            mapping[key.strip()] = None
        while index < len(items) and items[index][0] > indent:
            index += 1  # what the subset does not read
    return mapping, index


def _yaml_scalar(text: str) -> object:
    if text.startswith("[") and text.endswith("]"):
        return [_yaml_scalar(part.strip()) for part in text[1:-1].split(",") if part.strip()]
    if len(text) >= 2 and text[0] in "'\"" and text[-1] == text[0]:
        return text[1:-1]
    lowered = text.lower()
    if lowered in ("true", "yes", "on"):
        return True
    if lowered in ("false", "no", "off"):
        return False
    if lowered in ("null", "~"):
        return None
    if text.lstrip("-").isdigit() and len(text) < 10:
        return int(text)
    return text


# -- documenting ---------------------------------------------------------------------------

_CLASS_LEVEL = frozenset({"automethod", "autoattribute", "autoproperty"})


def _imported_name(request: AutodocRequest) -> str:
    """The dotted name Sphinx imports for ``request`` (its ``resolve_name``): an
    ``automodule`` name as written; a module-level object's dotted name as written, an
    undotted one inside the current module; a class-level one always inside the current
    module. The reason a name is not found is this name's."""
    context = request.context[0] if request.context else ""
    if not context or request.kind in ("automodule", "mkdocstrings"):
        return request.name
    if request.kind in _CLASS_LEVEL or "." not in request.name:
        return f"{context}.{request.name}"
    return request.name


class _Options(NamedTuple):
    members: tuple[str, ...] | None  # None: all; () none
    undoc: bool
    private: bool
    special: bool
    imported: bool
    inherited: bool
    exclude: frozenset[str]
    order: str
    class_content: str
    explicit_order: bool  # keep the order of an explicit list (mkdocstrings)


def _names(value: object) -> tuple[str, ...]:
    if isinstance(value, (list, tuple)):
        return tuple(str(v).strip() for v in value if str(v).strip())
    return tuple(n.strip() for n in str(value).split(",") if n.strip())


def _sphinx_options(request: AutodocRequest, conf: SphinxConf) -> _Options:
    options = {**conf.default_options, **request.options}
    if "no-undoc-members" in request.options:
        options.pop("undoc-members", None)
    members = options.get("members", False) if "members" in options else False
    if "no-members" in request.options:
        members = False
    member_names: tuple[str, ...] | None
    if members is False:
        member_names = ()
    elif members in (None, "", True):
        member_names = None
    else:
        member_names = _names(members)
    return _Options(member_names, "undoc-members" in options and
                    "no-undoc-members" not in options,
                    "private-members" in options, "special-members" in options,
                    "imported-members" in options, "inherited-members" in options,
                    frozenset(_names(options.get("exclude-members") or "")),
                    str(options.get("member-order") or conf.member_order),
                    conf.autoclass_content, False)


def _mkdocstrings_options(request: AutodocRequest) -> _Options:
    options = request.options
    members = options.get("members", None)
    member_names: tuple[str, ...] | None
    if members is False:
        member_names = ()
    elif members is None or members is True:
        member_names = None
    else:
        member_names = _names(members)
    order = str(options.get("members_order") or "alphabetical")
    return _Options(member_names, bool(options.get("show_if_no_docstring")), False, True,
                    False, bool(options.get("inherited_members")), frozenset(),
                    "bysource" if order == "source" else order, "class",
                    member_names is not None and bool(member_names))


class Autodoc:
    """Documents requests against one source (one finder, one ``conf.py``)."""

    def __init__(self, finder: ModuleFinder, conf: SphinxConf | None = None) -> None:
        self.finder = finder
        self.conf = conf or SphinxConf()

    def document(self, request: AutodocRequest) -> AutodocResult:
        found = self.finder.resolve(request.name, request.context, _imported_name(request))
        if isinstance(found, NotFound):
            return AutodocResult(request, (), f"{request.name}: {found.reason}")
        mkdocs = request.kind == "mkdocstrings"
        options = _mkdocstrings_options(request) if mkdocs else _sphinx_options(request,
                                                                                 self.conf)
        if not mkdocs and request.kind not in ("automodule", "autoclass", "autoexception"):
            options = options._replace(members=())
        objects: list[Documented] = []
        root = self.object(found, request.name, 0, options, request)
        if mkdocs and not request.options.get("show_root_heading"):
            root = root._replace(title="")
        objects.append(root)
        self.members(found, options, 1, objects, request)
        if request.content:
            extra = reduce_xrefs("\n".join(request.content))
            first = objects[0]
            objects[0] = first._replace(text=(first.text + "\n\n" + extra).strip())
        return AutodocResult(request, tuple(objects), None)

    def display_name(self, found: Found, asked: str, request: AutodocRequest) -> str:
        """The name the page shows: the current module plus the name asked for."""
        if request.context and not asked.startswith(request.context[0] + "."):
            candidate = f"{request.context[0]}.{asked}"
            if found.name == candidate:
                return candidate
        return found.name

    def object(self, found: Found, asked: str, depth: int, options: _Options,
               request: AutodocRequest) -> Documented:
        name = self.display_name(found, asked, request) if depth == 0 else asked
        obj = found.obj
        info = found.info
        if obj is None:
            return Documented(name, "module", "" if request.kind == "automodule" else name,
                              "", reduce_xrefs(cleandoc(info.docstring or "")), found.file,
                              info.docstring_lines[0] or 1,
                              info.docstring_lines[1] or max(info.line_count, 1), depth)
        kind = _kind(obj, request.kind if depth == 0 else "")
        docstring = obj.docstring
        if obj.kind == "class":
            docstring = self.class_docstring(obj, info, options.class_content)
        signature = _signature_line(name, obj, kind, info, request.signature if depth == 0
                                    else "")
        text = render_docstring(docstring)
        if obj.param_docs and "\nParameters:\n" not in f"\n{text}\n":
            text = "\n\n".join(filter(None, [text, _param_section(obj, kind)]))
        return Documented(name, kind, _title(name, found.qualname, kind), signature,
                          text, found.file, obj.first_line, obj.last_line, depth)

    def class_docstring(self, obj: PyObject, info: ModuleInfo, content: str) -> str | None:
        init = info.objects.get(obj.qualname + ".__init__")
        init_doc = init.docstring if init else None
        if content == "init":
            return init_doc or obj.docstring
        if content == "both" and init_doc:
            return "\n\n".join(filter(None, [cleandoc(obj.docstring or ""),
                                             cleandoc(init_doc)]))
        return obj.docstring

    def members(self, found: Found, options: _Options, depth: int,
                objects: list[Documented], request: AutodocRequest) -> None:
        if options.members == () or depth > MAX_NESTING:
            return
        base = self.display_name(found, request.name, request) if depth == 1 else found.name
        for member in self.member_list(found, options):
            if len(objects) >= MAX_OBJECTS_PER_DIRECTIVE:
                return
            short = member.name.rsplit(".", 1)[-1]
            doc = self.object(member, f"{base}.{short}", depth, options, request)
            objects.append(doc)
            if member.obj is not None and member.obj.kind == "class":
                nested = options._replace(members=None) if options.members is not None \
                    else options
                self.members(member._replace(name=doc.name), nested, depth + 1, objects,
                             request)

    def member_list(self, found: Found, options: _Options) -> list[Found]:
        """The members to document, filtered and ordered as the renderer does."""
        if found.obj is None:
            candidates = self.module_members(found, options)
        elif found.obj.kind == "class":
            candidates = self.class_members(found, options.inherited)
            if options.members:
                candidates = self.explicit(found, options.members, candidates)
        else:
            return []
        kept = [m for m in candidates if self.wanted(m, options)]
        return _ordered(kept, options, found)

    def class_members(self, found: Found, inherited: bool) -> list[Found]:
        """The members written in the class body; with ``inherited``, then those of its
        bases found in the source (depth first, a name once), as ``:inherited-members:``
        lists them."""
        seen: set[str] = set()
        out: list[Found] = []
        queue = [found]
        visited = 0
        while queue and visited < 32:
            klass = queue.pop(0)
            visited += 1
            info = klass.info
            assert klass.obj is not None
            for qualname in klass.obj.members:
                short = qualname.rsplit(".", 1)[-1]
                if qualname in info.objects and short not in seen:
                    seen.add(short)
                    out.append(Found(f"{found.name}.{short}", klass.module, klass.file,
                                     qualname, info.objects[qualname], info))
            if not inherited:
                break
            for base in klass.obj.bases:
                name = base.split("[", 1)[0]
                resolved = self.finder.resolve(f"{klass.module}.{name}")
                if isinstance(resolved, Found) and resolved.obj is not None \
                        and resolved.obj.kind == "class":
                    queue.append(resolved)
        return out

    def module_members(self, found: Found, options: _Options) -> list[Found]:
        info = found.info
        if options.members:
            names: Sequence[str] = options.members
        elif info.all_names is not None:
            names = info.all_names
        else:
            names = [q for q in info.top_level if "." not in q]
            if options.imported:
                names = [*names, *(n for n in info.imports if n not in names)]
        out = []
        for name in names:
            if name in info.objects:
                out.append(Found(f"{found.name}.{name}", found.module, found.file, name,
                                 info.objects[name], info))
                continue
            resolved = self.finder.resolve(f"{found.name}.{name}")
            if isinstance(resolved, Found):
                out.append(resolved._replace(name=f"{found.name}.{name}"))
        return out

    def explicit(self, found: Found, names: Sequence[str],
                 candidates: list[Found]) -> list[Found]:
        by_name = {c.qualname.rsplit(".", 1)[-1]: c for c in candidates}
        out = []
        for name in names:
            if name in by_name:
                out.append(by_name[name])
                continue
            resolved = self.finder.resolve(f"{found.module}.{found.qualname}.{name}")
            if isinstance(resolved, Found):
                out.append(resolved._replace(name=f"{found.name}.{name}"))
        return out

    def wanted(self, member: Found, options: _Options) -> bool:
        short = member.name.rsplit(".", 1)[-1]
        if short in options.exclude:
            return False
        if options.members:  # named explicitly: shown whatever it is
            return True
        if short.startswith("__") and short.endswith("__"):
            if not options.special:
                return False
        elif short.startswith("_") and not options.private:
            return False
        obj = member.obj
        documented = obj is None or bool(obj.docstring)
        return documented or options.undoc


def _param_section(obj: PyObject, kind: str) -> str:
    """A ``Parameters:`` section from the ``Annotated[T, Doc("...")]`` parameters (the
    bound ``self``/``cls`` of a method never has one)."""
    lines = ["Parameters:"]
    for name, type_text, doc in obj.param_docs:
        body = render_docstring(doc).split("\n") or [""]
        head = f"- {name} ({type_text})" if type_text else f"- {name}"
        lines.append(f"{head}: {body[0]}" if body[0] else head)
        lines += [f"  {line}" if line else "" for line in body[1:]]
    return "\n".join(lines)


def _ordered(members: list[Found], options: _Options, parent: Found) -> list[Found]:
    if options.explicit_order:
        return members
    if options.order == "bysource":
        if parent.obj is None and parent.info.all_names is not None:
            position = {n: i for i, n in enumerate(parent.info.all_names)}
            return sorted(members, key=lambda m: position.get(m.name.rsplit(".", 1)[-1], 0))
        return members
    if options.order == "groupwise":
        return sorted(members, key=lambda m: (_GROUP_ORDER.get(_kind_of(m), 90),
                                              m.name.rsplit(".", 1)[-1]))
    return sorted(members, key=lambda m: m.name.rsplit(".", 1)[-1])


def _kind_of(member: Found) -> str:
    return "module" if member.obj is None else _kind(member.obj, "")


def _kind(obj: PyObject, directive: str) -> str:
    if obj.kind == "class" and (directive == "autoexception" or any(
            b.rsplit(".", 1)[-1].endswith(("Error", "Exception", "Warning"))
            for b in obj.bases)):
        return "exception"
    return obj.kind


def _title(name: str, qualname: str, kind: str) -> str:
    """The name without its module (as many parts as the object's qualname has: an
    inherited ``Flask.route`` is ``Scaffold.route`` where it is defined), ``()`` after
    callables, as Sphinx's table of contents shows objects."""
    parts = qualname.count(".") + 1
    short = ".".join(name.split(".")[-parts:])
    callable_kind = kind in ("function", "method", "classmethod", "staticmethod")
    return short + "()" if callable_kind else short


def _signature_line(name: str, obj: PyObject, kind: str, info: ModuleInfo,
                    explicit: str) -> str:
    prefix = ("async " if obj.is_async else "") + _PREFIX.get(kind, "")
    if kind in ("class", "exception"):
        init = info.objects.get(obj.qualname + ".__init__")
        signature = explicit or (_bound(init.signature) if init else "")
        if not explicit and ") -> " in signature:  # a class shows no return annotation
            signature = signature[: signature.rindex(") -> ") + 1]
        return f"{prefix}{name}{signature}"
    if kind in ("attribute", "data", "property"):
        annotation = f": {obj.annotation}" if obj.annotation else ""
        value = f" = {obj.value}" if obj.value and kind != "property" else ""
        return f"{prefix}{name}{annotation}{value}"
    signatures = list(obj.overloads) or [obj.signature]
    if explicit:
        signatures = [explicit]
    elif kind in ("method", "classmethod"):
        signatures = [_bound(s) for s in signatures]
    return "\n".join(f"{prefix}{name}{s}" for s in signatures)


def _bound(signature: str) -> str:
    """A method's signature as Sphinx shows it: without ``self``/``cls``."""
    if not signature.startswith("("):
        return signature
    depth = 0
    for position, char in enumerate(signature):
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
            if depth == 0:
                return "(" + signature[position:].lstrip(", ")
        elif char == "," and depth == 1:
            rest = signature[position + 1:].lstrip()
            return "(" + (rest[1:].lstrip(", ") if rest.startswith("/") else rest)
    return signature


__all__ = ["AUTO_DIRECTIVES", "Autodoc", "AutodocRequest", "AutodocResult",
           "CONTEXT_DIRECTIVES", "Documented", "markdown_requests", "parse_yaml_subset",
           "rst_requests"]
