"""Find a project's Python modules as Sphinx would, reading everything as data.

Sphinx imports ``flask.url_for`` from the ``sys.path`` its ``conf.py`` sets up; here the
same places are found without running anything: the ``sys.path`` entries of ``conf.py``
are evaluated from string literals with :mod:`ast` (``os.path.abspath('..')``,
``os.path.join(os.path.dirname(__file__), 'src')``, ``Path(__file__).parent / 'src'``...),
then ``src/``, ``lib/`` and the source root are tried. A dotted name is resolved to the
file and object that define it, following re-exports (``from .helpers import url_for``
in ``flask/__init__.py``) and star imports.

All reading goes through a ``read(path) -> bytes | None`` callback given repo-relative
POSIX paths; every path made here is normalised and checked with
:func:`foundation.safe_paths.path_problem` first, so nothing outside the source is asked for.
"""

from __future__ import annotations

import ast
import posixpath
from collections.abc import Callable, Iterable, Sequence
from typing import NamedTuple

from ..foundation.safe_paths import path_problem
from .python_source import ModuleInfo, PyObject, parse_module, unreadable

Reader = Callable[[str], "bytes | None"]

MAX_FILES_READ = 2000  # paths looked at for one page (``touched``): a few hundred at most
MAX_REEXPORT_HOPS = 16
DEFAULT_ROOTS = ("src", "lib", "")

# Reasons a name is not found (the first words are stable, for the build summary).
NO_MODULE = "no such module"
NO_OBJECT = "no such object"
UNREADABLE = "unreadable file"
OUTSIDE = "outside the source"

_ROOT = "/\0root"  # the source root in the virtual file system conf.py paths live in


class SphinxConf(NamedTuple):
    """What autodoc takes from ``conf.py``, read as data."""

    sys_path: tuple[str, ...] = ()  # repo-relative folders, search order ("" = root)
    outside: tuple[str, ...] = ()  # entries that leave the source (ignored)
    member_order: str = "alphabetical"
    default_options: dict[str, str | None] = {}
    autoclass_content: str = "class"
    problem: str | None = None


class Found(NamedTuple):
    """A resolved name: the module and object that define it (``qualname`` "" and
    ``obj`` None for a module itself)."""

    name: str  # as asked for, made absolute (``flask.url_for``)
    module: str  # the module defining it (``flask.helpers``)
    file: str
    qualname: str
    obj: PyObject | None
    info: ModuleInfo


class NotFound(NamedTuple):
    name: str
    reason: str


def normalize(base_dir: str, relative: str) -> str | None:
    """``relative`` joined to the repo-relative folder ``base_dir``, normalised; None
    when it leaves the source or is not a safe path ("" is the root itself)."""
    if relative.startswith("/") or "\0" in relative:
        return None
    return _repo_relative(posixpath.normpath(posixpath.join(_ROOT, base_dir, relative)))


def _repo_relative(path: str) -> str | None:
    """The repo-relative form of a normalised path below ``_ROOT``; None outside the
    source or when it is not a safe path ("" is the root itself)."""
    if path == _ROOT:
        return ""
    if not path.startswith(_ROOT + "/"):
        return None
    rel = path[len(_ROOT) + 1:]
    return None if path_problem(rel) else rel


# -- conf.py ------------------------------------------------------------------------------

_PATH_FUNCTIONS = {"abspath", "realpath", "normpath", "join", "dirname", "fspath", "str",
                   "Path", "PurePath", "PosixPath", "resolve", "absolute", "joinpath",
                   "getcwd", "expanduser"}


