"""Crash-safe, reader-safe replacement of a cache directory.

A build writes the new cache into a staging directory under ``<root>/.doc-index-tmp/``
(same filesystem, never listed as a cache), then swaps it with the live directory in one
``renameat2(RENAME_EXCHANGE)`` call. A ``kill -9`` before the swap leaves the old cache
untouched (the staging leftovers are removed by the next build); after it, the new one
is complete. Readers open the cache directory once and read every file relative to that
handle, so they see one generation or the other, never a mix.
"""

from __future__ import annotations

import errno
import os
import secrets
import shutil
from pathlib import Path

STAGING_DIR = ".doc-index-tmp"
_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def staging_root(root: Path) -> Path:
    return root / STAGING_DIR


def new_staging_dir(root: Path, key: str) -> Path:
    area = staging_root(root)
    area.mkdir(parents=True, exist_ok=True)
    path = area / f"{key}.{os.getpid()}.{secrets.token_hex(4)}"
    path.mkdir()
    return path


def clean_staging(root: Path, key: str) -> None:
    """Remove what killed builds of ``key`` left behind (call with the build lock held)."""
    area = staging_root(root)
    if not area.is_dir():
        return
    for entry in area.iterdir():
        if entry.name.startswith(key + "."):
            shutil.rmtree(entry, ignore_errors=True)
    try:
        area.rmdir()
    except OSError:
        pass


def _renameat2_exchange(a: Path, b: Path) -> bool:
    """Atomically exchange two paths; False when the platform cannot."""
    import ctypes
    import ctypes.util

    libc_name = ctypes.util.find_library("c")
    if not libc_name:
        return False
    libc = ctypes.CDLL(libc_name, use_errno=True)
    fn = getattr(libc, "renameat2", None)
    if fn is None:
        return False
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    rc = fn(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE)
    if rc == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
        return False
    raise OSError(err, os.strerror(err), str(b))


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def commit(staging: Path, live: Path) -> None:
    """Make ``staging`` the live cache directory, atomically, and drop the old one."""
    fsync_dir(staging)
    if not os.path.lexists(live):
        os.rename(staging, live)
    elif _renameat2_exchange(staging, live):
        pass  # staging now holds the previous generation
    else:
        # No atomic exchange on this platform: a short window without a live cache.
        old = staging.with_name(staging.name + ".old")
        os.rename(live, old)
        os.rename(staging, live)
        staging = old
    fsync_dir(live.parent)
    shutil.rmtree(staging, ignore_errors=True)
