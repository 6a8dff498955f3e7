"""The raw files an incremental build carries forward: moved from the spare generation when
they are intact there, copied from the live generation otherwise.

Creating a file is what carrying cost: one new inode per unchanged file (about 0.7 ms each
on the benchmark machine's ext4, against 15 us for a rename: 595 copies were 0.45 s of a
0.8 s rebuild after a 5-file ``git pull``). Hard links would avoid it but readers refuse a
cache file with a second link (``cache_paths``: a hard link may lead outside the
root), and during a build every unchanged file of the live generation would have one.

So the store keeps two generations of each cache: the live one and the *spare*, the one
it replaced, ``<root>/.doc-index-tmp/<key>/spare`` (``store.commit``). Most raw files are
the same in both; the next build moves them (a folder whose content is exactly what the
new generation needs moves whole) from the spare into its staging directory, and
copies only what the spare lacks. Readers never see a mix: no file's bytes change in
place, a file only ever leaves the spare (a reader still holding that old generation gets
ENOENT, as when it used to be deleted, and tells a swapped cache by ``swapped``) for a
staging directory no reader has opened, and each generation is whole when swapped in.

Trust: the spare is the store's own output, but it is checked like the live generation.
Each file is opened below folder handles without following a symlink and must be a
regular file with one link whose sha256 is the digest the live generation's search index
records for that path; a folder moves whole only when it holds exactly the expected
names, each checked. What fails a check is left in the spare (deleted with it) and the
file is copied from the live generation, itself checked (else ``Untrusted``: the build
becomes a full one).
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

from .commit import SPARE_NAME
from .manifest import MAX_RAW_FILE_BYTES

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_NONBLOCK
_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK
# Files in deeper folders are copied by path: the walk holds two handles per level.
MAX_TREE_DEPTH = 32
# name -> folder, or a file's expected sha256, or None: a file this build writes itself
Tree = dict[str, "Tree | str | None"]


class Untrusted(Exception):
    """A raw file of the live generation is not what its search index says."""


def carry_raw(live: Path, staging: Path, files: list[tuple[str, str]],
              written: list[str]) -> None:
    """Put the raw files ``files`` (path, sha256), unchanged since the live generation
    ``live``, into ``staging``; ``written``: the paths the build's parsers write there
    (their folders are shared, never moved whole)."""
    tree: Tree = {}
    deep: list[tuple[str, str]] = []
    for path, digest in files:
        if path.count("/") < MAX_TREE_DEPTH:
            _place(tree, path, digest)
        else:
            deep.append((path, digest))
    for path in written:
        if path.count("/") >= MAX_TREE_DEPTH:  # mark the folder it is in at the limit ("":
            path = "/".join(path.split("/")[:MAX_TREE_DEPTH]) + "/"  # no file has that name)
        _place(tree, path, None)
    try:
        live_fd = os.open(live, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        raise Untrusted(str(live)) from None
    try:
        staging_fd = os.open(staging, os.O_RDONLY | os.O_DIRECTORY)
        try:
            area_fd = os.open(staging.parent, os.O_RDONLY | os.O_DIRECTORY)
            try:
                spare_fd = _open_dir(area_fd, SPARE_NAME)
            finally:
                os.close(area_fd)
            try:
                _carry(tree, "", live_fd, spare_fd, staging_fd)
                for path, digest in deep:
                    _copy_deep(live_fd, staging_fd, path, digest)
            finally:
                if spare_fd >= 0:
                    os.close(spare_fd)
        finally:
            os.close(staging_fd)
    finally:
        os.close(live_fd)


def _place(tree: Tree, path: str, value: str | None) -> None:
    *folders, name = path.split("/")
    node = tree
    for folder in folders:
        child = node.setdefault(folder, {})
        assert isinstance(child, dict)  # paths come from one scan: a name is file or folder
        node = child
    node[name] = value


def _open_dir(parent_fd: int, name: str) -> int:
    """A handle on the real folder ``name`` below ``parent_fd``; -1 when there is none."""
    try:
        return os.open(name, _DIR, dir_fd=parent_fd)
    except OSError:
        return -1


def _carry(node: Tree, prefix: str, live_fd: int, spare_fd: int, staging_fd: int) -> None:
    """Carry the files of ``node`` (the folder ``prefix`` of the cache) into the staging
    folder ``staging_fd``, from the spare folder ``spare_fd`` (-1: none) or the live
    generation."""
    for name, child in node.items():
        path = prefix + name
        if isinstance(child, dict):
            sub_spare = _open_dir(spare_fd, name) if spare_fd >= 0 else -1
            try:
                if (sub_spare >= 0 and _clean(child) and _holds_exactly(sub_spare, child)
                        and _move(spare_fd, staging_fd, name, sub_spare)):
                    continue
                try:
                    os.mkdir(name, dir_fd=staging_fd)
                except FileExistsError:  # a parser made it for a file it writes
                    pass
                sub_staging = os.open(name, _DIR, dir_fd=staging_fd)
                try:
                    _carry(child, path + "/", live_fd, sub_spare, sub_staging)
                finally:
                    os.close(sub_staging)
            finally:
                if sub_spare >= 0:
                    os.close(sub_spare)
        elif child is not None and (
                spare_fd < 0 or not _move_file(spare_fd, staging_fd, name, child)):
            _write(staging_fd, name, read_checked(live_fd, path, child))


def _clean(node: Tree) -> bool:
    """True when no file below ``node`` is written by this build."""
    return all(_clean(c) if isinstance(c, dict) else c is not None for c in node.values())


def _holds_exactly(dir_fd: int, node: Tree) -> bool:
    """True when the spare folder ``dir_fd`` holds exactly the names of ``node``, each
    file intact and each folder holding exactly its own."""
    try:
        with os.scandir(dir_fd) as entries:
            found = {e.name: e.is_dir(follow_symlinks=False) for e in entries}
    except OSError:
        return False
    if found.keys() != node.keys():
        return False
    for name, child in node.items():
        if isinstance(child, dict):
            sub = _open_dir(dir_fd, name) if found[name] else -1
            if sub < 0:
                return False
            try:
                if not _holds_exactly(sub, child):
                    return False
            finally:
                os.close(sub)
        elif found[name] or not isinstance(child, str) or _intact(dir_fd, name, child) < 0:
            return False
    return True


def _intact(dir_fd: int, name: str, digest: str) -> int:
    """An open handle on ``name`` below ``dir_fd`` if it is a regular file with one link
    and the sha256 ``digest``; -1 otherwise. (A handle, closed by the caller, so that a
    move can check it moved this very file.)"""
    try:
        fd = os.open(name, _FILE, dir_fd=dir_fd)
    except OSError:
        return -1
    try:
        info = os.fstat(fd)
        if (stat.S_ISREG(info.st_mode) and info.st_nlink == 1
                and info.st_size <= MAX_RAW_FILE_BYTES):  # (a sparse file claims any size)
            data = os.read(fd, info.st_size + 1)
            if hashlib.sha256(data).hexdigest() == digest:
                return fd
    except OSError:
        pass
    os.close(fd)
    return -1


def _move(src_fd: int, dst_fd: int, name: str, checked_fd: int) -> bool:
    """Move ``name`` from the spare folder ``src_fd`` to the staging folder ``dst_fd``;
    True if what arrived is what ``checked_fd`` has open (a swap of the spare's entry in
    between is put back and refused)."""
    try:
        os.rename(name, name, src_dir_fd=src_fd, dst_dir_fd=dst_fd)
    except OSError:
        return False
    arrived = os.stat(name, dir_fd=dst_fd, follow_symlinks=False)
    if os.path.samestat(arrived, os.fstat(checked_fd)):
        return True
    os.rename(name, name, src_dir_fd=dst_fd, dst_dir_fd=src_fd)
    return False


def _move_file(spare_fd: int, staging_fd: int, name: str, digest: str) -> bool:
    fd = _intact(spare_fd, name, digest)
    if fd < 0:
        return False
    try:
        return _move(spare_fd, staging_fd, name, fd)
    finally:
        os.close(fd)


def read_checked(live_fd: int, path: str, digest: str) -> bytes:
    """A raw file of the live generation (``path`` under the directory ``live_fd``) if it
    is a regular file (not a symlink) whose sha256 is ``digest``; raise Untrusted
    otherwise. (Plain descriptors, no file objects: this runs once per unchanged file.)"""
    try:
        fd = os.open(path, _FILE, dir_fd=live_fd)  # (non-blocking: a FIFO's open waits)
    except OSError:
        raise Untrusted(path) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_RAW_FILE_BYTES:
            raise Untrusted(path)
        # One read of one byte more than its size: a regular file reads whole, and a file
        # that grew or shrank fails the hash below.
        data = os.read(fd, info.st_size + 1)
    finally:
        os.close(fd)
    if hashlib.sha256(data).hexdigest() != digest:
        raise Untrusted(path)
    return data


def _copy_deep(live_fd: int, staging_fd: int, path: str, digest: str) -> None:
    data = read_checked(live_fd, path, digest)
    folder = ""
    for part in path.split("/")[:-1]:
        folder += part
        try:
            os.mkdir(folder, dir_fd=staging_fd)
        except FileExistsError:
            pass
        folder += "/"
    _write(staging_fd, path, data)


def _write(dir_fd: int, name: str, data: bytes) -> None:
    fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o666,
                 dir_fd=dir_fd)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)
