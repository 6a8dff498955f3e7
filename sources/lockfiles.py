"""A project's pinned dependencies, read as data from its lockfiles and manifests.

Python: ``uv.lock``, ``pylock.toml`` (and ``pylock.*.toml``, PEP 751), ``poetry.lock``,
``pdm.lock``, ``Pipfile.lock``, ``requirements*.txt`` and ``requirements/*.txt`` (``==``
or ``===`` pins; ``-r``/``-c`` includes relative to the file and inside the project;
hashes and markers tolerated). npm: ``package-lock.json`` (and ``npm-shrinkwrap.json``,
lockfile versions 1-3), ``pnpm-lock.yaml`` (5.x-9.x), ``yarn.lock`` (classic v1 and
berry). Direct dependencies come from the lockfile where it says (uv.lock's workspace
members, package-lock's root, pnpm's importers, yarn berry's workspaces), else from
``pyproject.toml`` (``[project]`` dependencies and optional dependencies,
``[dependency-groups]``, poetry's and pdm's dependency tables), ``Pipfile`` and
``package.json`` (``dependencies``, ``optionalDependencies``, ``devDependencies``).

Decisions:
- every lockfile found is read and their pins merged: the same name and version pinned by
  two files is one pin (``sources`` names both); two versions of one name are two pins
  (and a warning), each can have its cache;
- development dependencies count as direct (``dev=True``, the default): the agent edits
  the project's tests and tooling too; peer dependencies do not (the host provides them);
- only packages from an index or registry are pins; git, URL, path and workspace
  packages are left out (a warning when direct: no published version to fetch);
- a requirements line is direct unless pip-compile's ``# via`` names only packages;
  a requirement without ``==`` is reported as unpinned; a constraints file (``-c``) pins
  only what a requirements file asks for without a pin;
- input is untrusted: a JSON file at most ``MAX_LOCKFILE_BYTES``, any other at most
  ``MAX_PARSED_BYTES`` (the TOML and YAML parsers hold 10-40 bytes a byte: a realistic
  24 MB pnpm-lock.yaml took 35 s and 1 GB; a line read holds a string a line), at most
  ``MAX_PARSED_VALUES`` values in a TOML or YAML file and ``index_pages.MAX_PAGE_VALUES``
  in a JSON one (counted before parsing: 60 MB of ``[{},{},...`` in TOML took 61 s and
  2 GB), ``MAX_PROJECT_BYTES`` for all the files of a project, ``MAX_REQUIREMENT_LINES``
  lines of a requirements file; a regular
  file inside the project only (a FIFO, a device or a symlink out is refused, never
  opened in a way that blocks); includes at most ``MAX_INCLUDE_DEPTH`` deep and
  ``MAX_REQUIREMENT_FILES`` files, never outside the project; YAML through the safe loader
  (no tags that build objects), and no value of it turned into text unless it is a
  scalar (a YAML alias bomb is shared lists, harmless until something prints one);
  nesting is walked with explicit stacks; a file that does not parse is a warning, not a
  failure; at most ``MAX_WARNINGS`` warnings are listed, quoting at most 200 characters.

Output is deterministic: pins sorted by ecosystem, name and version.
"""

from __future__ import annotations

import json
import os
import re
import stat
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, NamedTuple
from urllib.parse import unquote

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from .package_index import sdist_version

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


class Pin(NamedTuple):
    """One pinned package: PEP 503-normalized name for PyPI, npm's name for npm; the
    files that pin it (project-relative); the index the lockfile names (None: the user's
    configured one); the archive hashes the lockfile lists (``sha256:<hex>``, npm's
    ``sha512-<base64>``), empty when it lists none; ``indexes``: every index the pinning
    files name for it (``index`` first, then requirements' ``--extra-index-url``) and
    ``find_links`` their ``-f`` locations, as the project wrote them: ``index_choice``
    decides whether they may be used."""

    ecosystem: str
    name: str
    version: str
    direct: bool
    sources: tuple[str, ...]
    index: str | None = None  # type: ignore[assignment]  # a field named like tuple.index
    hashes: tuple[str, ...] = ()
    indexes: tuple[str, ...] = ()
    find_links: tuple[str, ...] = ()


class ProjectPins(NamedTuple):
    """The pins (sorted), the warnings (in reading order) and the files read."""

    pins: tuple[Pin, ...]
    warnings: tuple[str, ...]
    files: tuple[str, ...]


class _Locked(NamedTuple):
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


def _elsewhere(ecosystem: str, name: str, direct: bool | None = None) -> _Locked:
    """A locked package that does not come from an index (git, URL, path, workspace)."""
    return _Locked(ecosystem, name, "", direct, from_index=False)


