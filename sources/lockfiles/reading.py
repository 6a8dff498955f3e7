"""Reading a project's lockfiles as untrusted data, within bounds: the one reader every
lockfile format module (``LOCKFILE`` in this package) reads through.

Input is untrusted: a JSON file at most ``MAX_LOCKFILE_BYTES``, any other at most
``MAX_PARSED_BYTES`` (the TOML and YAML parsers hold 10-40 bytes a byte: a realistic
24 MB pnpm-lock.yaml took 35 s and 1 GB; a line read holds a string a line), at most
``MAX_PARSED_VALUES`` values in a TOML or YAML file and ``index_pages.MAX_PAGE_VALUES``
in a JSON one (counted before parsing: 60 MB of ``[{},{},...`` in TOML took 61 s and
2 GB), ``MAX_PROJECT_BYTES`` for all the files of a project, ``MAX_REQUIREMENT_LINES``
lines of a requirements file; a regular file inside the project only (a FIFO, a device or
a symlink out is refused, never opened in a way that blocks); includes at most
``MAX_INCLUDE_DEPTH`` deep and ``MAX_REQUIREMENT_FILES`` files, never outside the project;
YAML through the safe loader (no tags that build objects), and no value of it turned into
text unless it is a scalar (a YAML alias bomb is shared lists, harmless until something
prints one); nesting is walked with explicit stacks; a file that does not parse is a
warning, not a failure; at most ``MAX_WARNINGS`` warnings are listed, quoting at most 200
characters.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

from ..index_pages import MAX_PAGE_VALUES
from ..package_index import sdist_version

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

MAX_LOCKFILE_BYTES = 64 << 20  # a JSON file (package-lock.json: up to tens of MB)
MAX_PARSED_BYTES = 16 << 20  # a TOML, YAML or line-read file (uv.lock, pnpm-lock.yaml...)
MAX_PARSED_VALUES = 2_000_000  # ... and the values a TOML or YAML one holds (counted)
MAX_PROJECT_BYTES = 128 << 20  # every file read for one project
MAX_REQUIREMENT_LINES = 20_000  # lines of one requirements file (real ones: hundreds)
MAX_WARNINGS = 100
MAX_INCLUDE_DEPTH = 16
MAX_REQUIREMENT_FILES = 256
MAX_NESTING = 256  # package-lock v1 ``dependencies`` inside ``dependencies``

PYPI = "pypi"
NPM = "npm"


class Locked(NamedTuple):
    """A lockfile's package before merging: ``direct`` None when the lockfile cannot
    tell (the manifest's names decide)."""

    ecosystem: str
    name: str
    version: str
    direct: bool | None
    index: str | None = None  # type: ignore[assignment]  # a field named like tuple.index
    hashes: tuple[str, ...] = ()
    from_index: bool = True
    extra: tuple[str, ...] = ()  # requirements' --extra-index-url values
    find_links: tuple[str, ...] = ()  # requirements' -f values


def not_from_index(ecosystem: str, name: str, direct: bool | None = None) -> Locked:
    """A locked package that does not come from an index (git, URL, path, workspace)."""
    return Locked(ecosystem, name, "", direct, from_index=False)


class Reading:
    """What one project read collects: warnings, the files read, the manifests' names."""

    def __init__(self, project: Path, dev: bool) -> None:
        self.project = project
        self.root = project.resolve()
        self.dev = dev
        self.warnings: list[str] = []
        self.more_warnings = 0
        self.files: list[str] = []
        self.npm_direct: dict[str, str] = {}  # package.json's name -> range
        self.budget = MAX_PROJECT_BYTES

    def warn(self, message: str) -> None:
        if len(self.warnings) < MAX_WARNINGS:
            self.warnings.append(message)
        else:
            self.more_warnings += 1

    def shown(self, path: Path) -> str:
        """``path`` as a warning names it, not resolved (a link by its own name): relative
        to the project when it is in it, else absolute; at most 200 characters."""
        absolute = os.path.normpath(os.path.join(self.project, path))
        relative = os.path.relpath(absolute, self.project)
        return quoted(absolute if relative.startswith("..") else relative)

    def rel(self, path: Path) -> str:
        try:
            return path.resolve().relative_to(self.root).as_posix()
        except ValueError:
            return str(path)

    def text(self, path: Path, limit: int | None = None) -> str | None:
        """A project file's text within ``limit`` (``MAX_PARSED_BYTES`` when not given)
        and the project's budget; None (and a warning) when it is unreadable, not a
        regular file, or a link out of the project."""
        limit = MAX_PARSED_BYTES if limit is None else limit
        rel = self.rel(path)
        resolved = path.resolve()
        if not resolved.is_relative_to(self.root):
            self.warn(f"{self.shown(path)}: a link out of the project, not read")
            return None
        try:
            data = read_regular(resolved, min(limit, self.budget))
        except OSError as exc:
            self.warn(f"{rel}: cannot read ({exc.strerror or exc})")
            return None
        if data is None:
            self.warn(f"{rel}: not a regular file, not read")
            return None
        if len(data) > limit:
            self.warn(f"{rel}: over {limit} bytes, not read")
            return None
        if len(data) > self.budget:
            self.warn(f"{rel}: the project's lockfiles are over {MAX_PROJECT_BYTES} bytes "
                      "together, not read")
            return None
        self.budget -= len(data)
        self.files.append(rel)
        return data.decode("utf-8", "replace")

    def parsed_text(self, path: Path, text: str | None = None) -> str | None:
        """A TOML or YAML file's text within ``MAX_PARSED_BYTES`` and its values within
        ``MAX_PARSED_VALUES``; None (and a warning) otherwise."""
        text = self.text(path) if text is None else text
        if text is None:
            return None
        if len(text) > MAX_PARSED_BYTES:
            self.warn(f"{self.rel(path)}: over {MAX_PARSED_BYTES} bytes, not parsed")
            return None
        if value_count(text) > MAX_PARSED_VALUES:
            self.warn(f"{self.rel(path)}: more than {MAX_PARSED_VALUES} values, not parsed")
            return None
        return text

    def toml(self, path: Path) -> dict[str, Any] | None:
        return self._parsed(path, self.parsed_text(path), tomllib.loads,
                            (tomllib.TOMLDecodeError, RecursionError))

    def project_toml(self, name: str) -> dict[str, Any] | None:
        """The project's TOML manifest ``name``; None without the file or when unread."""
        path = self.project / name
        return self.toml(path) if present(path) else None

    def json(self, path: Path) -> Any:
        text = self.text(path, MAX_LOCKFILE_BYTES)
        if text is not None and value_count(text, ",[{") > MAX_PAGE_VALUES:
            self.warn(f"{self.rel(path)}: more than {MAX_PAGE_VALUES} values, not parsed")
            return None
        return self._parsed(path, text, json.loads, (ValueError, RecursionError))

    def _parsed(self, path: Path, text: str | None, loads: Callable[[str], Any],
                errors: tuple[type[Exception], ...]) -> Any:
        """``loads(text)``; None when there is no text or it does not parse (a warning)."""
        if text is None:
            return None
        try:
            return loads(text)
        except errors as exc:
            self.warn(f"{self.rel(path)}: does not parse ({quoted(str(exc))})")
            return None

    def yaml(self, path: Path, text: str | None = None) -> Any:
        text = self.parsed_text(path, text)
        if text is None:
            return None
        import yaml  # lazy: only a project with a YAML lockfile pays for the import

        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # a safe loader
        return self._parsed(path, text, lambda t: yaml.load(t, Loader=loader),  # noqa: S506
                            (yaml.YAMLError, RecursionError))


def read_regular(path: Path, limit: int) -> bytes | None:
    """At most ``limit + 1`` bytes of ``path`` when it is a regular file (opened without
    following a last symlink and without blocking: a FIFO is refused, never waited on);
    None when it is not a regular file."""
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | \
        getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags)
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return fh.read(limit + 1)


