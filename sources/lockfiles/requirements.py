"""``requirements*.txt`` and ``requirements/*.txt`` (pip): ``==`` or ``===`` pins;
``-r``/``-c`` includes relative to the file and inside the project (depth-first, each file
once, at most ``MAX_INCLUDE_DEPTH`` deep and ``MAX_REQUIREMENT_FILES`` files); hashes and
markers tolerated; a line is direct unless pip-compile's ``# via`` names only packages; a
requirement without ``==`` is reported as unpinned; a constraints file (``-c``) pins only
what a requirements file asks for without a pin; ``-i``, ``--extra-index-url`` and ``-f``
are kept with the pins they apply to."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from .reading import (
    MAX_INCLUDE_DEPTH,
    MAX_REQUIREMENT_FILES,
    MAX_REQUIREMENT_LINES,
    PYPI,
    Locked,
    LockfileFormat,
    Reading,
    present,
    quoted,
)

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

    def __init__(self, reading: Reading) -> None:
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
                    reading.warn(f"{rel}:{number}: editable {quoted(value)} is not pinned to a "
                                 "release")
            if requirement:
                named = _Named(index, tuple(extra), tuple(links))
                target.append((_ReqLine(rel, number, requirement, tuple(via)), named))

    def _include(self, path: Path, rel: str, number: int, value: str, depth: int,
                 constraint: bool) -> None:
        if "://" in value:
            self.reading.warn(f"{rel}:{number}: include {quoted(value)} is a URL, not read")
            return
        included = path.parent / value
        if not present(included):
            self.reading.warn(f"{rel}:{number}: include {quoted(value)} not found")
            return
        self.read(included, depth + 1, constraint)


def _pinned(requirement: Requirement) -> str | None:
    specs = list(requirement.specifier)
    if len(specs) == 1 and specs[0].operator in ("==", "===") and "*" not in specs[0].version:
        return specs[0].version
    return None


def _parse_requirement(line: _ReqLine, reading: Reading) -> Requirement | None:
    try:
        requirement = Requirement(line.text)
    except InvalidRequirement:
        reading.warn(f"{line.file}:{line.line}: {line.text[:80]} is not a requirement "
                     "doc-index reads (a path or URL?)")
        return None
    if requirement.url:
        reading.warn(f"{line.file}:{line.line}: {quoted(requirement.name)} comes from a URL, "
                     "not an index")
        return None
    return requirement


def _requirements(reading: Reading) -> Iterator[tuple[str, Locked]]:
    files = sorted(reading.project.glob("requirements*.txt"))
    files += sorted((reading.project / "requirements").glob("*.txt"))
    if not files:
        return
    walk = _Requirements(reading)
    for path in files:
        if present(path):
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
        yield line.file, Locked(PYPI, name, version, direct, named.index, (),
                                 extra=named.extra, find_links=named.find_links)


def _locked(reading: Reading) -> list[tuple[str, Locked]]:
    return list(_requirements(reading))


LOCKFILE = LockfileFormat("requirements*.txt, requirements/*.txt", PYPI, 60, _locked)