class _Reading:
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
        return _quoted(absolute if relative.startswith("..") else relative)

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
            data = _read_regular(resolved, min(limit, self.budget))
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
        if _value_count(text) > MAX_PARSED_VALUES:
            self.warn(f"{self.rel(path)}: more than {MAX_PARSED_VALUES} values, not parsed")
            return None
        return text

    def toml(self, path: Path) -> dict[str, Any] | None:
        return self._parsed(path, self.parsed_text(path), tomllib.loads,
                            (tomllib.TOMLDecodeError, RecursionError))

    def project_toml(self, name: str) -> dict[str, Any] | None:
        """The project's TOML manifest ``name``; None without the file or when unread."""
        path = self.project / name
        return self.toml(path) if _present(path) else None

    def json(self, path: Path) -> Any:
        from .index_pages import MAX_PAGE_VALUES

        text = self.text(path, MAX_LOCKFILE_BYTES)
        if text is not None and _value_count(text, ",[{") > MAX_PAGE_VALUES:
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
            self.warn(f"{self.rel(path)}: does not parse ({_quoted(str(exc))})")
            return None

    def yaml(self, path: Path, text: str | None = None) -> Any:
        text = self.parsed_text(path, text)
        if text is None:
            return None
        import yaml  # only a project with a YAML lockfile pays for the import

        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # a safe loader
        return self._parsed(path, text, lambda t: yaml.load(t, Loader=loader),  # noqa: S506
                            (yaml.YAMLError, RecursionError))


def _read_regular(path: Path, limit: int) -> bytes | None:
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


def _present(path: Path) -> bool:
    """Whether a lockfile of this name is there to be read (or refused with a reason):
    anything but a folder, a dangling or looping symlink included."""
    return os.path.lexists(path) and not path.is_dir()


def _value_count(text: str, separators: str = ",:=[{\n") -> int:
    """At most how many values a text holds: one more than its ``separators`` (for TOML
    and YAML, their separators and lines; for JSON, commas and opening brackets)."""
    return sum(text.count(c) for c in separators) + 1


def _quoted(text: str, limit: int = 200) -> str:
    """``text`` as a warning quotes it: at most ``limit`` characters."""
    return text if len(text) <= limit else text[:limit] + "..."


def _text(value: object) -> str:
    """A YAML scalar as text ("" for anything else): ``str`` of a list an alias bomb
    shares would be exponential."""
    if isinstance(value, str):
        return value
    return str(value) if isinstance(value, (int, float)) else ""


