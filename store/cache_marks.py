"""Which directories under a root are caches doc-index may delete, and the mark it keeps.

``doc-index delete NAME`` removes ``<root>/NAME`` only when doc-index can tell it is a
cache, a real directory (not a symlink) that is one of:

- a doc-index cache: its ``manifest.json`` (a regular file) begins as the store writes
  every manifest, ``{"cache_version":"sha256:<64 hex>","document_count":N,
  "index_version":N,``, whatever follows (a manifest damaged further on is still one);
- a Context Engine v0 cache: ``manifest.json`` is a JSON object with ``build_config``
  (``v0_build.is_v0_cache``, the test ``context build --force`` uses);
- a doc-index cache damaged past that (its manifest gone or overwritten): its *mark*,
  ``<root>/.doc-index-tmp/<key>/cache``, names this very directory (device and inode).

Every build writes the mark once it has finished, under the cache's lock, in the store's
own area (``store.commit``): the cache's bytes and ``total_bytes`` do not change. A mark
names the directory by inode, since every build swaps in a new one: a folder someone
puts under that name later is another inode (unless the file system hands the same
number out again at once) and is refused like any other folder.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from pathlib import Path

from ..foundation.errors import DeleteRefused
from ..foundation.printable import printable
from . import commit

_NATIVE_HEAD = re.compile(
    rb'\{"cache_version":"sha256:[0-9a-f]{64}","document_count":[0-9]+,"index_version":[0-9]+,')
_HEAD_BYTES = 128
_MARK_TEXT = "doc-index cache"
_OPEN_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_OPEN_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC





def delete_refused(root: Path, key: str, why: str) -> DeleteRefused:
    """The refusal to delete ``key`` under ``root``, which is no cache doc-index can tell."""
    shown = f"'{key}'" if key.isprintable() else printable(key)
    return DeleteRefused(
        f"refusing to delete {shown} under {printable(os.path.abspath(root))}: {why}; "
        "doc-index deletes only the caches it can tell are caches (remove it yourself "
        "if it is yours to remove)")


def write_mark(root: Path, key: str) -> None:
    """Record that ``<root>/<key>``, as it is now, is the cache a build of ``key`` made
    (called after the build, with the cache's lock held). Best effort: a mark that cannot
    be written costs only the deletion of that cache once it is damaged."""
    try:
        st = os.lstat(root / key)
        if not stat.S_ISDIR(st.st_mode):
            return
        text = f"{_MARK_TEXT} {st.st_dev} {st.st_ino}\n".encode()
        with commit.KeyArea(root, key, create=True) as area:
            if _read_mark(area.fd) == text:
                return
            tmp = f"{commit.MARK_NAME}.{os.getpid()}.tmp"  # (a leftover goes with a clean)
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644,
                         dir_fd=area.fd)
            try:
                os.write(fd, text)
            finally:
                os.close(fd)
            os.replace(tmp, commit.MARK_NAME, src_dir_fd=area.fd, dst_dir_fd=area.fd)
    except OSError:
        pass


def _read_mark(area_fd: int) -> bytes | None:
    try:
        fd = os.open(commit.MARK_NAME, _OPEN_FILE, dir_fd=area_fd)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return os.read(fd, 256)
    finally:
        os.close(fd)


def _marked(root: Path, key: str, st: os.stat_result) -> bool:
    """True when the cache's mark names the directory ``st``."""
    try:
        with commit.KeyArea(root, key, create=False) as area:
            text = _read_mark(area.fd)
    except OSError:  # no area, or one that is not the store's (UnsafeStagingArea)
        return False
    return text == f"{_MARK_TEXT} {st.st_dev} {st.st_ino}\n".encode()


def is_native_manifest(dir_fd: int) -> bool:
    """True when the directory ``dir_fd`` holds a ``manifest.json`` the store wrote."""
    try:
        fd = os.open("manifest.json", _OPEN_FILE, dir_fd=dir_fd)
    except OSError:
        return False
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return False
        return _NATIVE_HEAD.match(os.read(fd, _HEAD_BYTES)) is not None
    except OSError:
        return False
    finally:
        os.close(fd)


def is_native_cache(path: Path) -> bool:
    """True when ``path`` is a real directory holding a manifest the store wrote."""
    try:
        dir_fd = os.open(path, _OPEN_DIR)
    except OSError:
        return False
    try:
        return is_native_manifest(dir_fd)
    finally:
        os.close(dir_fd)


def deletion_refusal(root: Path, key: str) -> str | None:
    """Why ``<root>/<key>`` is not a cache doc-index may delete, or None when it is one
    (``key`` already checked as a cache name). FileNotFoundError when it is gone."""
    path = root / key
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode):
        return "it is a symbolic link, and doc-index makes none"
    if not stat.S_ISDIR(st.st_mode):
        return "it is not a directory"
    if is_native_cache(path) or _marked(root, key, st):
        return None
    from .v0_build import is_v0_cache  # lazy: defers store.v0_build (+7 modules) to the call

    if is_v0_cache(path):
        return None
    try:
        os.close(os.open(path, _OPEN_DIR))
    except OSError as exc:
        if exc.errno in (errno.EACCES, errno.EPERM):
            return "it cannot be read"
    return ("it holds no doc-index or Context Engine v0 manifest.json, and no doc-index "
            "build made it")


__all__ = ["DeleteRefused", "deletion_refusal", "is_native_cache", "is_native_manifest",
           "write_mark"]
