"""Crash-safe, reader-safe replacement of a cache directory, and the store's own area.

A build writes the new cache into a staging directory of its own cache,
``<root>/.doc-index-tmp/<key>/<pid>.<random>/`` (same filesystem, never listed as a
cache), then swaps it with the live directory in one ``renameat2(RENAME_EXCHANGE)``
call. A ``kill -9`` before the swap leaves the old cache untouched (the staging leftovers
are removed by the next build of that cache); after it, the new one is complete. Readers
open the cache directory once and read every file relative to that handle, so they see
one generation or the other, never a mix.

The generation a swap replaces is not deleted: it stays as the cache's *spare*,
``<root>/.doc-index-tmp/<key>/spare`` (replacing the previous spare), the source the next
build moves unchanged raw files from (``store.raw_files``). It costs the disk space of
one more copy of each cache's raw files, and spares a new inode per unchanged file.

``<root>/.doc-index-tmp/<key>/`` also holds the cache's build lock (``store.lock``) and
its mark, the record that a build made this directory (``store.cache_marks``). One
directory per cache: cleaning one cache's leftovers can never match another cache's
names (``local-p`` and ``local-p.b``), and no cache name can name a lock. Every level is
opened without following a symlink and must be a directory owned by the root's owner (or
by the user running the build: ``sudo doc-index build`` creates it as root), else
``UnsafeStagingArea``: a staging area planted as a link (inside a pulled repository, say)
would otherwise make a build delete or write elsewhere. Deletions run relative to the
opened directory's handle.
"""

from __future__ import annotations

import errno
import os
import secrets
import shutil
import stat
from pathlib import Path

from ..foundation.cache_names import STAGING_DIR

LOCK_NAME = "lock"  # staging directories are named "<pid>.<random>": never this
SPARE_NAME = "spare"  # nor this
MARK_NAME = "cache"  # nor this: the record that a build made the cache (store.cache_marks)
_RENAME_EXCHANGE = 2
_AT_FDCWD = -100
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_NONBLOCK


class UnsafeStagingArea(OSError):
    """The staging area (or a cache's directory in it) is not a real directory of the
    root's owner; nothing was written or deleted through it."""

    def __init__(self, path: Path, problem: str) -> None:
        super().__init__(errno.EPERM, f"refusing the staging area {path}: {problem} (nothing "
                                      "was written or deleted through it); remove it and retry")


def staging_root(root: Path) -> Path:
    return root / STAGING_DIR


def key_area(root: Path, key: str) -> Path:
    """``<root>/.doc-index-tmp/<key>``: the lock and the staging directories of one cache."""
    return staging_root(root) / key


class KeyArea:
    """``<root>/.doc-index-tmp/<key>/`` opened (created with ``create``) level by level,
    each level checked (``UnsafeStagingArea``); FileNotFoundError when it is missing."""

    def __init__(self, root: Path, key: str, *, create: bool) -> None:
        self.path = key_area(root, key)
        root_fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
        try:
            self.owner = owner = os.fstat(root_fd).st_uid
            self.area_fd = open_checked(root_fd, STAGING_DIR, owner, self.path.parent, create)
        finally:
            os.close(root_fd)
        try:
            self.fd = open_checked(self.area_fd, key, owner, self.path, create)
        except BaseException:
            os.close(self.area_fd)
            raise

    def close(self) -> None:
        os.close(self.fd)
        os.close(self.area_fd)

    def __enter__(self) -> KeyArea:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def clean(self, *, keep_spare: bool = True) -> None:
        """Remove everything but the lock and, with ``keep_spare``, the spare generation and
        the cache's mark: what killed builds of this cache left behind (call with the build
        lock held)."""
        kept = (LOCK_NAME, SPARE_NAME, MARK_NAME) if keep_spare else (LOCK_NAME,)
        for name in os.listdir(self.fd):
            if name not in kept:
                remove_below(self.fd, name)

    def remove_if_empty(self) -> None:
        """Remove this cache's directory and then the staging area, when they are empty
        (a concurrent build's directory or lock keeps them)."""
        try:
            os.rmdir(self.path.name, dir_fd=self.area_fd)
            os.rmdir(self.path.parent)  # a symlink put there since is not a directory: kept
        except OSError:
            pass


