"""A Python file read as data: its docstrings, signatures and names, never run.

The documentation of a project pulls text from its source (Sphinx autodoc, mkdocstrings,
``literalinclude :pyobject:``). The source is untrusted: it is parsed with :mod:`ast` and
never imported or executed, so a module that would do anything on import does nothing
here. Parsing is bounded: files over a size cap, and files ``ast.parse`` cannot take
(syntax errors, nesting too deep for the parser, int literals over the digit limit,
memory) are reported as unreadable, and a file holding more than a cap of objects keeps
the first ones only.
"""

from __future__ import annotations

import ast
import io
import tokenize
from typing import NamedTuple

MAX_SOURCE_BYTES = 2 * 1024 * 1024
MAX_OBJECTS = 5000
MAX_VALUE_CHARS = 200  # an attribute's value shown in its signature, one line only

# What ast.parse raises on input it cannot take: bad syntax (and NUL bytes), a value it
# cannot build (an int literal over the digit limit), nesting beyond the parser's stack.
PARSE_ERRORS = (SyntaxError, ValueError, RecursionError, MemoryError, UnicodeDecodeError)


class PyObject(NamedTuple):
    """One documented thing of a module: a class, function, method or attribute.

    ``qualname`` is the dotted path inside the module (``Flask.route``); ``signature``
    is the parameter list and return annotation as written (``(self, rule: str) -> T``),
    empty for classes and attributes (a class's call signature is its ``__init__``'s);
    lines are 1-based and inclusive, decorators included."""

    qualname: str
    kind: str  # class, function, method, classmethod, staticmethod, property, attribute
    signature: str
    docstring: str | None
    first_line: int
    last_line: int
    decorators: tuple[str, ...] = ()
    bases: tuple[str, ...] = ()
    members: tuple[str, ...] = ()  # qualnames of the direct children, in source order
    annotation: str = ""  # attributes: the annotation; properties: the return annotation
    value: str = ""  # attributes: the value's source when it is one short line
    is_async: bool = False
    overloads: tuple[str, ...] = ()  # signatures of the @overload variants
    # Parameters documented in their annotation (``Annotated[T, Doc("...")]``, PEP 727,
    # as FastAPI writes them): (name, type, text); the signature shows ``T`` only.
    param_docs: tuple[tuple[str, str, str], ...] = ()

    @property
    def name(self) -> str:
        return self.qualname.rsplit(".", 1)[-1]


class ImportRef(NamedTuple):
    """What a name bound by an import refers to.

    ``from .helpers import url_for as u`` in package ``flask`` binds ``u`` to
    ``ImportRef(module="helpers", level=1, attr="url_for")``; ``import a.b as c`` binds
    ``c`` to ``ImportRef("a.b", 0, None)``; ``import a.b`` binds ``a`` to
    ``ImportRef("a", 0, None)``."""

    module: str
    level: int
    attr: str | None


class ModuleInfo(NamedTuple):
    """Everything read from one file; ``problem`` says why nothing could be read."""

    path: str
    docstring: str | None
    objects: dict[str, PyObject]  # by qualname, in source order
    top_level: tuple[str, ...]  # names defined at module level, in source order
    imports: dict[str, ImportRef]
    star_imports: tuple[ImportRef, ...]
    all_names: tuple[str, ...] | None  # __all__ when it is a literal
    problem: str | None = None
    truncated: bool = False  # more than MAX_OBJECTS objects: the first ones only
    docstring_lines: tuple[int, int] = (0, 0)  # the module docstring's first and last line
    line_count: int = 0


def unreadable(path: str, problem: str) -> ModuleInfo:
    """The record of a file that could not be read, with the reason."""
    return ModuleInfo(path, None, {}, (), {}, (), None, problem)