def present(path: Path) -> bool:
    """Whether a lockfile of this name is there to be read (or refused with a reason):
    anything but a folder, a dangling or looping symlink included."""
    return os.path.lexists(path) and not path.is_dir()


def value_count(text: str, separators: str = ",:=[{\n") -> int:
    """At most how many values a text holds: one more than its ``separators`` (for TOML
    and YAML, their separators and lines; for JSON, commas and opening brackets)."""
    return sum(text.count(c) for c in separators) + 1


def quoted(text: str, limit: int = 200) -> str:
    """``text`` as a warning quotes it: at most ``limit`` characters."""
    return text if len(text) <= limit else text[:limit] + "..."


def scalar_text(value: object) -> str:
    """A YAML scalar as text ("" for anything else): ``str`` of a list an alias bomb
    shares would be exponential."""
    if isinstance(value, str):
        return value
    return str(value) if isinstance(value, (int, float)) else ""


def as_dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def as_list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def as_str(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


class LockfileFormat(NamedTuple):
    """One lockfile format, as its module's ``LOCKFILE``: ``files`` names the files it
    reads (as a person says them); ``locked`` reads them from the project (each through
    the :class:`Reading`, nothing else) and gives each locked package with the file that
    locks it; ``order``: the formats are read in this order (the warnings and the files
    read keep it: Python's before npm's)."""

    files: str
    ecosystem: str
    order: int
    locked: Callable[[Reading], list[tuple[str, Locked]]]


def read_document(reading: Reading, name: str, kind: str) -> dict[str, Any] | None:
    """The project's file ``name`` parsed as ``kind`` (``toml``, ``json``, ``yaml``) when it
    is there and holds a table; None otherwise (a warning said why when it was refused)."""
    path = reading.project / name
    if not present(path):
        return None
    doc = reading.toml(path) if kind == "toml" else reading.json(path) if kind == "json" \
        else reading.yaml(path)
    return doc if isinstance(doc, dict) else None


_NPM_SECTIONS = ("dependencies", "optionalDependencies")


def npm_sections(dev: bool) -> tuple[str, ...]:
    return (*_NPM_SECTIONS, "devDependencies") if dev else _NPM_SECTIONS


def registry_of(resolved: str | None, name: str) -> str | None:
    """The registry a tarball URL came from (``https://host/`` before ``name/-/``)."""
    if not resolved:
        return None
    marker = f"/{name}/-/"
    if marker in resolved:
        return resolved.split(marker, 1)[0] + "/"
    return None


def is_registry_url(resolved: str | None) -> bool:
    return resolved is None or (resolved.startswith(("https://", "http://"))
                                and "/-/" in resolved)


def sdist_hashes(files: Iterable[object], name: str) -> tuple[str, ...]:
    """The hashes a lockfile lists for the package's source archives."""
    found = []
    for entry in files:
        entry = as_dict(entry)
        filename = as_str(entry.get("file")) or as_str(entry.get("name"))
        if filename is None and as_str(entry.get("url")):
            filename = str(entry["url"]).rsplit("/", 1)[-1]
        if filename and sdist_version(filename, name) and isinstance(entry.get("hash"), str):
            found.append(entry["hash"])
    return tuple(found)


def python_packages(packages: object, elsewhere: tuple[str, ...],
                     ) -> Iterator[tuple[str, str | None, dict[str, Any]]]:
    """(name, version, entry) of each named entry of a lockfile's package list; version
    None when it names none or a key in ``elsewhere`` says it is not from an index."""
    for package in map(as_dict, as_list(packages)):
        name, version = as_str(package.get("name")), as_str(package.get("version"))
        if name is not None:
            yield name, None if any(k in package for k in elsewhere) else version, package
