"""``pnpm-lock.yaml`` (pnpm 5.x-9.x): the importers' dependencies are direct; registry
packages are pins, with their integrity; git and directory ones are not."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .reading import (
    NPM,
    Locked,
    LockfileFormat,
    Reading,
    as_dict,
    as_str,
    npm_sections,
    read_document,
    scalar_text,
)


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


def _pnpm_lock(doc: dict[str, Any], reading: Reading) -> Iterator[Locked]:
    try:
        major = int(float(scalar_text(doc.get("lockfileVersion", "5")).strip("'\"")))
    except ValueError:
        major = 5
    importers = as_dict(doc.get("importers")) or {".": doc}
    direct: set[tuple[str, str]] = set()
    for importer in importers.values():
        importer = as_dict(importer)
        for section in npm_sections(reading.dev):
            for alias, value in as_dict(importer.get(section)).items():
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
    for key, entry in as_dict(doc.get("packages")).items():
        found = _pnpm_key(scalar_text(key), major)
        if found is None or found in seen:
            continue
        seen.add(found)
        resolution = as_dict(as_dict(entry).get("resolution"))
        integrity = as_str(resolution.get("integrity"))
        if resolution.get("type") in ("git", "directory"):
            continue
        yield Locked(NPM, found[0], found[1], found in direct, None,
                      (integrity,) if integrity else ())


def _locked(reading: Reading) -> list[tuple[str, Locked]]:
    doc = read_document(reading, "pnpm-lock.yaml", "yaml")
    return [] if doc is None else [("pnpm-lock.yaml", e) for e in _pnpm_lock(doc, reading)]


LOCKFILE = LockfileFormat("pnpm-lock.yaml", NPM, 120, _locked)
