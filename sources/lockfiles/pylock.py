"""``pylock.toml`` and ``pylock.<name>.toml`` (PEP 751): packages that are not VCS,
directory or archive ones are pins, with their sdist's hashes and index."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from packaging.utils import canonicalize_name

from .reading import (
    PYPI,
    Locked,
    LockfileFormat,
    Reading,
    as_dict,
    as_str,
    not_from_index,
    present,
    python_packages,
)


def _pylock(doc: dict[str, Any], reading: Reading) -> Iterator[Locked]:
    elsewhere = ("vcs", "directory", "archive")
    for name, version, package in python_packages(doc.get("packages"), elsewhere):
        if version is None:
            yield not_from_index(PYPI, canonicalize_name(name))
            continue
        sdist = as_dict(package.get("sdist"))
        hashes = tuple(f"{alg}:{value}"
                       for alg, value in sorted(as_dict(sdist.get("hashes")).items())
                       if isinstance(value, str))
        yield Locked(PYPI, canonicalize_name(name), version, None,
                      as_str(package.get("index")), hashes)


def _locked(reading: Reading) -> list[tuple[str, Locked]]:
    found: list[tuple[str, Locked]] = []
    for path in sorted(reading.project.glob("pylock*.toml")):
        if re.fullmatch(r"pylock(\.[^.]+)?\.toml", path.name) and present(path):
            doc = reading.toml(path)
            if isinstance(doc, dict):
                found += [(path.name, e) for e in _pylock(doc, reading)]
    return found


LOCKFILE = LockfileFormat("pylock.toml (pylock.*.toml)", PYPI, 50, _locked)