def parse_module(source: bytes, path: str = "", *, max_bytes: int = MAX_SOURCE_BYTES,
                 max_objects: int = MAX_OBJECTS) -> ModuleInfo:
    """Read ``source`` (a Python file's bytes) as data; never raises on bad input."""
    if len(source) > max_bytes:
        return unreadable(path, f"file over {max_bytes} bytes")
    try:
        tree = ast.parse(source, filename=path or "<source>")
        lines = _decoded_lines(source)
        return _Reader(path, lines, max_objects).module(tree)
    except SyntaxError as exc:
        return unreadable(path, f"not valid Python (line {exc.lineno}): {exc.msg}")
    except RecursionError:
        return unreadable(path, "nested too deeply to parse")
    except MemoryError:
        return unreadable(path, "too large to parse")
    except (ValueError, UnicodeDecodeError) as exc:
        return unreadable(path, f"not valid Python: {exc}")


def _decoded_lines(source: bytes) -> list[str]:
    """The file's lines as text (for ``#:`` comments), decoded as Python would."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(source).readline)
        text = source.decode(encoding)
    except (SyntaxError, LookupError, UnicodeDecodeError):
        text = source.decode("utf-8", "replace")
    return text.split("\n")


def unparse(node: ast.AST | None) -> str:
    """An expression's source, rebuilt from the tree ("" for none, "..." if too deep)."""
    if node is None:
        return ""
    try:
        return ast.unparse(node)
    except (RecursionError, ValueError, MemoryError):
        return "..."


def format_signature(args: ast.arguments, returns: ast.expr | None = None,
                     skip_first: bool = False) -> str:
    """``(a, b: int = 1, /, c, *args, d, **kw) -> R`` from a function's arguments.

    ``skip_first`` drops the first positional parameter (``self``/``cls`` of a method
    or a class's ``__init__``, as Sphinx shows bound callables)."""
    positional = [*args.posonlyargs, *args.args]
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(args.defaults))
    defaults += list(args.defaults)
    parts: list[str] = []
    for index, (arg, default) in enumerate(zip(positional, defaults)):
        if not (skip_first and index == 0):
            parts.append(_param(arg, default))
        if args.posonlyargs and index == len(args.posonlyargs) - 1 and parts:
            parts.append("/")
    if args.vararg:
        parts.append("*" + _param(args.vararg, None))
    elif args.kwonlyargs:
        parts.append("*")
    for arg, default in zip(args.kwonlyargs, args.kw_defaults):
        parts.append(_param(arg, default))
    if args.kwarg:
        parts.append("**" + _param(args.kwarg, None))
    text = "(" + ", ".join(parts) + ")"
    if returns is not None:
        text += " -> " + doc_annotation(returns)[0]
    return text


def doc_annotation(node: ast.expr | None) -> tuple[str, str | None]:
    """``Annotated[T, Doc("text")]`` -> ("T", "text"); anything else -> (its source,
    None)."""
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Tuple) \
            and unparse(node.value).rsplit(".", 1)[-1] == "Annotated" and node.slice.elts:
        for meta in node.slice.elts[1:]:
            if isinstance(meta, ast.Call) and unparse(meta.func).rsplit(".", 1)[-1] == "Doc" \
                    and len(meta.args) == 1 and isinstance(meta.args[0], ast.Constant) \
                    and isinstance(meta.args[0].value, str):
                return unparse(node.slice.elts[0]), meta.args[0].value
    return unparse(node), None


def param_docs(args: ast.arguments) -> tuple[tuple[str, str, str], ...]:
    """The parameters documented with ``Annotated[T, Doc("...")]``, in order."""
    found = []
    every = [*args.posonlyargs, *args.args, *([args.vararg] if args.vararg else []),
             *args.kwonlyargs, *([args.kwarg] if args.kwarg else [])]
    for arg in every:
        kind, doc = doc_annotation(arg.annotation)
        if doc is not None:
            found.append((arg.arg, kind, doc))
    return tuple(found)


def _param(arg: ast.arg, default: ast.expr | None) -> str:
    annotation = doc_annotation(arg.annotation)[0]
    text = arg.arg + (": " + annotation if annotation else "")
    if default is not None:
        text += (" = " if annotation else "=") + unparse(default)
    return text