class _PathEval:
    """Evaluates the path expressions of a ``conf.py`` whose value follows from string
    literals; paths are absolute in a virtual file system rooted at ``_ROOT``."""

    def __init__(self, conf_path: str) -> None:
        self.conf_file = posixpath.join(_ROOT, conf_path)
        self.conf_dir = posixpath.dirname(self.conf_file)
        self.names: dict[str, str] = {"__file__": self.conf_file}

    def absolute(self, path: str) -> str:
        return posixpath.normpath(posixpath.join(self.conf_dir, path))

    def value(self, node: ast.expr) -> str | None:
        """The path ``node`` evaluates to (absolute), or None when undecidable."""
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return self.absolute(node.value)
        if isinstance(node, ast.Name):
            return self.names.get(node.id)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            left, right = self.value(node.left), self.value_or_text(node.right)
            return None if left is None or right is None else self.absolute(
                posixpath.join(left, right))
        if isinstance(node, ast.Attribute) and node.attr == "parent":
            inner = self.value(node.value)
            return None if inner is None else posixpath.dirname(inner)
        if isinstance(node, ast.Subscript):
            return self.parents(node)
        if isinstance(node, ast.Call):
            return self.call(node)
        return None

    def value_or_text(self, node: ast.expr) -> str | None:
        """A joined part: a literal stays relative, anything else is evaluated."""
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        return self.value(node)

    def parents(self, node: ast.Subscript) -> str | None:
        """``p.parents[n]``."""
        base = node.value
        if not (isinstance(base, ast.Attribute) and base.attr == "parents"):
            return None
        index = node.slice
        if not (isinstance(index, ast.Constant) and isinstance(index.value, int)
                and 0 <= index.value < 64):
            return None
        path = self.value(base.value)
        for _ in range(index.value + 1):
            path = None if path is None else posixpath.dirname(path)
        return path

    def call(self, node: ast.Call) -> str | None:
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if name not in _PATH_FUNCTIONS or node.keywords:
            return None
        if name == "getcwd":
            return self.conf_dir
        if isinstance(func, ast.Attribute) and name in ("resolve", "absolute", "joinpath"):
            base = self.value(func.value)
            args = [self.value_or_text(a) for a in node.args]
            if base is None or None in args:
                return None
            return self.absolute(posixpath.join(base, *args))  # type: ignore[arg-type]
        args = [self.value_or_text(a) for a in node.args]
        if not args or None in args:
            return None
        if name == "dirname":
            first = args[0]
            return posixpath.dirname(self.absolute(first)) if first is not None else None
        if name == "expanduser":
            return None
        return self.absolute(posixpath.join(*args))  # type: ignore[arg-type]

    def relative(self, path: str) -> str | None:
        """The repo-relative form of an evaluated path, None outside the source."""
        return _repo_relative(path)


def _is_sys_path(node: ast.expr) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr == "path"
            and isinstance(node.value, ast.Name) and node.value.id == "sys")


class _ConfReader:
    def __init__(self, conf_path: str) -> None:
        self.paths = _PathEval(conf_path)
        self.entries: list[str | None] = []  # None: an entry we cannot evaluate
        self.settings: dict[str, object] = {}

    def run(self, body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, (ast.If, ast.Try)):
                self.run(node.body)
                self.run(node.orelse)
                for handler in getattr(node, "handlers", []):
                    self.run(handler.body)
            elif isinstance(node, ast.Assign):
                self.assign(node)
            elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
                self.sys_path_call(node.value)

    def assign(self, node: ast.Assign) -> None:
        if len(node.targets) != 1 or not isinstance(node.targets[0], ast.Name):
            return
        name = node.targets[0].id
        path = self.paths.value(node.value)
        if path is not None:
            self.paths.names[name] = path
        if name.startswith(("autodoc_", "autoclass_")):
            try:
                self.settings[name] = ast.literal_eval(node.value)
            except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
                pass

    def sys_path_call(self, call: ast.Call) -> None:
        func = call.func
        if not (isinstance(func, ast.Attribute) and _is_sys_path(func.value)):
            return
        if func.attr == "insert" and len(call.args) == 2:
            where = call.args[0]
            index = where.value if isinstance(where, ast.Constant) else None
            if not isinstance(index, int):
                index = 0
            position = min(max(index, 0), len(self.entries))
            self.entries.insert(position, self.entry(call.args[1]))
        elif func.attr == "append" and len(call.args) == 1:
            self.entries.append(self.entry(call.args[0]))
        elif func.attr == "extend" and len(call.args) == 1 \
                and isinstance(call.args[0], (ast.List, ast.Tuple)):
            self.entries.extend(self.entry(e) for e in call.args[0].elts)

    def entry(self, node: ast.expr) -> str | None:
        path = self.paths.value(node)
        if path is None:
            return None
        rel = self.paths.relative(path)
        if rel is None:
            return "\0" + _source_text(node)
        return rel


