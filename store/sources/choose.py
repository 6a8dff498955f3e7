"""A build from any source: the choice between a git source and a local directory.

``build_source`` is what ``doc-index build SOURCE``, the library's ``build`` and the git
hook run: ``pypi:NAME==VERSION`` or ``npm:NAME@VERSION`` is built by ``package``; a URL
(any case of scheme), an scp-like ``user@host:path`` that is no local path, or a bare
repository's directory is built by ``git``; any other directory (a plain folder or
a git work tree, at any depth) by ``local_source``. It prints nothing.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ...foundation.errors import IoError, UsageError
from ...foundation.printable import printable
from ..index_store import BuildReport, IndexStore, Progress
from ..manifest import MAX_RAW_FILE_BYTES
from .walk import DEFAULT_MAX_BYTES

_GIT_PREFIXES = ("http://", "https://", "ssh://", "git://", "file://", "git@")
_SCP_LIKE = re.compile(r"^[\w.-]+@[\w.-]+:")  # user@host:owner/name.git


def looks_like_git(source: str) -> bool:
    """A URL (any case of scheme), or a path to a bare repository (a directory with HEAD
    and objects/)."""
    if source.lower().startswith(_GIT_PREFIXES):
        return True
    path = Path(source)
    if _SCP_LIKE.match(source) and not path.exists():
        return True
    return path.is_dir() and (path / "HEAD").is_file() and (path / "objects").is_dir()


def check_max_bytes(value: int) -> int:
    """The largest file a build indexes: 1 to MAX_RAW_FILE_BYTES (0 or less would skip
    every file; more than a manifest may describe is refused); UsageError otherwise."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise UsageError(f"not an integer: {value!r}")
    if not 1 <= value <= MAX_RAW_FILE_BYTES:
        raise UsageError(f"{value} is out of range: use 1 to {MAX_RAW_FILE_BYTES} bytes")
    return value


def _build_package(store: IndexStore, source: str, *, ref: str | None, subdir: str | None,
                   everything: bool, **options: Any) -> BuildReport:
    """A published package (``package.build_from_package``): its version is in the
    argument and its parts are chosen by the package source, so ``--ref``, ``--subdir``
    and ``--all`` do not apply."""
    for option, value in (("--ref", ref), ("--subdir", subdir), ("--all", everything or None)):
        if value is not None:
            raise UsageError(f"{option} does not apply to a package ({printable(source)}): "
                             "its version is in the argument (pypi:NAME==VERSION, "
                             "npm:NAME@VERSION) and its docs are chosen for it")
    from .package import build_from_package

    return build_from_package(store, source, **options)


def build_source(store: IndexStore, source: str, *, name: str | None = None,
                 ref: str | None = None, full: bool = False, replace: bool = False,
                 max_bytes: int = DEFAULT_MAX_BYTES, progress: Progress | None = None,
                 subdir: str | None = None, everything: bool = False) -> BuildReport:
    """Build or update the cache of ``source`` under ``store``. ``ref``: git URLs and bare
    repositories only (a UsageError for a local folder); ``subdir``/``everything``: which
    files (``docs_folder``; not both)."""
    check_max_bytes(max_bytes)
    if subdir is not None and everything:
        raise UsageError("--subdir and --all choose two different sets of files: give one")
    if source.startswith(("pypi:", "npm:")):
        return _build_package(store, source, name=name, ref=ref, full=full, replace=replace,
                              max_bytes=max_bytes, progress=progress, subdir=subdir,
                              everything=everything)
    if looks_like_git(source):
        from .git import build_from_git

        return build_from_git(store, source, name=name, ref=ref, full=full, replace=replace,
                              max_bytes=max_bytes, progress=progress, subdir=subdir,
                              everything=everything)
    from ...foundation.redact import redact

    directory = Path(source)
    if not directory.is_dir():
        raise IoError(f"not a directory or git repository: {printable(redact(source))}")
    if ref is not None:
        raise UsageError(
            f"--ref applies to a git URL or a bare repository, not to the local folder "
            f"{printable(redact(source))} (it is read as it is on disk): check the ref out "
            "there (git switch), or build the repository's URL with --ref")
    from .directory import build_from_directory

    return build_from_directory(store, directory, name=name, full=full, replace=replace,
                                max_bytes=max_bytes, progress=progress, subdir=subdir,
                                everything=everything)