def _docstring(body: list[ast.stmt]) -> str | None:
    if body and isinstance(body[0], ast.Expr):
        value = body[0].value
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            return value.value
    return None


def _first_line(node: ast.AST) -> int:
    decorators = getattr(node, "decorator_list", [])
    return min([node.lineno, *(d.lineno for d in decorators)])  # type: ignore[attr-defined]


def _decorator_names(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> tuple:
    return tuple(unparse(d) for d in node.decorator_list)


def _function_kind(decorators: tuple[str, ...], in_class: bool) -> str:
    names = {d.rsplit(".", 1)[-1].split("(", 1)[0] for d in decorators}
    if not in_class:
        return "function"
    for kind in ("property", "cached_property", "classmethod", "staticmethod"):
        if kind in names:
            return "property" if kind == "cached_property" else kind
    return "method"


def _is_overload(decorators: tuple[str, ...]) -> bool:
    return any(d.rsplit(".", 1)[-1] == "overload" for d in decorators)


def _is_accessor(decorators: tuple[str, ...]) -> bool:
    """``@x.setter`` / ``@x.deleter``: part of property ``x``, not an object of its own."""
    return any(d.endswith((".setter", ".deleter")) for d in decorators)


class _Reader:
    """One pass over a module's tree collecting its objects in source order."""

    def __init__(self, path: str, lines: list[str], max_objects: int) -> None:
        self.path = path
        self.lines = lines
        self.max_objects = max_objects
        self.objects: dict[str, PyObject] = {}
        self.imports: dict[str, ImportRef] = {}
        self.star: list[ImportRef] = []
        self.all_names: list[str] | None = None
        self.truncated = False
        self.pending_overloads: dict[str, list[str]] = {}

    def module(self, tree: ast.Module) -> ModuleInfo:
        doc = _docstring(tree.body)
        doc_lines = (tree.body[0].lineno, tree.body[0].end_lineno or 0) if doc is not None \
            else (0, 0)
        top = self.body(tree.body, prefix="", in_class=False, top=True)
        all_names = tuple(self.all_names) if self.all_names is not None else None
        return ModuleInfo(self.path, doc, self.objects, tuple(top), self.imports,
                          tuple(self.star), all_names, None, self.truncated, doc_lines,
                          len(self.lines))

    def body(self, body: list[ast.stmt], prefix: str, in_class: bool, top: bool) -> list[str]:
        """The qualnames of the objects a body defines (``if``/``try`` bodies included:
        the first definition of a name wins)."""
        names: list[str] = []
        for index, node in enumerate(body):
            following = body[index + 1] if index + 1 < len(body) else None
            for qualname in self.statement(node, following, prefix, in_class, top):
                if qualname not in names:
                    names.append(qualname)
        return names

    def statement(self, node: ast.stmt, following: ast.stmt | None, prefix: str,
                  in_class: bool, top: bool) -> list[str]:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return self.function(node, prefix, in_class)
        if isinstance(node, ast.ClassDef):
            return self.klass(node, prefix)
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            return self.assignment(node, following, prefix, in_class)
        if isinstance(node, ast.AugAssign):
            self.augmented_all(node, top)
        elif isinstance(node, ast.Expr):
            self.extended_all(node, top)
        elif isinstance(node, (ast.Import, ast.ImportFrom)) and top:
            self.import_(node)
        elif isinstance(node, (ast.If, ast.Try, getattr(ast, "TryStar", ast.Try))):
            return self.branches(node, prefix, in_class, top)
        return []

    def branches(self, node: ast.stmt, prefix: str, in_class: bool, top: bool) -> list[str]:
        names: list[str] = []
        bodies = [node.body, node.orelse]  # type: ignore[attr-defined]
        bodies += [h.body for h in getattr(node, "handlers", [])]
        bodies.append(getattr(node, "finalbody", []))
        for body in bodies:
            names += self.body(body, prefix, in_class, top)
        return names

    def add(self, obj: PyObject) -> bool:
        if obj.qualname in self.objects:
            return False
        if len(self.objects) >= self.max_objects:
            self.truncated = True
            return False
        self.objects[obj.qualname] = obj
        return True

    def function(self, node: ast.FunctionDef | ast.AsyncFunctionDef, prefix: str,
                 in_class: bool) -> list[str]:
        qualname = prefix + node.name
        decorators = _decorator_names(node)
        signature = format_signature(node.args, node.returns)
        if _is_overload(decorators):
            self.pending_overloads.setdefault(qualname, []).append(signature)
            return []
        if _is_accessor(decorators):
            self.extend(qualname, node.end_lineno or node.lineno)
            return []
        kind = _function_kind(decorators, in_class)
        obj = PyObject(qualname, kind, signature, _docstring(node.body), _first_line(node),
                       node.end_lineno or node.lineno, decorators,
                       annotation=unparse(node.returns) if kind == "property" else "",
                       is_async=isinstance(node, ast.AsyncFunctionDef),
                       overloads=tuple(self.pending_overloads.pop(qualname, ())),
                       param_docs=param_docs(node.args))
        if not self.add(obj):
            return []
        if node.name == "__init__" and in_class:
            return [qualname, *self.instance_attributes(node, prefix)]
        return [qualname]

    def extend(self, qualname: str, last_line: int) -> None:
        """A property's setter or deleter: the property's lines reach further."""
        obj = self.objects.get(qualname)
        if obj is not None and last_line > obj.last_line:
            self.objects[qualname] = obj._replace(last_line=last_line)

    def klass(self, node: ast.ClassDef, prefix: str) -> list[str]:
        qualname = prefix + node.name
        bases = tuple(unparse(b) for b in node.bases)
        obj = PyObject(qualname, "class", "", _docstring(node.body), _first_line(node),
                       node.end_lineno or node.lineno, _decorator_names(node), bases)
        if not self.add(obj):
            return []
        members = self.body(node.body, qualname + ".", in_class=True, top=False)
        self.objects[qualname] = self.objects[qualname]._replace(members=tuple(members))
        return [qualname]

    def instance_attributes(self, init: ast.FunctionDef | ast.AsyncFunctionDef,
                            prefix: str) -> list[str]:
        """``self.x = ...`` in ``__init__`` with a ``#:`` comment or a docstring after it,
        documented as Sphinx does (attributes without documentation are not members)."""
        body = init.body
        found: list[str] = []
        for index, node in enumerate(body):
            following = body[index + 1] if index + 1 < len(body) else None
            target = _single_target(node)
            if not (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)
                    and target.value.id == "self"):
                continue
            doc = self.attribute_doc(node, following)
            obj = self.attribute(prefix + target.attr, node, doc, "attribute")  # type: ignore
            obj = obj._replace(value="")  # set per instance: no class-level value
            if obj.docstring is not None and self.add(obj):
                found.append(obj.qualname)
        return found

    def assignment(self, node: ast.Assign | ast.AnnAssign, following: ast.stmt | None,
                   prefix: str, in_class: bool) -> list[str]:
        target = _single_target(node)
        if isinstance(node, ast.Assign) and _names(node) == ["__all__"] and not prefix:
            self.all_names = _literal_strings(node.value)
        if not isinstance(target, ast.Name):
            return []
        kind = "attribute" if in_class else "data"
        obj = self.attribute(prefix + target.id, node, self.attribute_doc(node, following),
                             kind)
        return [obj.qualname] if self.add(obj) else []

    def attribute(self, qualname: str, node: ast.Assign | ast.AnnAssign, doc: str | None,
                  kind: str) -> PyObject:
        annotation = ""
        if isinstance(node, ast.AnnAssign):
            annotation, annotated_doc = doc_annotation(node.annotation)
            doc = doc if doc is not None else annotated_doc
        value = unparse(node.value) if node.value is not None else ""
        if "\n" in value or len(value) > MAX_VALUE_CHARS:
            value = ""
        return PyObject(qualname, kind, "", doc, node.lineno, node.end_lineno or node.lineno,
                        annotation=annotation, value=value)

    def attribute_doc(self, node: ast.stmt, following: ast.stmt | None) -> str | None:
        """An attribute's documentation as Sphinx reads it: a string right after the
        assignment, else ``#:`` comment lines just before it, else a ``#:`` comment on
        its line."""
        if isinstance(following, ast.Expr) and isinstance(following.value, ast.Constant) \
                and isinstance(following.value.value, str):
            return following.value.value
        before = self.comment_block(node.lineno - 1)
        if before is not None:
            return before
        line = self.lines[node.lineno - 1] if node.lineno - 1 < len(self.lines) else ""
        marker = _inline_doc_comment(line)
        return marker

    def comment_block(self, line_number: int) -> str | None:
        """The ``#:`` lines that end on the line above ``line_number`` (1-based)."""
        found: list[str] = []
        index = line_number - 1
        while index >= 0:
            stripped = self.lines[index].strip()
            if not stripped.startswith("#:"):
                break
            text = stripped[2:]
            found.append(text[1:] if text.startswith(" ") else text)
            index -= 1
        return "\n".join(reversed(found)) if found else None

    def import_(self, node: ast.Import | ast.ImportFrom) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    self.imports[alias.asname] = ImportRef(alias.name, 0, None)
                else:
                    first = alias.name.split(".", 1)[0]
                    self.imports[first] = ImportRef(first, 0, None)
            return
        module = node.module or ""
        for alias in node.names:
            if alias.name == "*":
                self.star.append(ImportRef(module, node.level, None))
            else:
                self.imports[alias.asname or alias.name] = ImportRef(module, node.level,
                                                                     alias.name)

    def augmented_all(self, node: ast.AugAssign, top: bool) -> None:
        if top and isinstance(node.target, ast.Name) and node.target.id == "__all__" \
                and isinstance(node.op, ast.Add) and self.all_names is not None:
            more = _literal_strings(node.value)
            self.all_names = None if more is None else self.all_names + more

    def extended_all(self, node: ast.Expr, top: bool) -> None:
        call = node.value
        if not (top and isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                and isinstance(call.func.value, ast.Name) and call.func.value.id == "__all__"
                and self.all_names is not None and len(call.args) == 1):
            return
        if call.func.attr == "extend":
            more = _literal_strings(call.args[0])
            self.all_names = None if more is None else self.all_names + more
        elif call.func.attr == "append":
            arg = call.args[0]
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                self.all_names = [*self.all_names, arg.value]
            else:
                self.all_names = None


