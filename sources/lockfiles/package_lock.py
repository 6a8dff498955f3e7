"""``package-lock.json`` and ``npm-shrinkwrap.json`` (npm; lockfile versions 1-3): the
root's (and workspaces') dependencies are direct; registry tarballs are pins, with their
integrity; links, git and file packages are not."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .reading import (
    MAX_NESTING,
    NPM,
    Locked,
    LockfileFormat,
    Reading,
    as_dict,
    as_str,
    is_registry_url,
    not_from_index,
    npm_sections,
    read_document,
    registry_of,
)


def _package_lock(doc: dict[str, Any], reading: Reading, file: str) -> Iterator[Locked]:
    packages = as_dict(doc.get("packages"))
    if packages:
        yield from _package_lock_v2(packages, reading, file)
    else:
        yield from _package_lock_v1(as_dict(doc.get("dependencies")), reading, file)


def _package_lock_v2(packages: dict[str, Any], reading: Reading,
                     file: str) -> Iterator[Locked]:
    direct_by_folder: dict[str, set[str]] = {}
    for key, entry in packages.items():
        if "node_modules/" not in key and not key.startswith("node_modules"):
            entry = as_dict(entry)
            direct_by_folder[key] = {n for s in npm_sections(reading.dev)
                                     for n in as_dict(entry.get(s))}
    # workspaces' dependencies are hoisted to the root's node_modules
    hoisted = set().union(*direct_by_folder.values()) if direct_by_folder else set()
    for key, entry in packages.items():
        entry = as_dict(entry)
        if "node_modules/" not in key or entry.get("link"):
            continue
        folder, _, alias = key.rpartition("node_modules/")
        name = as_str(entry.get("name")) or alias
        version = as_str(entry.get("version"))
        folder = folder.rstrip("/")
        direct = alias in (hoisted if folder == "" else direct_by_folder.get(folder, set()))
        resolved = as_str(entry.get("resolved"))
        if version is None or not is_registry_url(resolved):
            yield not_from_index(NPM, name, direct)
            continue
        integrity = as_str(entry.get("integrity"))
        yield Locked(NPM, name, version, direct, registry_of(resolved, name),
                      (integrity,) if integrity else ())


def _package_lock_v1(dependencies: dict[str, Any], reading: Reading,
                     file: str) -> Iterator[Locked]:
    direct = reading.npm_direct
    stack: list[tuple[dict[str, Any], int]] = [(dependencies, 0)]
    while stack:
        level, depth = stack.pop()
        if depth > MAX_NESTING:
            reading.warn(f"{file}: dependencies nest over {MAX_NESTING} deep, the rest not read")
            continue
        for alias, entry in sorted(level.items()):
            entry = as_dict(entry)
            stack.append((as_dict(entry.get("dependencies")), depth + 1))
            version = as_str(entry.get("version"))
            name = alias
            if version and version.startswith("npm:"):
                name, _, version = version[4:].rpartition("@")
            resolved = as_str(entry.get("resolved"))
            if not version or not version[:1].isdigit() or not is_registry_url(resolved):
                if depth == 0 and alias in direct:
                    yield not_from_index(NPM, alias, True)
                continue
            integrity = as_str(entry.get("integrity"))
            yield Locked(NPM, name, version, depth == 0 and alias in direct,
                          registry_of(resolved, name), (integrity,) if integrity else ())


def _locked(reading: Reading) -> list[tuple[str, Locked]]:
    found: list[tuple[str, Locked]] = []
    for name in ("package-lock.json", "npm-shrinkwrap.json"):
        doc = read_document(reading, name, "json")
        if doc is not None:
            found += [(name, e) for e in _package_lock(doc, reading, name)]
    return found


LOCKFILE = LockfileFormat("package-lock.json, npm-shrinkwrap.json", NPM, 110, _locked)
