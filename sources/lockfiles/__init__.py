"""A project's pinned dependencies, read as data from its lockfiles and manifests.

The lockfile formats are a registry, one module of this package each, declaring
``LOCKFILE`` (a :class:`~.reading.LockfileFormat`): Python: ``uv.lock``, ``pylock.toml``
(and ``pylock.*.toml``, PEP 751), ``poetry.lock``, ``pdm.lock``, ``Pipfile.lock``,
``requirements*.txt`` and ``requirements/*.txt``; npm: ``package-lock.json`` (and
``npm-shrinkwrap.json``, lockfile versions 1-3), ``pnpm-lock.yaml`` (5.x-9.x),
``yarn.lock`` (classic v1 and berry). Each reads its files through ``reading.Reading``,
which holds every bound on untrusted input (its module text says them). Direct
dependencies come from the lockfile where it says (uv.lock's workspace members,
package-lock's root, pnpm's importers, yarn berry's workspaces), else from the manifests
(``manifests``: ``pyproject.toml``, ``Pipfile``, ``package.json``).

Decisions:
- every lockfile found is read and their pins merged: the same name and version pinned by
  two files is one pin (``sources`` names both); two versions of one name are two pins
  (and a warning), each can have its cache;
- development dependencies count as direct (``dev=True``, the default): the agent edits
  the project's tests and tooling too; peer dependencies do not (the host provides them);
- only packages from an index or registry are pins; git, URL, path and workspace
  packages are left out (a warning when direct: no published version to fetch).

Output is deterministic: pins sorted by ecosystem, name and version; the formats read in
their ``order`` (Python's, then npm's), so the warnings and the files read keep it.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple

from ...indexer.registry import declared
from .manifests import package_json_direct, pipfile_direct, pyproject_direct
from .reading import (
    MAX_LOCKFILE_BYTES,
    NPM,
    PYPI,
    Locked,
    LockfileFormat,
    Reading,
    quoted,
)


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


# Read in ``order`` (then module name): the order the warnings and the files read keep.
LOCKFILES = tuple(sorted(declared(__name__, __path__, "LOCKFILE", LockfileFormat),
                         key=lambda lockfile: (lockfile.order, lockfile.files)))


def _merge(locked: list[tuple[str, Locked]], direct_names: Mapping[str, set[str] | None],
           all_locked: bool, reading: Reading) -> tuple[Pin, ...]:
    merged: dict[tuple[str, str, str], Pin] = {}
    for file, entry in locked:
        if not entry.from_index:
            names = direct_names.get(entry.ecosystem)
            if entry.direct or (entry.direct is None and names is not None
                                and entry.name in names):
                reading.warn(f"{file}: {quoted(entry.name)} does not come from an index or "
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
            reading.warn(quoted(f"{ecosystem}:{name} is pinned at {len(found)} versions: "
                                 f"{', '.join(found)}"))
    return pins


def read_project_pins(project: Path, *, all_locked: bool = False,
                      dev: bool = True) -> ProjectPins:
    """The project's pins: direct dependencies only, or every locked package with
    ``all_locked``; ``dev`` counts development dependencies as direct."""
    reading = Reading(Path(project), dev)
    direct_names: dict[str, set[str] | None] = {}
    python = pyproject_direct(reading)
    pipfile = pipfile_direct(reading)
    direct_names[PYPI] = None if python is None and pipfile is None else \
        (python or set()) | (pipfile or set())
    npm = package_json_direct(reading)
    direct_names[NPM] = None if npm is None else set(npm)
    locked = [found for lockfile in LOCKFILES for found in lockfile.locked(reading)]
    pins = _merge(locked, direct_names, all_locked, reading)
    files = tuple(dict.fromkeys(reading.files))
    warnings = list(dict.fromkeys(reading.warnings))
    if reading.more_warnings:
        warnings.append(f"... and {reading.more_warnings} more warnings")
    return ProjectPins(pins, tuple(warnings), files)


__all__ = ["LOCKFILES", "MAX_LOCKFILE_BYTES", "NPM", "PYPI", "Pin", "ProjectPins",
           "read_project_pins"]
