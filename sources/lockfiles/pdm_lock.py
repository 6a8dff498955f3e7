"""``pdm.lock`` (PDM): packages that are not git, URL, path or editable ones are pins,
with their sdists' hashes."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from packaging.utils import canonicalize_name

from .reading import (
    PYPI,
    Locked,
    LockfileFormat,
    Reading,
    as_list,
    not_from_index,
    python_packages,
    read_document,
    sdist_hashes,
)


def _pdm_lock(doc: dict[str, Any], reading: Reading) -> Iterator[Locked]:
    elsewhere = ("git", "url", "path", "editable")
    for name, version, package in python_packages(doc.get("package"), elsewhere):
        if version is None:
            yield not_from_index(PYPI, canonicalize_name(name))
            continue
        yield Locked(PYPI, canonicalize_name(name), version, None, None,
                      sdist_hashes(as_list(package.get("files")), name))


def _locked(reading: Reading) -> list[tuple[str, Locked]]:
    doc = read_document(reading, "pdm.lock", "toml")
    return [] if doc is None else [("pdm.lock", e) for e in _pdm_lock(doc, reading)]


LOCKFILE = LockfileFormat("pdm.lock", PYPI, 30, _locked)
