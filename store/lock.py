"""Build locks: ``flock`` on a lock file; builds that take the same lock serialize.

``BuildLock`` locks a file that stays (the hook's and a clone's lock, in a git directory).
``CacheLock`` is a cache's build lock, ``<root>/.doc-index-tmp/<key>/lock`` (see
``store.commit``): it exists only while a build holds or waits for it, so no lock stays
between builds and deleting a cache leaves none behind. Whoever holds a lock may unlink
it; a waiter that then gets the unlinked file notices (the name no longer leads to the
file it locked) and starts over.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from types import TracebackType

from ..foundation.file_lock import BuildLock
from . import commit


class CacheLock(BuildLock):
    """The build lock of cache ``key`` under ``root``: ``<root>/.doc-index-tmp/<key>/lock``,
    opened below the checked staging area (``commit.KeyArea``) and removed, with the
    cache's emptied staging directory, when the holder is done. A ``<key>.lock`` file that
    doc-index versions before this layout left in the root is removed once the lock is
    held (only a regular file: a cache named ``<key>.lock`` is a directory)."""

    def __init__(self, root: Path, key: str, timeout: float = 600.0) -> None:
        super().__init__(commit.key_area(root, key) / commit.LOCK_NAME, timeout)
        self.root = root
        self.key = key

    def _open(self) -> int:
        while True:
            try:
                with commit.KeyArea(self.root, self.key, create=True) as area:
                    fd = os.open(commit.LOCK_NAME, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW,
                                 0o644, dir_fd=area.fd)
                break
            except FileNotFoundError:  # the holder removed the directories meanwhile
                if not self.root.is_dir():
                    raise
            except OSError as exc:
                if exc.errno not in (errno.ELOOP, errno.EISDIR):
                    raise
                raise commit.UnsafeStagingArea(self.path, "its lock is not a regular file"
                                               ) from None
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise commit.UnsafeStagingArea(self.path, "its lock is not a regular file")
        return fd

    def __enter__(self) -> CacheLock:
        super().__enter__()
        legacy = self.root / f"{self.key}.lock"
        try:
            if stat.S_ISREG(os.lstat(legacy).st_mode):
                legacy.unlink()
        except OSError:
            pass
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._fd is not None:
            try:
                with commit.KeyArea(self.root, self.key, create=False) as area:
                    os.unlink(commit.LOCK_NAME, dir_fd=area.fd)
                    area.remove_if_empty()
            except OSError:
                pass  # left for the next holder
        super().__exit__(exc_type, exc, tb)
