"""A registry of one module an entry: the modules of a package that declare an entry.

Formats (``indexer/formats/``), include forms (``indexer/include_forms/``) and lockfile
formats are registries in markdown-it-py's shape, a rule list of one file a rule: adding
one is adding its module (and its test), nothing else to edit.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from importlib import import_module
from typing import TypeVar

T = TypeVar("T")


def declared(package: str, folders: Iterable[str], attribute: str, kind: type[T]) -> list[T]:
    """The ``attribute`` of every module of ``package`` (whose folders are ``folders``,
    its ``__path__``) that declares one of type ``kind``, in module name order. The folder
    is listed, not ``pkgutil.iter_modules``: that imports ``inspect`` (15 ms), which a
    build that parses nothing does not import (tests/test_import_rules.py)."""
    names = {entry.name[:-3] for folder in folders for entry in os.scandir(folder)
             if entry.name.endswith(".py") and not entry.name.startswith("_")}
    found: list[T] = []
    for name in sorted(names):
        entry = getattr(import_module(f"{package}.{name}"), attribute, None)
        if isinstance(entry, kind):
            found.append(entry)
    return found