def _source_text(node: ast.expr) -> str:
    try:
        return ast.unparse(node)[:200]
    except (RecursionError, ValueError):
        return "..."


def read_sphinx_conf(source: bytes, conf_path: str) -> SphinxConf:
    """The ``sys.path`` entries and autodoc settings of the ``conf.py`` at repo-relative
    ``conf_path``, from literals only (anything computed otherwise is ignored)."""
    try:
        tree = ast.parse(source, filename=conf_path)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        return SphinxConf(problem=f"{conf_path} is not valid Python: {exc}")
    reader = _ConfReader(conf_path)
    try:
        reader.run(tree.body)
    except RecursionError:
        return SphinxConf(problem=f"{conf_path} is nested too deeply")
    inside = tuple(e for e in reader.entries if e is not None and not e.startswith("\0"))
    outside = tuple(e[1:] for e in reader.entries if e is not None and e.startswith("\0"))
    settings = reader.settings
    order = settings.get("autodoc_member_order")
    defaults = settings.get("autodoc_default_options")
    content = settings.get("autoclass_content")
    return SphinxConf(
        sys_path=tuple(dict.fromkeys(inside)), outside=outside,
        member_order=order if order in ("alphabetical", "bysource", "groupwise") else
        "alphabetical",
        default_options=_options(defaults),
        autoclass_content=content if content in ("class", "both", "init") else "class")


def _options(value: object) -> dict[str, str | None]:
    """``autodoc_default_options`` as directive options: True -> None (a flag)."""
    if not isinstance(value, dict):
        return {}
    options: dict[str, str | None] = {}
    for key, item in value.items():
        if not isinstance(key, str) or item is False:
            continue
        options[key] = None if item is True or item is None else str(item)
    return options


def package_roots(files: Iterable[str], max_depth: int = 3) -> list[str]:
    """Folders holding a top-level package (``X/__init__.py`` in a folder without one),
    shallow ones first: where a project's importable code lives when nothing says."""
    files = set(files)
    roots: set[str] = set()
    for path in files:
        if not path.endswith("/__init__.py"):
            continue
        package = path[: -len("/__init__.py")]
        parent = posixpath.dirname(package)
        if parent.count("/") + (1 if parent else 0) > max_depth:
            continue
        if (parent + "/__init__.py" if parent else "__init__.py") not in files:
            roots.add(parent)
    return sorted(roots, key=lambda r: (r.count("/") + (1 if r else 0), r))


def search_roots(conf: SphinxConf | None = None, files: Iterable[str] | None = None,
                 extra: Sequence[str] = ()) -> tuple[str, ...]:
    """Where modules are looked for, in order: ``extra`` (e.g. mkdocstrings ``paths``),
    conf.py's ``sys.path``, ``src``, ``lib``, the root, then other package folders."""
    roots = [*extra, *(conf.sys_path if conf else ()), *DEFAULT_ROOTS]
    if files is not None:
        roots += package_roots(files)
    return tuple(dict.fromkeys(roots))


# -- resolving names ----------------------------------------------------------------------

