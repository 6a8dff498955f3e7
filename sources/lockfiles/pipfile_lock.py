"""``Pipfile.lock`` (Pipenv): ``default`` (and ``develop`` with development dependencies)
entries pinned with ``==`` are pins, with the index their ``index`` names."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from packaging.utils import canonicalize_name

from .reading import (
    PYPI,
    Locked,
    LockfileFormat,
    Reading,
    as_dict,
    as_list,
    as_str,
    not_from_index,
    read_document,
)


def _pipfile_lock(doc: dict[str, Any], reading: Reading) -> Iterator[Locked]:
    sources = {as_str(s.get("name")): as_str(s.get("url"))
               for s in map(as_dict, as_list(as_dict(doc.get("_meta")).get("sources")))}
    sections = ["default"] + (["develop"] if reading.dev else [])
    for section in sections:
        for name, entry in as_dict(doc.get(section)).items():
            entry = as_dict(entry)
            version = as_str(entry.get("version"))
            if version is None or not version.startswith("=="):
                yield not_from_index(PYPI, canonicalize_name(name))
                continue
            hashes = tuple(h for h in as_list(entry.get("hashes")) if isinstance(h, str))
            yield Locked(PYPI, canonicalize_name(name), version.lstrip("="), None,
                          sources.get(as_str(entry.get("index"))), hashes)


def _locked(reading: Reading) -> list[tuple[str, Locked]]:
    doc = read_document(reading, "Pipfile.lock", "json")
    return [] if doc is None else [("Pipfile.lock", e) for e in _pipfile_lock(doc, reading)]


LOCKFILE = LockfileFormat("Pipfile.lock", PYPI, 40, _locked)
