"""Opening a cache's files: THE one way every reader opens one, each time it reads.

A cache may be changed after it was checked (the server keeps loaded caches warm and
walks a cache's tree once per generation), so nothing found at open time is trusted:

- the open is non-blocking: opening a FIFO for reading would otherwise wait for a writer
  forever (``O_NONBLOCK`` has no effect on a regular file's reads);
- the opened file is ``fstat``-checked to be a regular file before a byte is read: a
  FIFO, socket or device is ``io_error`` (reading one could block or never end), a
  directory ``cache_invalid`` (a file the cache needs is not a file);
- paths are opened relative to the cache directory's handle, one component at a time,
  with ``O_NOFOLLOW`` unless the cache kind's design follows symlinks (Context Engine v0
  caches do, as the reference does).

A missing file or a refused symlink stays an ``OSError`` (``ENOENT``, ``ELOOP``,
``ENOTDIR``): callers tell a cache replaced by a rebuild from a damaged one.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from ..foundation.errors import CacheInvalid, IoError

_READ = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
_CHUNK = 1 << 20


def open_regular(dir_fd: int, relpath: str, *, follow_symlinks: bool = False) -> int:
    """A read-only descriptor on the regular file ``relpath`` below ``dir_fd``.

    ``relpath`` is ``/``-separated; an empty, ``.`` or ``..`` component or a NUL is
    ``cache_invalid``. The caller closes the descriptor.
    """
    parts = relpath.split("/")
    if any(p in ("", ".", "..") for p in parts) or "\0" in relpath:
        raise CacheInvalid(detail=f"bad path in cache: {relpath!r}")
    nofollow = 0 if follow_symlinks else os.O_NOFOLLOW
    current = dir_fd
    try:
        for part in parts[:-1]:
            nxt = os.open(part, _READ | os.O_DIRECTORY | nofollow, dir_fd=current)
            if current != dir_fd:
                os.close(current)
            current = nxt
        try:
            fd = os.open(parts[-1], _READ | nofollow, dir_fd=current)
        except OSError as exc:
            if exc.errno == errno.ENXIO:  # a socket (or a device without its driver)
                raise IoError(detail="special file in cache") from None
            raise
    finally:
        if current != dir_fd:
            os.close(current)
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise CacheInvalid(detail=f"{relpath!r} is a directory")
        if not stat.S_ISREG(mode):
            raise IoError(detail=f"{relpath!r} is a special file")
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_regular(dir_fd: int, relpath: str, *, follow_symlinks: bool = False,
                 max_bytes: int | None = None) -> bytes:
    """The whole content of the regular file ``relpath`` below ``dir_fd`` (see open_regular).

    With ``max_bytes``, a file larger than that is ``cache_invalid`` without being read
    (its size is checked before the first read, and the read stops past the limit)."""
    fd = open_regular(dir_fd, relpath, follow_symlinks=follow_symlinks)
    try:
        if max_bytes is not None and os.fstat(fd).st_size > max_bytes:
            raise CacheInvalid(detail=f"{relpath!r} is over {max_bytes} bytes")
        chunks = []
        total = 0
        while chunk := os.read(fd, _CHUNK):
            chunks.append(chunk)
            total += len(chunk)
            if max_bytes is not None and total > max_bytes:
                raise CacheInvalid(detail=f"{relpath!r} is over {max_bytes} bytes")
        return b"".join(chunks)
    finally:
        os.close(fd)


def swapped(cache_dir: Path, dir_fd: int) -> bool:
    """True when ``cache_dir`` no longer names the directory open as ``dir_fd`` (a rebuild
    swapped in a new generation, or the cache is gone)."""
    try:
        held, live = os.fstat(dir_fd), os.stat(cache_dir)
    except OSError:
        return True
    return (held.st_dev, held.st_ino) != (live.st_dev, live.st_ino)
