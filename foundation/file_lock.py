"""An exclusive lock on a file that several processes take in turn: a cache's build
(``store.lock.CacheLock``), a git source's clone, a hook's run.

``flock`` on the file, retried until ``timeout``; a lock file its holder unlinked (the
holder removes it when it is done) is opened again, so two processes never hold two
different files of one name.
"""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path
from types import TracebackType

from .errors import LockTimeout


class BuildLock:
    """An exclusive ``flock`` on the lock file ``path``."""

    def __init__(self, path: Path, timeout: float = 600.0) -> None:
        self.path = path
        self.timeout = timeout
        self._fd: int | None = None

    def _open(self) -> int:
        return os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)

    def __enter__(self) -> BuildLock:
        deadline = time.monotonic() + self.timeout
        while True:
            fd = self._open()
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                if time.monotonic() >= deadline:
                    message = f"another build of this cache holds {self.path.name}"
                    raise LockTimeout(message) from None
                time.sleep(0.05)
                continue
            if self._still_linked(fd):
                self._fd = fd
                return self
            os.close(fd)  # unlinked by the previous holder: lock the file now there

    def _still_linked(self, fd: int) -> bool:
        try:
            st = os.stat(self.path, follow_symlinks=False)
        except FileNotFoundError:
            return False
        return os.path.samestat(st, os.fstat(fd))

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    def held_elsewhere(self) -> bool:
        """True when some other process holds the lock right now."""
        try:
            fd = os.open(self.path, os.O_RDWR)
        except FileNotFoundError:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        finally:
            os.close(fd)
        return False