def _dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def _str(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


# --- Python manifests ------------------------------------------------------------------


def _requirement_name(text: object) -> str | None:
    if not isinstance(text, str):
        return None
    try:
        return canonicalize_name(Requirement(text).name)
    except InvalidRequirement:
        return None


def _pyproject_direct(reading: _Reading) -> set[str] | None:
    """The direct names ``pyproject.toml`` declares (None without the file)."""
    table = reading.project_toml("pyproject.toml")
    if table is None:
        return None
    project = _dict(table.get("project"))
    specs: list[object] = list(_list(project.get("dependencies")))
    for extra in _dict(project.get("optional-dependencies")).values():
        specs += _list(extra)
    tool = _dict(table.get("tool"))
    if reading.dev:
        for group in _dict(table.get("dependency-groups")).values():
            specs += _list(group)
        for group in _dict(_dict(tool.get("pdm")).get("dev-dependencies")).values():
            specs += _list(group)
        specs += _list(_dict(tool.get("uv")).get("dev-dependencies"))
    names = {n for n in map(_requirement_name, specs) if n}
    poetry = _dict(tool.get("poetry"))
    tables = [_dict(poetry.get("dependencies"))]
    if reading.dev:
        tables.append(_dict(poetry.get("dev-dependencies")))
        tables += [_dict(_dict(g).get("dependencies"))
                   for g in _dict(poetry.get("group")).values()]
    for deps in tables:
        names |= {canonicalize_name(k) for k in deps if k.lower() != "python"}
    return names


def _pipfile_direct(reading: _Reading) -> set[str] | None:
    table = reading.project_toml("Pipfile")
    if table is None:
        return None
    sections = ["packages"] + (["dev-packages"] if reading.dev else [])
    return {canonicalize_name(k) for s in sections for k in _dict(table.get(s))}


# --- Python lockfiles ------------------------------------------------------------------

def _uv_lock(doc: dict[str, Any], reading: _Reading) -> Iterator[_Locked]:
    packages = [p for p in _list(doc.get("package")) if isinstance(p, dict)]
    members = {canonicalize_name(m) for m in _list(_dict(doc.get("manifest")).get("members"))
               if isinstance(m, str)}
    local = {canonicalize_name(str(p.get("name"))) for p in packages
             if {"editable", "virtual"} & set(_dict(p.get("source")))} | members
    direct: set[str] = set()
    for package in packages:
        if canonicalize_name(str(package.get("name"))) not in local:
            continue
        groups = [_list(package.get("dependencies"))]
        groups += [_list(g) for g in _dict(package.get("optional-dependencies")).values()]
        if reading.dev:
            groups += [_list(g) for g in _dict(package.get("dev-dependencies")).values()]
        direct |= {canonicalize_name(d["name"]) for g in groups for d in g
                   if isinstance(d, dict) and isinstance(d.get("name"), str)}
    for package in packages:
        name, version = _str(package.get("name")), _str(package.get("version"))
        if name is None or canonicalize_name(name) in local:
            continue
        source = _dict(package.get("source"))
        key = canonicalize_name(name)
        if "registry" not in source or version is None:
            yield _elsewhere(PYPI, key, key in direct)
            continue
        sdist = _dict(package.get("sdist"))
        hashes = (sdist["hash"],) if isinstance(sdist.get("hash"), str) else ()
        yield _Locked(PYPI, key, version, key in direct, _str(source.get("registry")), hashes)


def _sdist_hashes(files: Iterable[object], name: str) -> tuple[str, ...]:
    """The hashes a lockfile lists for the package's source archives."""
    found = []
    for entry in files:
        entry = _dict(entry)
        filename = _str(entry.get("file")) or _str(entry.get("name"))
        if filename is None and _str(entry.get("url")):
            filename = str(entry["url"]).rsplit("/", 1)[-1]
        if filename and sdist_version(filename, name) and isinstance(entry.get("hash"), str):
            found.append(entry["hash"])
    return tuple(found)


def _poetry_lock(doc: dict[str, Any], reading: _Reading) -> Iterator[_Locked]:
    legacy_files = _dict(_dict(doc.get("metadata")).get("files"))
    for package in _list(doc.get("package")):
        package = _dict(package)
        name, version = _str(package.get("name")), _str(package.get("version"))
        if name is None or version is None:
            continue
        source = _dict(package.get("source"))
        kind = _str(source.get("type"))
        if kind not in (None, "legacy"):
            yield _elsewhere(PYPI, canonicalize_name(name))
            continue
        files = _list(package.get("files")) or _list(legacy_files.get(name))
        yield _Locked(PYPI, canonicalize_name(name), version, None,
                      _str(source.get("url")) if kind == "legacy" else None,
                      _sdist_hashes(files, name))


def _python_packages(packages: object, elsewhere: tuple[str, ...],
                     ) -> Iterator[tuple[str, str | None, dict[str, Any]]]:
    """(name, version, entry) of each named entry of a lockfile's package list; version
    None when it names none or a key in ``elsewhere`` says it is not from an index."""
    for package in map(_dict, _list(packages)):
        name, version = _str(package.get("name")), _str(package.get("version"))
        if name is not None:
            yield name, None if any(k in package for k in elsewhere) else version, package


def _pdm_lock(doc: dict[str, Any], reading: _Reading) -> Iterator[_Locked]:
    elsewhere = ("git", "url", "path", "editable")
    for name, version, package in _python_packages(doc.get("package"), elsewhere):
        if version is None:
            yield _elsewhere(PYPI, canonicalize_name(name))
            continue
        yield _Locked(PYPI, canonicalize_name(name), version, None, None,
                      _sdist_hashes(_list(package.get("files")), name))


def _pipfile_lock(doc: dict[str, Any], reading: _Reading) -> Iterator[_Locked]:
    sources = {_str(s.get("name")): _str(s.get("url"))
               for s in map(_dict, _list(_dict(doc.get("_meta")).get("sources")))}
    sections = ["default"] + (["develop"] if reading.dev else [])
    for section in sections:
        for name, entry in _dict(doc.get(section)).items():
            entry = _dict(entry)
            version = _str(entry.get("version"))
            if version is None or not version.startswith("=="):
                yield _elsewhere(PYPI, canonicalize_name(name))
                continue
            hashes = tuple(h for h in _list(entry.get("hashes")) if isinstance(h, str))
            yield _Locked(PYPI, canonicalize_name(name), version.lstrip("="), None,
                          sources.get(_str(entry.get("index"))), hashes)


def _pylock(doc: dict[str, Any], reading: _Reading) -> Iterator[_Locked]:
    elsewhere = ("vcs", "directory", "archive")
    for name, version, package in _python_packages(doc.get("packages"), elsewhere):
        if version is None:
            yield _elsewhere(PYPI, canonicalize_name(name))
            continue
        sdist = _dict(package.get("sdist"))
        hashes = tuple(f"{alg}:{value}" for alg, value in sorted(_dict(sdist.get("hashes")).items())
                       if isinstance(value, str))
        yield _Locked(PYPI, canonicalize_name(name), version, None,
                      _str(package.get("index")), hashes)


# --- requirements files ----------------------------------------------------------------

_OPTION_WITH_VALUE = ("-r", "--requirement", "-c", "--constraint", "-i", "--index-url",
                      "--extra-index-url", "-f", "--find-links", "-e", "--editable")
_PIN = re.compile(r"^(===?)\s*([^\s*,;]+)$")


class _Named(NamedTuple):
    """The locations a requirements file names before a line (pip applies them to the
    whole install): ``-i``, ``--extra-index-url``, ``-f``."""

    index: str | None  # type: ignore[assignment]  # a field named like tuple.index
    extra: tuple[str, ...] = ()
    find_links: tuple[str, ...] = ()


class _ReqLine(NamedTuple):
    file: str
    line: int
    text: str
    via: tuple[str, ...]


def _logical_lines(text: str) -> Iterator[tuple[int, str, list[str]]]:
    """(first line number, joined line, the ``# via`` items after it), each yielded when
    the next one starts (its ``# via`` lines are then known): one held at a time."""
    pending: list[str] = []
    start = 0
    last: tuple[int, str, list[str]] | None = None
    in_via = False
    for number, raw in enumerate(text.splitlines(), 1):
        stripped = raw.strip()
        if not pending and stripped.startswith("#"):
            comment = stripped.lstrip("#").strip()
            if last and comment.startswith("via"):
                in_via = True
                rest = comment[3:].strip()
                if rest:
                    last[2].append(rest)
            elif last and in_via and comment:
                last[2].append(comment)
            continue
        in_via = False
        if not pending:
            start = number
        line = re.sub(r"(^|\s)#.*$", "", raw)
        if line.endswith("\\"):
            pending.append(line[:-1])
            continue
        joined = " ".join(p.strip() for p in [*pending, line]).strip()
        pending = []
        if joined:
            if last is not None:
                yield last
            last = (start, joined, [])
    if last is not None:
        yield last


def _split_options(line: str) -> tuple[str, list[tuple[str, str]]]:
    """The requirement part of a line and its options as (name, value)."""
    tokens = line.split()
    cut = next((i for i, t in enumerate(tokens) if t.startswith("-")), len(tokens))
    requirement = " ".join(tokens[:cut])
    options = []
    rest = tokens[cut:]
    i = 0
    while i < len(rest):
        token = rest[i]
        name, sep, value = token.partition("=")
        if sep and name.startswith("--"):
            options.append((name, value))
        elif token in _OPTION_WITH_VALUE or token == "--hash":
            options.append((token, rest[i + 1] if i + 1 < len(rest) else ""))
            i += 1
        elif token[:2] in ("-r", "-c", "-i", "-f", "-e") and len(token) > 2:
            options.append((token[:2], token[2:]))
        else:
            options.append((token, ""))
        i += 1
    return requirement, options


class _Requirements:
    """Reads requirements files and their includes (depth-first, each file once)."""

    def __init__(self, reading: _Reading) -> None:
        self.reading = reading
        self.seen: set[Path] = set()
        # (line, what its file names before it: -i, --extra-index-url and -f values)
        self.requirements: list[tuple[_ReqLine, _Named]] = []
        self.constraints: list[tuple[_ReqLine, _Named]] = []

    def read(self, path: Path, depth: int = 0, constraint: bool = False) -> None:
        reading = self.reading
        resolved = path.resolve()
        if resolved in self.seen:
            return
        if not resolved.is_relative_to(reading.root):
            reading.warn(f"{reading.shown(path)}: outside the project, not read")
            return
        if depth > MAX_INCLUDE_DEPTH or len(self.seen) >= MAX_REQUIREMENT_FILES:
            reading.warn(f"{reading.rel(path)}: includes nest too deep or too many, not read")
            return
        self.seen.add(resolved)
        text = reading.text(path)
        if text is None:
            return
        rel = reading.rel(path)
        index: str | None = None
        extra: list[str] = []
        links: list[str] = []
        target = self.constraints if constraint else self.requirements
        for count, (number, line, via) in enumerate(_logical_lines(text), 1):
            if count > MAX_REQUIREMENT_LINES:
                reading.warn(f"{rel}: more than {MAX_REQUIREMENT_LINES} requirement lines, "
                             "the rest not read")
                break
            requirement, options = _split_options(line)
            for name, value in options:
                if name in ("-r", "--requirement", "-c", "--constraint"):
                    self._include(path, rel, number, value, depth, name in ("-c", "--constraint"))
                elif name in ("-i", "--index-url"):
                    index = value or index
                elif name == "--extra-index-url" and value:
                    extra.append(value)
                elif name in ("-f", "--find-links") and value:
                    links.append(value)
                elif name in ("-e", "--editable"):
                    reading.warn(f"{rel}:{number}: editable {_quoted(value)} is not pinned to a "
                                 "release")
            if requirement:
                named = _Named(index, tuple(extra), tuple(links))
                target.append((_ReqLine(rel, number, requirement, tuple(via)), named))

    def _include(self, path: Path, rel: str, number: int, value: str, depth: int,
                 constraint: bool) -> None:
        if "://" in value:
            self.reading.warn(f"{rel}:{number}: include {_quoted(value)} is a URL, not read")
            return
        included = path.parent / value
        if not _present(included):
            self.reading.warn(f"{rel}:{number}: include {_quoted(value)} not found")
            return
        self.read(included, depth + 1, constraint)


def _pinned(requirement: Requirement) -> str | None:
    specs = list(requirement.specifier)
    if len(specs) == 1 and specs[0].operator in ("==", "===") and "*" not in specs[0].version:
        return specs[0].version
    return None


def _parse_requirement(line: _ReqLine, reading: _Reading) -> Requirement | None:
    try:
        requirement = Requirement(line.text)
    except InvalidRequirement:
        reading.warn(f"{line.file}:{line.line}: {line.text[:80]} is not a requirement "
                     "doc-index reads (a path or URL?)")
        return None
    if requirement.url:
        reading.warn(f"{line.file}:{line.line}: {_quoted(requirement.name)} comes from a URL, "
                     "not an index")
        return None
    return requirement


def _requirements(reading: _Reading) -> Iterator[tuple[str, _Locked]]:
    files = sorted(reading.project.glob("requirements*.txt"))
    files += sorted((reading.project / "requirements").glob("*.txt"))
    if not files:
        return
    walk = _Requirements(reading)
    for path in files:
        if _present(path):
            walk.read(path)
    constrained: dict[str, tuple[str, _Named]] = {}
    for line, named in walk.constraints:
        requirement = _parse_requirement(line, reading)
        if requirement is not None and _pinned(requirement):
            constrained[canonicalize_name(requirement.name)] = (_pinned(requirement) or "", named)
    for line, named in walk.requirements:
        requirement = _parse_requirement(line, reading)
        if requirement is None:
            continue
        name = canonicalize_name(requirement.name)
        version = _pinned(requirement)
        if version is None and name in constrained:
            version, also = constrained[name]
            named = _Named(also.index or named.index, also.extra + named.extra,
                           also.find_links + named.find_links)
        if version is None:
            reading.warn(f"{line.file}:{line.line}: {line.text[:80]} is not pinned (==)")
            continue
        direct = not line.via or any(v.startswith(("-r", "-e")) for v in line.via)
        yield line.file, _Locked(PYPI, name, version, direct, named.index, (),
                                 extra=named.extra, find_links=named.find_links)


# --- npm -------------------------------------------------------------------------------

_NPM_SECTIONS = ("dependencies", "optionalDependencies")


def _npm_sections(dev: bool) -> tuple[str, ...]:
    return (*_NPM_SECTIONS, "devDependencies") if dev else _NPM_SECTIONS


def _package_json_direct(reading: _Reading) -> dict[str, str] | None:
    """``package.json``'s direct dependencies: name -> range (None without the file),
    kept in ``reading.npm_direct`` for the lockfiles that need the ranges."""
    path = reading.project / "package.json"
    if not _present(path):
        return None
    document = _dict(reading.json(path))
    found: dict[str, str] = {}
    for section in _npm_sections(reading.dev):
        for name, spec in _dict(document.get(section)).items():
            if isinstance(spec, str):
                found.setdefault(name, spec)
    reading.npm_direct = found
    return found


def _registry_of(resolved: str | None, name: str) -> str | None:
    """The registry a tarball URL came from (``https://host/`` before ``name/-/``)."""
    if not resolved:
        return None
    marker = f"/{name}/-/"
    if marker in resolved:
        return resolved.split(marker, 1)[0] + "/"
    return None


def _is_registry_url(resolved: str | None) -> bool:
    return resolved is None or (resolved.startswith(("https://", "http://"))
                                and "/-/" in resolved)


def _package_lock(doc: dict[str, Any], reading: _Reading, file: str) -> Iterator[_Locked]:
    packages = _dict(doc.get("packages"))
    if packages:
        yield from _package_lock_v2(packages, reading, file)
    else:
        yield from _package_lock_v1(_dict(doc.get("dependencies")), reading, file)


def _package_lock_v2(packages: dict[str, Any], reading: _Reading,
                     file: str) -> Iterator[_Locked]:
    direct_by_folder: dict[str, set[str]] = {}
    for key, entry in packages.items():
        if "node_modules/" not in key and not key.startswith("node_modules"):
            entry = _dict(entry)
            direct_by_folder[key] = {n for s in _npm_sections(reading.dev)
                                     for n in _dict(entry.get(s))}
    # workspaces' dependencies are hoisted to the root's node_modules
    hoisted = set().union(*direct_by_folder.values()) if direct_by_folder else set()
    for key, entry in packages.items():
        entry = _dict(entry)
        if "node_modules/" not in key or entry.get("link"):
            continue
        folder, _, alias = key.rpartition("node_modules/")
        name = _str(entry.get("name")) or alias
        version = _str(entry.get("version"))
        folder = folder.rstrip("/")
        direct = alias in (hoisted if folder == "" else direct_by_folder.get(folder, set()))
        resolved = _str(entry.get("resolved"))
        if version is None or not _is_registry_url(resolved):
            yield _elsewhere(NPM, name, direct)
            continue
        integrity = _str(entry.get("integrity"))
        yield _Locked(NPM, name, version, direct, _registry_of(resolved, name),
                      (integrity,) if integrity else ())


def _package_lock_v1(dependencies: dict[str, Any], reading: _Reading,
                     file: str) -> Iterator[_Locked]:
    direct = reading.npm_direct
    stack: list[tuple[dict[str, Any], int]] = [(dependencies, 0)]
    while stack:
        level, depth = stack.pop()
        if depth > MAX_NESTING:
            reading.warn(f"{file}: dependencies nest over {MAX_NESTING} deep, the rest not read")
            continue
        for alias, entry in sorted(level.items()):
            entry = _dict(entry)
            stack.append((_dict(entry.get("dependencies")), depth + 1))
            version = _str(entry.get("version"))
            name = alias
            if version and version.startswith("npm:"):
                name, _, version = version[4:].rpartition("@")
            resolved = _str(entry.get("resolved"))
            if not version or not version[:1].isdigit() or not _is_registry_url(resolved):
                if depth == 0 and alias in direct:
                    yield _elsewhere(NPM, alias, True)
                continue
            integrity = _str(entry.get("integrity"))
            yield _Locked(NPM, name, version, depth == 0 and alias in direct,
                          _registry_of(resolved, name), (integrity,) if integrity else ())


def _pnpm_version(value: object) -> str | None:
    """An importer's version without peer suffixes; None for links and non-registry."""
    if isinstance(value, dict):
        value = value.get("version")
    if not isinstance(value, (str, int, float)):
        return None
    text = str(value).split("(", 1)[0]
    if text.startswith(("link:", "file:", "git", "http")) or ":" in text.split("/")[0]:
        return None
    return text


def _pnpm_key(key: str, major: int) -> tuple[str, str] | None:
    """A ``packages``/``snapshots`` key as (name, version) (5.x ``/name/1.0.0_peer``,
    6.x ``/name@1.0.0(peer)``, 9.x ``name@1.0.0``); None for non-registry keys."""
    key = key.split("(", 1)[0]
    if key.startswith("/"):
        key = key[1:]
    elif major < 9 or ":" in key:
        return None
    if major < 6:
        name, _, version = key.rpartition("/")
        version = version.split("_", 1)[0]
    else:
        at = key.rfind("@")
        if at <= 0:
            return None
        name, version = key[:at], key[at + 1:]
    if not name or not version[:1].isdigit():
        return None
    return name, version


def _pnpm_lock(doc: dict[str, Any], reading: _Reading) -> Iterator[_Locked]:
    try:
        major = int(float(_text(doc.get("lockfileVersion", "5")).strip("'\"")))
    except ValueError:
        major = 5
    importers = _dict(doc.get("importers")) or {".": doc}
    direct: set[tuple[str, str]] = set()
    for importer in importers.values():
        importer = _dict(importer)
        for section in _npm_sections(reading.dev):
            for alias, value in _dict(importer.get(section)).items():
                version = _pnpm_version(value)
                if version is None:
                    continue
                if major < 6:
                    version = version.split("_", 1)[0]  # 5.x peer suffix
                if version.startswith("/"):  # 5.x/6.x: an alias or another registry
                    found = _pnpm_key(version, major)
                elif "@" in version[1:]:  # 9.x: an alias, ``real@1.0.0``
                    found = _pnpm_key("/" + version, 9)
                else:
                    found = (alias, version)
                if found:
                    direct.add(found)
    seen: set[tuple[str, str]] = set()
    for key, entry in _dict(doc.get("packages")).items():
        found = _pnpm_key(_text(key), major)
        if found is None or found in seen:
            continue
        seen.add(found)
        resolution = _dict(_dict(entry).get("resolution"))
        integrity = _str(resolution.get("integrity"))
        if resolution.get("type") in ("git", "directory"):
            continue
        yield _Locked(NPM, found[0], found[1], found in direct, None,
                      (integrity,) if integrity else ())


def _yarn_descriptor(spec: str) -> tuple[str, str]:
    """``name@range`` -> (name, range); the name may be scoped."""
    at = spec.find("@", 1)
    return (spec, "") if at < 0 else (spec[:at], spec[at + 1:])


def _yarn_v1_blocks(text: str) -> Iterator[tuple[list[str], dict[str, str]]]:
    """The classic format: an unindented line of descriptors ending in ``:``, then
    two-space ``key value`` lines (deeper lines: dependency lists, not needed)."""
    descriptors: list[str] | None = None
    fields: dict[str, str] = {}
    for raw in text.splitlines():
        if not raw.strip() or raw.lstrip().startswith("#"):
            continue
        if not raw.startswith(" "):
            if descriptors is not None:
                yield descriptors, fields
            header = raw.rstrip().rstrip(":")
            descriptors = [d.strip().strip('"') for d in header.split(",") if d.strip()]
            fields = {}
        elif raw.startswith("  ") and not raw.startswith("   ") and descriptors is not None:
            key, _, value = raw.strip().partition(" ")
            if value and not key.endswith(":"):
                fields[key.strip('"')] = value.strip().strip('"')
    if descriptors is not None:
        yield descriptors, fields


def _yarn_lock(text: str, reading: _Reading) -> Iterator[_Locked]:
    if re.search(r"(?m)^__metadata:", text):
        yield from _yarn_berry(text, reading)
        return
    wanted = {f"{n}@{r}" for n, r in reading.npm_direct.items()}
    for descriptors, fields in _yarn_v1_blocks(text):
        version, resolved = fields.get("version"), fields.get("resolved")
        if not version or not descriptors:
            continue
        name, spec = _yarn_descriptor(descriptors[0])
        if spec.startswith("npm:"):
            name = _yarn_descriptor(spec[4:])[0]
        if resolved and not _is_registry_url(resolved.split("#", 1)[0]):
            yield _elsewhere(NPM, name, bool(wanted & set(descriptors)))
            continue
        integrity = fields.get("integrity")
        yield _Locked(NPM, name, version, bool(wanted & set(descriptors)),
                      _registry_of(resolved, name), (integrity,) if integrity else ())


def _berry_locator(resolution: str) -> tuple[str, str] | None:
    """A berry resolution as (name, version) when it is an npm package: ``pkg@npm:1.0.0``,
    a peer-dependent copy ``pkg@virtual:<hash>#npm:1.0.0``, a patched one
    ``pkg@patch:pkg@npm%3A1.0.0#...`` (yarn patches typescript by itself)."""
    if "@patch:" in resolution:
        resolution = unquote(resolution.split("@patch:", 1)[1].split("#", 1)[0])
    elif "@virtual:" in resolution and "#npm:" in resolution:
        name, _, rest = resolution.partition("@virtual:")
        resolution = f"{name}@npm:{rest.split('#npm:', 1)[1]}"
    name, sep, version = resolution.rpartition("@npm:")
    if not sep or not name or not version[:1].isdigit():
        return None
    return name, version


def _yarn_berry(text: str, reading: _Reading) -> Iterator[_Locked]:
    doc = _dict(reading.yaml(reading.project / "yarn.lock", text))
    entries: dict[str, dict[str, Any]] = {}
    for key, entry in doc.items():
        if key != "__metadata" and isinstance(entry, dict):
            for descriptor in _text(key).split(","):
                entries[descriptor.strip()] = entry
    wanted = list(reading.npm_direct.items())
    for entry in doc.values():
        if isinstance(entry, dict) and "@workspace:" in _text(entry.get("resolution", "")):
            for section in _npm_sections(reading.dev):
                wanted += [(_text(n), _text(r)) for n, r in _dict(entry.get(section)).items()]
    direct: set[tuple[str, str]] = set()
    for name, spec in wanted:
        target = entries.get(f"{name}@{spec}") or entries.get(f"{name}@npm:{spec}")
        found = _berry_locator(_text(target.get("resolution", ""))) if target else None
        if found:
            direct.add(found)
    seen: set[tuple[str, str]] = set()
    for entry in doc.values():
        found = _berry_locator(_text(_dict(entry).get("resolution", "")))
        if found and found not in seen:
            seen.add(found)
            yield _Locked(NPM, found[0], found[1], found in direct, None, ())


# --- the project -----------------------------------------------------------------------

_PYTHON_LOCKS = (("uv.lock", _uv_lock, "toml"), ("poetry.lock", _poetry_lock, "toml"),
                 ("pdm.lock", _pdm_lock, "toml"), ("Pipfile.lock", _pipfile_lock, "json"))


def _python_locked(reading: _Reading) -> list[tuple[str, _Locked]]:
    found: list[tuple[str, _Locked]] = []
    for name, parse, kind in _PYTHON_LOCKS:
        path = reading.project / name
        if _present(path):
            doc = reading.toml(path) if kind == "toml" else reading.json(path)
            if isinstance(doc, dict):
                found += [(name, e) for e in parse(doc, reading)]
    for path in sorted(reading.project.glob("pylock*.toml")):
        if re.fullmatch(r"pylock(\.[^.]+)?\.toml", path.name) and _present(path):
            doc = reading.toml(path)
            if isinstance(doc, dict):
                found += [(path.name, e) for e in _pylock(doc, reading)]
    return found + list(_requirements(reading))


def _npm_locked(reading: _Reading) -> list[tuple[str, _Locked]]:
    found: list[tuple[str, _Locked]] = []
    for name in ("package-lock.json", "npm-shrinkwrap.json"):
        path = reading.project / name
        if _present(path):
            doc = reading.json(path)
            if isinstance(doc, dict):
                found += [(name, e) for e in _package_lock(doc, reading, name)]
    path = reading.project / "pnpm-lock.yaml"
    if _present(path):
        doc = reading.yaml(path)
        if isinstance(doc, dict):
            found += [("pnpm-lock.yaml", e) for e in _pnpm_lock(doc, reading)]
    path = reading.project / "yarn.lock"
    if _present(path):
        text = reading.text(path)
        if text is not None:
            found += [("yarn.lock", e) for e in _yarn_lock(text, reading)]
    return found


def _merge(locked: list[tuple[str, _Locked]], direct_names: Mapping[str, set[str] | None],
           all_locked: bool, reading: _Reading) -> tuple[Pin, ...]:
    merged: dict[tuple[str, str, str], Pin] = {}
    for file, entry in locked:
        if not entry.from_index:
            names = direct_names.get(entry.ecosystem)
            if entry.direct or (entry.direct is None and names is not None
                                and entry.name in names):
                reading.warn(f"{file}: {_quoted(entry.name)} does not come from an index or "
                             "registry (git, URL or path): no published version to fetch")
            continue
        direct = entry.direct
        if direct is None:
            names = direct_names.get(entry.ecosystem)
            direct = names is not None and entry.name in names
        if not (direct or all_locked):
            continue
        key = (entry.ecosystem, entry.name, entry.version)
        old = merged.get(key)
        named = ((entry.index,) if entry.index else ()) + entry.extra
        if old is None:
            merged[key] = Pin(entry.ecosystem, entry.name, entry.version, direct, (file,),
                              entry.index, entry.hashes, named, entry.find_links)
        else:
            merged[key] = old._replace(
                direct=old.direct or direct,
                sources=tuple(sorted(set(old.sources) | {file})),
                index=old.index or entry.index,
                hashes=tuple(dict.fromkeys(old.hashes + entry.hashes)),
                indexes=tuple(dict.fromkeys(old.indexes + named)),
                find_links=tuple(dict.fromkeys(old.find_links + entry.find_links)))
    pins = tuple(sorted(merged.values(), key=lambda p: (p.ecosystem, p.name, p.version)))
    versions: dict[tuple[str, str], list[str]] = {}
    for pin in pins:
        if pin.direct:
            versions.setdefault((pin.ecosystem, pin.name), []).append(pin.version)
    for (ecosystem, name), found in sorted(versions.items()):
        if len(found) > 1:
            reading.warn(_quoted(f"{ecosystem}:{name} is pinned at {len(found)} versions: "
                                 f"{', '.join(found)}"))
    return pins


def read_project_pins(project: Path, *, all_locked: bool = False,
                      dev: bool = True) -> ProjectPins:
    """The project's pins: direct dependencies only, or every locked package with
    ``all_locked``; ``dev`` counts development dependencies as direct."""
    reading = _Reading(Path(project), dev)
    direct_names: dict[str, set[str] | None] = {}
    python = _pyproject_direct(reading)
    pipfile = _pipfile_direct(reading)
    direct_names[PYPI] = None if python is None and pipfile is None else \
        (python or set()) | (pipfile or set())
    npm = _package_json_direct(reading)
    direct_names[NPM] = None if npm is None else set(npm)
    locked = _python_locked(reading) + _npm_locked(reading)
    pins = _merge(locked, direct_names, all_locked, reading)
    files = tuple(dict.fromkeys(reading.files))
    warnings = list(dict.fromkeys(reading.warnings))
    if reading.more_warnings:
        warnings.append(f"... and {reading.more_warnings} more warnings")
    return ProjectPins(pins, tuple(warnings), files)


__all__ = ["MAX_LOCKFILE_BYTES", "NPM", "PYPI", "Pin", "ProjectPins", "read_project_pins"]