def _single_target(node: ast.stmt) -> ast.expr | None:
    if isinstance(node, ast.AnnAssign):
        return node.target
    if isinstance(node, ast.Assign) and len(node.targets) == 1:
        return node.targets[0]
    return None


def _names(node: ast.Assign) -> list[str]:
    return [t.id for t in node.targets if isinstance(t, ast.Name)]


def _literal_strings(node: ast.expr | None) -> list[str] | None:
    """The strings of a literal list/tuple of strings, None for anything else."""
    if not isinstance(node, (ast.List, ast.Tuple)):
        return None
    names: list[str] = []
    for element in node.elts:
        if not (isinstance(element, ast.Constant) and isinstance(element.value, str)):
            return None
        names.append(element.value)
    return names


def _inline_doc_comment(line: str) -> str | None:
    """The text of a ``#:`` comment that ends an assignment's line (``x = 1  #: doc``):
    the first ``#`` outside a string starts the comment (one pass over the line)."""
    quote = ""
    escaped = False
    for position, char in enumerate(line):
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif quote:
            if char == quote:
                quote = ""
        elif char in "'\"":
            quote = char
        elif char == "#":
            if not line.startswith("#:", position):
                return None
            text = line[position + 2:]
            return text[1:] if text.startswith(" ") else text
    return None


__all__ = ["ImportRef", "MAX_OBJECTS", "MAX_SOURCE_BYTES", "ModuleInfo", "PyObject",
           "doc_annotation", "format_signature", "param_docs", "parse_module", "unparse",
           "unreadable"]
