"""``poetry.lock`` (Poetry): packages from PyPI or a legacy source are pins, with their
sdists' hashes (the old ``[metadata.files]`` table too); git, URL and path ones are not."""

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
    sdist_hashes,
)


def _poetry_lock(doc: dict[str, Any], reading: Reading) -> Iterator[Locked]:
    legacy_files = as_dict(as_dict(doc.get("metadata")).get("files"))
    for package in as_list(doc.get("package")):
        package = as_dict(package)
        name, version = as_str(package.get("name")), as_str(package.get("version"))
        if name is None or version is None:
            continue
        source = as_dict(package.get("source"))
        kind = as_str(source.get("type"))
        if kind not in (None, "legacy"):
            yield not_from_index(PYPI, canonicalize_name(name))
            continue
        files = as_list(package.get("files")) or as_list(legacy_files.get(name))
        yield Locked(PYPI, canonicalize_name(name), version, None,
                      as_str(source.get("url")) if kind == "legacy" else None,
                      sdist_hashes(files, name))


def _locked(reading: Reading) -> list[tuple[str, Locked]]:
    doc = read_document(reading, "poetry.lock", "toml")
    return [] if doc is None else [("poetry.lock", e) for e in _poetry_lock(doc, reading)]


LOCKFILE = LockfileFormat("poetry.lock", PYPI, 20, _locked)