class ModuleFinder:
    """Resolves dotted names to files and objects; caches what it reads, so one finder
    serves a whole build. ``touched`` collects every path looked at (read or not found,
    cached or not) since it was last cleared, with its hash: a page's dependencies."""

    def __init__(self, read: Reader, roots: Sequence[str] = DEFAULT_ROOTS, *,
                 outside: Sequence[str] = (), max_files: int = MAX_FILES_READ,
                 hasher: Callable[[bytes], str] | None = None) -> None:
        self.read = read
        self.hasher = hasher
        self.hashes: dict[str, str | None] = {}  # path -> hash, None: not found
        self.probes: dict[str, tuple[str, ...]] = {}  # module -> paths looked at
        self.touched: dict[str, str | None] = {}
        self.roots = tuple(r for r in roots if r == "" or path_problem(r) is None)
        self.outside = tuple(outside)
        self.max_files = max_files
        self.module_files: dict[str, str | None] = {}
        self.infos: dict[str, ModuleInfo] = {}

    def module_file(self, module: str) -> str | None:
        """The file of module ``module``, found as Python's import finds it: the top
        package in the first root that has it, each submodule inside its parent
        package's folders only (``__init__.py`` before ``x.py``; a folder without
        ``__init__.py`` is a namespace package)."""
        if module in self.module_files:  # replayed through info(): the same cap applies
            if "." in module:  # and the same parents are looked at
                self.package_dirs(module.rpartition(".")[0])
            for path in self.probes[module]:
                if self.info(path) is not None:
                    return path
            return None
        parent, _, last = module.rpartition(".")
        found = None
        probes: list[str] = []
        if last.isidentifier():
            folders = self.package_dirs(parent) if parent else self.roots
            for folder in folders:
                found = self.first_file(folder, last, probes)
                if found:
                    break
        self.module_files[module] = found
        self.probes[module] = tuple(probes)
        return found

    def touch(self, path: str) -> None:
        self.touched[path] = self.hashes.get(path)

    def package_dirs(self, package: str) -> list[str]:
        """The folders submodules of ``package`` are looked for in."""
        path = self.module_file(package)
        if path is not None:
            return [posixpath.dirname(path)] if path.endswith("__init__.py") else []
        parent, _, last = package.rpartition(".")
        if not last.isidentifier():
            return []
        folders = self.package_dirs(parent) if parent else list(self.roots)
        return [f"{folder}/{last}" if folder else last for folder in folders]

    def first_file(self, folder: str, name: str, probes: list[str]) -> str | None:
        base = f"{folder}/{name}" if folder else name
        for candidate in (base + "/__init__.py", base + ".py"):
            if path_problem(candidate) is not None:
                continue
            probes.append(candidate)
            if self.info(candidate) is not None:
                return candidate
        return None

    def info(self, path: str) -> ModuleInfo | None:
        """The parsed file at ``path``; None when it does not exist."""
        if path not in self.touched and len(self.touched) >= self.max_files:
            return None  # per page (touched), so a result never depends on the cache
        if path in self.infos:
            self.touch(path)
            return self.infos[path]
        if path in self.hashes:
            self.touch(path)
            return None
        data = self.read(path)
        self.hashes[path] = None if data is None else \
            self.hasher(data) if self.hasher else ""
        self.touch(path)
        if data is None:
            return None
        info = parse_module(data, path)
        self.infos[path] = info
        return info

    def resolve(self, name: str, context: Sequence[str] = (),
                explain: str | None = None) -> Found | NotFound:
        """Resolve ``name`` as Sphinx does: first inside each context (the current
        module, the current class), then as an absolute dotted name. When none is found,
        the reason is the one of ``explain`` (the dotted name Sphinx would import, when
        it is a candidate), else the most telling one: never a reason that belongs to
        the context alone (after ``automodule:: bad`` failed to parse, an unrelated
        ``automodule:: other`` was reported as ``unreadable file bad.py``)."""
        candidates = [f"{c}.{name}" for c in context if c] + [name]
        first: NotFound | None = None
        for candidate in dict.fromkeys(candidates):
            result = self.resolve_absolute(candidate, 0)
            if isinstance(result, Found):
                return result
            if candidate == explain:
                first = result
                explain = None  # (chosen: no other candidate replaces it)
            elif explain not in candidates and (
                    first is None or _rank(result.reason) > _rank(first.reason)):
                first = result
        assert first is not None
        if first.reason.startswith(NO_MODULE) and self.outside:
            return first._replace(reason=f"{first.reason}; sys.path entries {OUTSIDE} "
                                         f"were ignored: {', '.join(self.outside)}")
        return first._replace(name=name)

    def resolve_absolute(self, dotted: str, hops: int) -> Found | NotFound:
        if hops > MAX_REEXPORT_HOPS:
            return NotFound(dotted, f"{NO_OBJECT}: too many re-exports")
        parts = dotted.split(".")
        for cut in range(len(parts), 0, -1):
            module = ".".join(parts[:cut])
            path = self.module_file(module)
            if path is None:
                continue
            info = self.infos[path]
            if info.problem:
                return NotFound(dotted, f"{UNREADABLE} {path}: {info.problem}")
            if cut == len(parts):
                return Found(dotted, module, path, "", None, info)
            return self.attribute(dotted, module, path, info, parts[cut:], hops)
        return NotFound(dotted, f"{NO_MODULE}: {parts[0]} (looked in: "
                                f"{', '.join(r or '.' for r in self.roots)})")

    def attribute(self, dotted: str, module: str, path: str, info: ModuleInfo,
                  rest: list[str], hops: int) -> Found | NotFound:
        """``rest`` (``["Flask", "route"]``) looked up in a module, following imports."""
        head = rest[0]
        if head in info.objects:
            qualname, index = head, 1
            while index < len(rest) and f"{qualname}.{rest[index]}" in info.objects:
                qualname = f"{qualname}.{rest[index]}"
                index += 1
            if index == len(rest):
                return Found(dotted, module, path, qualname, info.objects[qualname], info)
            inherited = self.inherited(module, info.objects[qualname], rest[index:], hops)
            if inherited is not None:
                return _renamed(inherited, dotted)
            return NotFound(dotted, f"{NO_OBJECT}: {'.'.join(rest[index:])} in "
                                    f"{module}.{qualname}")
        package = path.endswith("/__init__.py") or path == "__init__.py"
        ref = info.imports.get(head)
        if ref is not None:
            target = absolute_module(module, package, ref.module, ref.level)
            if target is not None:
                parts = [target] + ([ref.attr] if ref.attr else []) + rest[1:]
                result = self.resolve_absolute(".".join(parts), hops + 1)
                return _renamed(result, dotted)
        for star in info.star_imports:
            target = absolute_module(module, package, star.module, star.level)
            if target is not None:
                result = self.resolve_absolute(".".join([target, *rest]), hops + 1)
                if isinstance(result, Found):
                    return _renamed(result, dotted)
        return NotFound(dotted, f"{NO_OBJECT}: {head} in {module}")


    def inherited(self, module: str, klass: PyObject, rest: list[str],
                  hops: int) -> Found | None:
        """``rest`` looked up in the bases of class ``klass`` (as ``getattr`` would find
        an inherited method), bases in order, each resolved from ``module``'s names."""
        if klass.kind != "class":
            return None
        for base in klass.bases:
            name = base.split("[", 1)[0]
            if not all(part.isidentifier() for part in name.split(".")):
                continue
            found = self.resolve_absolute(f"{module}.{name}", hops + 1)
            if not (isinstance(found, Found) and found.obj is not None
                    and found.obj.kind == "class"):
                continue
            result = self.resolve_absolute(".".join([found.module, found.qualname, *rest]),
                                           hops + 1)
            if isinstance(result, Found):
                return result
        return None


def _rank(reason: str) -> int:
    """How much a failure says: an unreadable file or a missing object beats no module."""
    return 2 if reason.startswith(UNREADABLE) else 1 if reason.startswith(NO_OBJECT) else 0


def _renamed(result: Found | NotFound, name: str) -> Found | NotFound:
    return result._replace(name=name) if isinstance(result, Found) else result


def absolute_module(module: str, package: bool, target: str, level: int) -> str | None:
    """The absolute module name of an import written in ``module`` (relative when
    ``level`` > 0); None when it climbs above the top package."""
    if level == 0:
        return target or None
    parts = module.split(".")
    if not package:
        parts = parts[:-1]
    if level - 1 > len(parts) or (level - 1 == len(parts) and not target):
        return None
    parts = parts[: len(parts) - (level - 1)]
    return ".".join([*parts, target] if target else parts) or None


__all__ = ["DEFAULT_ROOTS", "Found", "ModuleFinder", "NO_MODULE", "NO_OBJECT", "NotFound",
           "OUTSIDE", "Reader", "SphinxConf", "UNREADABLE", "absolute_module", "normalize",
           "package_roots", "read_sphinx_conf", "search_roots", "unreadable"]