def open_checked(parent_fd: int, name: str, owner: int, path: Path, create: bool) -> int:
    """A handle on the directory ``name`` below ``parent_fd`` (made with ``create``), if it
    is a real directory owned by ``owner`` or this user; ``UnsafeStagingArea`` otherwise
    (``path``: its name in the message)."""
    if create:
        try:
            os.mkdir(name, dir_fd=parent_fd)
        except FileExistsError:
            pass
    try:
        fd = os.open(name, _DIR_FLAGS, dir_fd=parent_fd)
    except OSError as exc:
        if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
            raise
        link = stat.S_ISLNK(os.stat(name, dir_fd=parent_fd, follow_symlinks=False).st_mode)
        raise UnsafeStagingArea(path, "a symlink" if link else "not a directory") from None
    uid = os.fstat(fd).st_uid
    if uid not in (owner, os.geteuid()):
        os.close(fd)
        raise UnsafeStagingArea(path, f"owned by uid {uid}, not by the root's owner (uid {owner})")
    return fd


def remove_below(dir_fd: int, name: str) -> None:
    """Delete ``name`` in the directory ``dir_fd`` and, if it is a directory, all it holds:
    every step relative to an open directory, a symlink removed, never followed. It stops
    at the first error (what is left stays, as with ``shutil.rmtree(ignore_errors=True)``;
    staging leftovers go with the next clean)."""
    stack: list[tuple[int, str, int]] = []  # (parent handle, name, handle) being emptied
    try:
        if not stat.S_ISDIR(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode):
            os.unlink(name, dir_fd=dir_fd)
            return
        stack.append((dir_fd, name, os.open(name, _DIR_FLAGS, dir_fd=dir_fd)))
        while stack:
            parent, here, fd = stack[-1]
            subdir = None
            with os.scandir(fd) as entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False):
                        subdir = entry.name
                        break
                    os.unlink(entry.name, dir_fd=fd)
            if subdir is None:
                stack.pop()
                os.close(fd)
                os.rmdir(here, dir_fd=parent)
            else:
                stack.append((fd, subdir, os.open(subdir, _DIR_FLAGS, dir_fd=fd)))
    except OSError:
        pass
    finally:
        for _, _, fd in stack:
            os.close(fd)


def root_of_staging(staging: Path | str) -> Path:
    """The root whose cache a staging directory (``new_staging_dir``) is built for."""
    return Path(staging).parent.parent.parent


def new_staging_dir(root: Path, key: str) -> Path:
    with KeyArea(root, key, create=True) as area:
        name = f"{os.getpid()}.{secrets.token_hex(4)}"
        os.mkdir(name, dir_fd=area.fd)
        return area.path / name


def clean_staging(root: Path, key: str) -> None:
    """Remove what killed builds of ``key`` left behind (call with the build lock held)."""
    try:
        area = KeyArea(root, key, create=False)
    except FileNotFoundError:
        return
    with area:
        area.clean()


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
    """Make ``staging`` the live cache directory, atomically, and keep the old one as the
    spare (``staging`` is in the cache's area, ``key_area(live.parent, live.name)``)."""
    fsync_dir(staging)
    if not os.path.lexists(live):
        os.rename(staging, live)
        return
    if _renameat2_exchange(staging, live):
        pass  # staging now holds the previous generation
    else:
        # No atomic exchange on this platform: a short window without a live cache.
        old = staging.with_name(staging.name + ".old")
        os.rename(live, old)
        os.rename(staging, live)
        staging = old
    fsync_dir(live.parent)
    try:
        with KeyArea(live.parent, live.name, create=False) as area:
            remove_below(area.fd, SPARE_NAME)  # what the build took nothing from
            os.rename(staging.name, SPARE_NAME, src_dir_fd=area.fd, dst_dir_fd=area.fd)
    except OSError:
        shutil.rmtree(staging, ignore_errors=True)
