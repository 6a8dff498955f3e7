"""``uv.lock`` (uv): the workspace members' and editable/virtual packages' dependencies
are the direct ones; packages from a registry are pins, with their sdist's hash."""

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


def _uv_lock(doc: dict[str, Any], reading: Reading) -> Iterator[Locked]:
    packages = [p for p in as_list(doc.get("package")) if isinstance(p, dict)]
    members = {canonicalize_name(m) for m in as_list(as_dict(doc.get("manifest")).get("members"))
               if isinstance(m, str)}
    local = {canonicalize_name(str(p.get("name"))) for p in packages
             if {"editable", "virtual"} & set(as_dict(p.get("source")))} | members
    direct: set[str] = set()
    for package in packages:
        if canonicalize_name(str(package.get("name"))) not in local:
            continue
        groups = [as_list(package.get("dependencies"))]
        groups += [as_list(g) for g in as_dict(package.get("optional-dependencies")).values()]
        if reading.dev:
            groups += [as_list(g) for g in as_dict(package.get("dev-dependencies")).values()]
        direct |= {canonicalize_name(d["name"]) for g in groups for d in g
                   if isinstance(d, dict) and isinstance(d.get("name"), str)}
    for package in packages:
        name, version = as_str(package.get("name")), as_str(package.get("version"))
        if name is None or canonicalize_name(name) in local:
            continue
        source = as_dict(package.get("source"))
        key = canonicalize_name(name)
        if "registry" not in source or version is None:
            yield not_from_index(PYPI, key, key in direct)
            continue
        sdist = as_dict(package.get("sdist"))
        hashes = (sdist["hash"],) if isinstance(sdist.get("hash"), str) else ()
        yield Locked(PYPI, key, version, key in direct, as_str(source.get("registry")), hashes)


def _locked(reading: Reading) -> list[tuple[str, Locked]]:
    doc = read_document(reading, "uv.lock", "toml")
    return [] if doc is None else [("uv.lock", e) for e in _uv_lock(doc, reading)]


LOCKFILE = LockfileFormat("uv.lock", PYPI, 10, _locked)
