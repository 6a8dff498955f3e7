"""``yarn.lock``, classic (v1, read line by line) and berry (YAML with ``__metadata``):
``package.json``'s (and berry's workspaces') dependencies are direct; npm packages are
pins (classic: with their integrity), patched and peer-dependent copies as the package."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import unquote

from .reading import (
    NPM,
    Locked,
    LockfileFormat,
    Reading,
    as_dict,
    is_registry_url,
    not_from_index,
    npm_sections,
    present,
    registry_of,
    scalar_text,
)


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


def _yarn_lock(text: str, reading: Reading) -> Iterator[Locked]:
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
        if resolved and not is_registry_url(resolved.split("#", 1)[0]):
            yield not_from_index(NPM, name, bool(wanted & set(descriptors)))
            continue
        integrity = fields.get("integrity")
        yield Locked(NPM, name, version, bool(wanted & set(descriptors)),
                      registry_of(resolved, name), (integrity,) if integrity else ())


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


def _yarn_berry(text: str, reading: Reading) -> Iterator[Locked]:
    doc = as_dict(reading.yaml(reading.project / "yarn.lock", text))
    entries: dict[str, dict[str, Any]] = {}
    for key, entry in doc.items():
        if key != "__metadata" and isinstance(entry, dict):
            for descriptor in scalar_text(key).split(","):
                entries[descriptor.strip()] = entry
    wanted = list(reading.npm_direct.items())
    for entry in doc.values():
        if isinstance(entry, dict) and "@workspace:" in scalar_text(entry.get("resolution", "")):
            for section in npm_sections(reading.dev):
                wanted += [(scalar_text(n), scalar_text(r))
                           for n, r in as_dict(entry.get(section)).items()]
    direct: set[tuple[str, str]] = set()
    for name, spec in wanted:
        target = entries.get(f"{name}@{spec}") or entries.get(f"{name}@npm:{spec}")
        found = _berry_locator(scalar_text(target.get("resolution", ""))) if target else None
        if found:
            direct.add(found)
    seen: set[tuple[str, str]] = set()
    for entry in doc.values():
        found = _berry_locator(scalar_text(as_dict(entry).get("resolution", "")))
        if found and found not in seen:
            seen.add(found)
            yield Locked(NPM, found[0], found[1], found in direct, None, ())


def _locked(reading: Reading) -> list[tuple[str, Locked]]:
    path = reading.project / "yarn.lock"
    if not present(path):
        return []
    text = reading.text(path)
    return [] if text is None else [("yarn.lock", e) for e in _yarn_lock(text, reading)]


LOCKFILE = LockfileFormat("yarn.lock", NPM, 130, _locked)
