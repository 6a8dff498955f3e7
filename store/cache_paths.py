"""Cache names -> cache directories under a root, refusing anything that leaves the root.

A caller (an MCP client, ``doc-index resolve NAME``) names a cache; only the root is
configured by the operator. :func:`resolve_cache_name` turns the name into the real path
of a directory strictly inside the root, or raises ``CacheMissing()``:

- the name must be one path component: not empty, not ``.`` or ``..``, not the store's
  staging area ``.doc-index-tmp``, no ``/`` or ``\\``
  (so no leading separator, no absolute path, no ``..`` component), no NUL or other
  control character, and valid UTF-8 (no lone surrogates);
- the joined path is resolved with every symlink followed; the result must lie strictly
  inside the resolved root (a symlink elsewhere inside the root is fine) and be a directory;
- with ``verify_tree`` (the default) every entry of the cache directory is checked too:
  a symlink anywhere in the tree must resolve inside the root, and a regular file must
  have exactly one hard link: a second link may be a name outside the root (a file
  smuggled in), and the store never makes hard links (it copies unchanged raw files into
  a new generation). File types are not judged here: the walk runs once per cache
  generation, so a FIFO or device swapped in later would pass it; every read opens its
  file with ``cache_files.open_regular``, which refuses anything but a regular file.

Paths outside the root are never opened: symlink targets are only compared as strings,
so the error code does not depend on what exists outside the root. A permission error
on a path inside the root is ``io_error``; anything else that prevents resolution is
``cache_missing``.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from ..foundation.cache_names import name_problem
from ..foundation.errors import CacheMissing, ContextError, IoError

_IO_ERRNOS = frozenset({errno.EACCES, errno.EPERM, errno.EIO})


def resolve_cache_name(root: Path, name: str, *, verify_tree: bool = True) -> Path:
    """The real path of cache ``name`` under ``root``; CacheMissing() otherwise.

    ``verify_tree=False`` skips the walk of the cache's tree, for a caller that runs
    :func:`verify_cache_tree` itself (the MCP server does it once per cache generation).
    """
    check_cache_name(name)
    root_real = real_root(root)
    real = os.path.realpath(os.path.join(root_real, name))
    if not is_inside(root_real, real):
        raise CacheMissing(detail="cache name resolves outside the root")
    st = _stat_inside(real)
    if not stat.S_ISDIR(st.st_mode):
        raise CacheMissing(detail="cache is not a directory")
    if verify_tree:
        verify_cache_tree(root_real, real)
    return Path(real)


def check_cache_name(name: object) -> str:
    """``name`` if it is an acceptable cache name (``store.cache_names``); cache_missing
    otherwise."""
    problem = name_problem(name)
    if problem is not None:
        raise CacheMissing(detail=problem)
    return name  # type: ignore[return-value]  # name_problem refuses any non-str


def is_inside(root_real: str, path: str) -> bool:
    """True when ``path`` (already resolved) lies strictly below ``root_real``."""
    prefix = root_real if root_real.endswith(os.sep) else root_real + os.sep
    return path.startswith(prefix) and len(path) > len(prefix)


def verify_cache_tree(root_real: str, cache_real: str) -> None:
    """Refuse a cache whose tree links outside the root (symlinks, hard links)."""
    seen: set[str] = set()
    pending = [cache_real]
    while pending:
        directory = pending.pop()
        if directory in seen:
            continue
        seen.add(directory)
        try:
            entries = list(os.scandir(directory))
        except OSError as exc:
            raise _os_error(exc) from None
        for entry in entries:
            pending.extend(_check_entry(root_real, entry))


def _check_entry(root_real: str, entry: os.DirEntry[str]) -> list[str]:
    """Check one tree entry; return the directories still to walk below it."""
    try:
        if entry.is_symlink():
            target = os.path.realpath(entry.path)
            if not is_inside(root_real, target):
                raise CacheMissing(detail="symlink in cache leaves the root")
            try:
                st = os.stat(target)
            except OSError:
                return []  # dangling or looping inside the root: reading it fails, leaks nothing
            if stat.S_ISDIR(st.st_mode):
                return [target]
            _check_links(st)
            return []
        st = entry.stat(follow_symlinks=False)
    except OSError as exc:
        raise _os_error(exc) from None
    if stat.S_ISDIR(st.st_mode):
        return [entry.path]
    _check_links(st)
    return []


def _check_links(st: os.stat_result) -> None:
    if stat.S_ISREG(st.st_mode) and st.st_nlink > 1:
        raise CacheMissing(detail="hard-linked file in cache")


def real_root(root: Path) -> str:
    """The resolved root directory; cache_missing if it is not a directory."""
    try:
        real = os.path.realpath(os.fspath(root))
    except ValueError:  # NUL in the configured root
        raise CacheMissing(detail="invalid root") from None
    st = _stat_inside(real)
    if not stat.S_ISDIR(st.st_mode):
        raise CacheMissing(detail="root is not a directory")
    return real


def _stat_inside(path: str) -> os.stat_result:
    try:
        return os.stat(path)
    except OSError as exc:
        raise _os_error(exc) from None
    except ValueError:  # embedded NUL from the root itself
        raise CacheMissing(detail="invalid path") from None


def _os_error(exc: OSError) -> ContextError:
    if exc.errno in _IO_ERRNOS:
        return IoError(detail=exc.strerror)
    return CacheMissing(detail=exc.strerror)
