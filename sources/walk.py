"""Where documentation comes from: the walk of a local directory.

A source yields ``SourceFile``s (repo-relative POSIX path, a way to read the bytes, a
content hash) and reports what it skipped and why. Nothing here follows a symlink out of
the tree or reads a file it will not index: every directory and file is opened relative
to its parent directory's handle with ``O_NOFOLLOW``, starting from a handle on the
walked directory that stays open until the build has read its files, so a directory
swapped for a symlink during the build leads nowhere.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
import subprocess
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ..foundation.cache_names import MANIFEST_NAME, SEARCH_INDEX_NAME, STAGING_DIR
from ..foundation.errors import NothingToIndex
from ..foundation.printable import printable
from ..foundation.safe_paths import path_problem
from ..indexer.formats import is_doc_path, other_doc_kind
from .doc_config import MAX_CONFIG_BYTES
from .docs_folder import FOLDER, Selection, choose, classify, is_config_name, kinds_line
from .git_run import start_git, wait_git
from .snapshot import Scan, SourceFile

if TYPE_CHECKING:
    pass

DEFAULT_MAX_BYTES = 10 * 1024 * 1024

SKIPPED_DIRS = frozenset(
    {
        ".git", ".hg", ".svn", ".bzr", "_darcs", "CVS", ".jj",
        "node_modules", "__pycache__", ".venv", "venv", ".tox", ".nox", ".mypy_cache",
        ".pytest_cache", ".ruff_cache", "_build", "build", "dist", "site", ".eggs",
        "site-packages", STAGING_DIR,
    }
)
# A directory holding both (regular files) is a doc-index cache; one holding the staging
# area (a directory), a cache root: the walk does not enter either (their raw files would
# be indexed again, one nested copy per build).
CACHE_FILES = frozenset({MANIFEST_NAME, SEARCH_INDEX_NAME})

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_NONBLOCK
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK  # a FIFO opens without blocking


def nothing_to_index(where: str, scan: Scan) -> NothingToIndex:
    """The error naming ``where``, what was looked at and what was skipped."""
    selection = scan.selection
    if selection is not None and not selection.exists:
        return NothingToIndex(f"nothing to index: {where} has no folder {selection.what} "
                              f"({selection.why}); give a folder relative to its top")
    inside = ""
    if selection is not None and selection.mode != FOLDER:
        inside = f" in {selection.what}"
        if selection.why:
            inside += f" ({selection.why})"
    parts = [f"nothing to index in {where}{inside}: no Markdown (.md, .markdown, .mdx) or "
             "reStructuredText (.rst) file"]
    kinds = kinds_line(scan.kinds)
    if kinds:
        parts.append(kinds)
    if scan.skipped:
        path, reason = scan.skipped[0]
        more = f" and {len(scan.skipped) - 1} more" if len(scan.skipped) > 1 else ""
        parts.append(f"skipped {printable(path)} ({printable(reason)}){more}")
    if selection is not None and selection.left_out:
        parts.append(f"{selection.left_out} doc files elsewhere: --all indexes them")
    return NothingToIndex("; ".join(parts))


class _GitQuery:
    """``git -C root <args>`` started now through the one git runner, its stdout read later
    (None when git is missing or fails), so the walk runs meanwhile.

    A work tree's walk needs two plumbing answers from git (the visible files, HEAD); the
    runner's clean environment and disabled options keep a work tree's ``.git/config``
    (``core.fsmonitor``, ...) and an inherited ``GIT_DIR`` out of them. git that does not
    answer within the runner's deadline (a FIFO ``.gitignore``) stops the build
    (``GitTimeout``): a plain walk instead would index what git ignores."""

    def __init__(self, root: Path, *args: str) -> None:
        self._root = root
        try:
            self._proc: subprocess.Popen[bytes] | None = start_git(
                args, cwd=root, stderr=subprocess.DEVNULL)
        except OSError:
            self._proc = None

    def output(self) -> bytes | None:
        if self._proc is None:
            return None
        out, _ = wait_git(self._proc, os.fspath(self._root))
        return out if self._proc.returncode == 0 else None

    def stop(self) -> None:
        """Kill git and reap it (the build stops without its answer)."""
        if self._proc is not None:
            self._proc.kill()
            self._proc.communicate()


def scan_directory(root: Path, max_bytes: int = DEFAULT_MAX_BYTES, *,
                   cache_root: Path | None = None, mode: str = FOLDER) -> Scan:
    """Every documentation file below ``root`` (sorted by path), with the ones skipped.

    In a git work tree (at any depth), git decides what is documentation: the files it
    tracks plus the untracked ones it does not ignore, whatever their directories are
    called (a tracked ``doc/build/`` is indexed), and HEAD is the commit hash. Outside git,
    directories named in ``SKIPPED_DIRS`` are left out (but a ``build/`` holding a Sphinx
    ``conf.py``: its sources), and each one that held doc files is reported with their
    number. A Sphinx build's ``_sources`` copy beside its sources is left out either way
    (``docs_folder.build_copies``). The walk never enters ``.git``, ``cache_root`` (where
    the build writes), its staging area or any directory that holds a doc-index cache;
    each of these is reported as skipped. ``mode``: which files are indexed
    (``doc_selection``: FOLDER, every one; DOCS at a work tree's top, ALL)."""
    root = root.resolve()
    scan = Scan()
    # Asked at any depth: below a work tree's top, ls-files lists the files under ``root``
    # relative to it; outside any work tree both fail and the walk is a plain folder's.
    # ``--sparse``: a sparse index's directory entries stay as they are (``dir/``), not
    # expanded, which in a partial clone would mean fetching the trees.
    files_query = _GitQuery(root, "ls-files", "--sparse", "--cached", "--others",
                            "--exclude-standard", "-z")
    head_query = _GitQuery(root, "rev-parse", "--verify", "--quiet", "HEAD")
    tree = _Tree(root)
    # git's answer decides which directories the walk enters, so it comes first (a few
    # milliseconds; HEAD is still being asked meanwhile).
    visible = _visible_to_git(root, files_query, head_query)
    candidates = _walk(tree, _own_directories(cache_root), scan.skipped,
                       None if visible is None else _directories_of(visible))
    head = head_query.output()
    if visible is not None:
        scan.commit_hash = head.decode("ascii", "replace").strip() if head else ""
    checked = _checked_names(candidates, visible, scan)
    scan.selection = selection = choose([rel for rel, _ in checked],
                                        _config_reader(tree, checked), mode)
    scan.files = _selected_files(tree, checked, selection, scan, max_bytes)
    scan.skipped.sort()
    if scan.files:  # how its pages are expanded (includes, autodoc: ``store.expansion``)
        from .expansion import directory_config

        folders = [f for f in selection.folders if f]
        scan.expand = directory_config(os.fspath(root), max_bytes, folders)
    return scan


def _visible_to_git(root: Path, files_query: _GitQuery, head_query: _GitQuery,
                    ) -> set[str] | None:
    """The files git lists below ``root``, or None when it is no work tree's (or git
    ignores it whole: then it is walked as a plain folder)."""
    try:
        listed = files_query.output()
    except BaseException:
        head_query.stop()
        raise
    if listed is None:
        return None
    visible = {os.fsdecode(p) for p in listed.split(b"\0") if p}
    if not visible and _ignored_by_git(root):
        return None
    return visible


def _checked_names(candidates: list[tuple[str, bool]], visible: set[str] | None,
                   scan: Scan) -> list[tuple[str, bool]]:
    """The walked ``(rel, is_link)`` that git lists (when it decides) and whose names
    pass the one check of a source's names; a doc file's refused name is reported."""
    checked: list[tuple[str, bool]] = []
    for rel, is_link in candidates:
        if visible is not None and rel not in visible:
            continue
        problem = path_problem(rel)  # the one check of a source's names, before any join
        if problem is not None:
            if is_doc_path(rel):
                scan.skipped.append((_shown(rel), problem))
            continue
        checked.append((rel, is_link))
    return checked


def _selected_files(tree: _Tree, checked: list[tuple[str, bool]], selection: Selection,
                    scan: Scan, max_bytes: int) -> list[SourceFile]:
    """The files ``selection`` indexes, read and checked, sorted by path; the others
    counted by kind in ``scan`` or reported there as skipped."""
    found: list[SourceFile] = []
    for rel, is_link in checked:
        verdict = classify(selection, rel)
        if verdict.kind is not None:
            scan.count_kind(verdict.kind)
        if not verdict.index:
            continue
        entry = _check_file(tree, rel, is_link, max_bytes)
        if isinstance(entry, str):
            scan.skipped.append((rel, entry))
            continue
        data, parts = entry
        found.append(entry_for(rel, tree, parts, data, max_bytes))
    found.sort(key=lambda f: f.path)
    return found


def _config_reader(tree: _Tree, checked: list[tuple[str, bool]]) -> Callable[[str], bytes | None]:
    """A docs tool's config file's bytes, read below the tree's handle (never through a
    symlink, at most ``MAX_CONFIG_BYTES``), or None."""
    links = {rel for rel, is_link in checked if is_link}

    def read(rel: str) -> bytes | None:
        if rel in links:
            return None
        try:
            data = tree.read(rel.split("/"), MAX_CONFIG_BYTES)
        except OSError:
            return None
        return data if isinstance(data, bytes) else None

    return read


def _wanted(name: str, parent: str) -> bool:
    """A file the walk lists: documentation, a documentation-like file to count, or a
    docs tool's config file."""
    return is_doc_path(name) or other_doc_kind(name) is not None or is_config_name(name, parent)


def _ignored_by_git(root: Path) -> bool:
    """True when the work tree holding ``root`` ignores ``root`` itself (a build output or
    a downloaded copy someone points doc-index at): then git has no say in what it holds."""
    if root.parent == root:
        return False
    return _GitQuery(root.parent, "check-ignore", "-q", "--", root.name).output() is not None


def _directories_of(paths: set[str]) -> frozenset[str]:
    """Every directory (``a/``, ``a/b/``) that holds one of ``paths``: in a work tree the
    walk enters only these, so what git ignores (``node_modules/``) is never listed."""
    dirs: set[str] = set()
    for path in paths:
        cut = path.rfind("/")
        while cut > 0:
            prefix = path[:cut + 1]
            if prefix in dirs:
                break
            dirs.add(prefix)
            cut = path.rfind("/", 0, cut)
    return frozenset(dirs)


class _LeavesTree(Exception):
    """A symlink names a file outside the walked directory."""


def _close_all(fds: list[int]) -> None:
    for fd in fds:
        os.close(fd)


def _open_dir_below(top: int, parts: list[str]) -> int:
    """A new handle on the directory ``parts`` below the directory ``top``, opened one
    component at a time, never through a symlink (ELOOP)."""
    fd = os.open(".", _DIR_FLAGS, dir_fd=top)
    for part in parts:
        try:
            child = os.open(part, _DIR_FLAGS, dir_fd=fd)
        finally:
            os.close(fd)
        fd = child
    return fd


class _Tree:
    """The walked directory, held open. Its files are opened below this handle, one path
    component at a time with ``O_NOFOLLOW``, at the scan and again when they are parsed;
    the directory of the last file opened stays open for the next file in it (files come
    grouped by directory). Both handles close when the scan's last SourceFile is gone."""

    def __init__(self, root: Path) -> None:
        self.root = os.fspath(root)
        self.fd = os.open(root, _DIR_FLAGS)
        self._fds = [self.fd]  # the root, then the directory of the last file opened
        self._dir_parts: list[str] | None = None
        weakref.finalize(self, _close_all, self._fds)

    def _directory(self, parts: list[str]) -> int:
        if parts != self._dir_parts:
            fd = _open_dir_below(self.fd, parts)
            if len(self._fds) > 1:
                os.close(self._fds.pop())
            self._fds.append(fd)
            self._dir_parts = parts
        return self._fds[-1]

    def read(self, parts: list[str], max_bytes: int) -> bytes | str:
        """The bytes of the regular file ``parts`` (path components below the root), or
        why they are not read; OSError when it cannot be opened."""
        fd = os.open(parts[-1], _FILE_FLAGS, dir_fd=self._directory(parts[:-1]))
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                return "not a regular file"
            if st.st_size > max_bytes:
                return f"over the size cap ({st.st_size} > {max_bytes} bytes)"
            with open(fd, "rb", closefd=False) as fh:
                # Sized by fstat: a read of max_bytes + 1 would allocate that much per file.
                data = fh.read(st.st_size + 1)
                if len(data) > st.st_size:  # grew since: read on, up to past the cap
                    data += fh.read(max_bytes + 1 - len(data))
        finally:
            os.close(fd)
        if len(data) > max_bytes:
            return f"over the size cap (> {max_bytes} bytes)"
        return data

    def link_target(self, parts: list[str]) -> list[str]:
        """The path below the root named by the symlink ``parts``: an absolute target must
        lie under the root, and ``..`` may not climb above it (_LeavesTree); a directory
        that ``..`` climbs out of must be a real one, not a link (OSError)."""
        target = os.readlink(parts[-1], dir_fd=self._directory(parts[:-1]))
        if os.path.isabs(target):
            if not target.startswith(self.root.rstrip("/") + "/"):
                raise _LeavesTree
            here, rest = [], target[len(self.root.rstrip("/")) + 1:]
        else:
            here, rest = parts[:-1], target
        for part in rest.split("/"):
            if part in ("", "."):
                continue
            if part != "..":
                here = [*here, part]
            elif not here:
                raise _LeavesTree
            else:
                os.close(_open_dir_below(self.fd, here))  # what the kernel would climb out of
                here = here[:-1]
        return here


def _own_directories(cache_root: Path | None) -> set[tuple[int, int]]:
    """(st_dev, st_ino) of the cache root and its staging area, when they exist."""
    found = set()
    if cache_root is not None:
        for path in (cache_root, cache_root / STAGING_DIR):
            try:
                st = os.stat(path)
            except (OSError, ValueError):
                continue
            if stat.S_ISDIR(st.st_mode):
                found.add((st.st_dev, st.st_ino))
    return found


def _walk(tree: _Tree, own: set[tuple[int, int]], skipped: list[tuple[str, str]],
          git_dirs: frozenset[str] | None) -> list[tuple[str, bool]]:
    """The doc files below the tree's root, as (relative path, is a symlink), grouped by
    directory. Each directory is opened relative to its parent's handle (``O_NOFOLLOW``,
    ``O_DIRECTORY``); only the handles of the directories being walked are open.
    ``git_dirs``: in a work tree, the directories holding files git lists (the only ones
    entered); None outside git (every directory but ``SKIPPED_DIRS``)."""
    found: list[tuple[str, bool]] = []
    stack: list[tuple[int, str, list[str]]] = []  # (handle, path + "/", subdirs to walk)

    def enter(fd: int, prefix: str) -> None:
        try:
            stack.append((fd, prefix, _list_directory(fd, prefix, own, found, skipped,
                                                      git_dirs)))
        except BaseException:
            os.close(fd)
            raise

    try:
        enter(os.open(".", _DIR_FLAGS, dir_fd=tree.fd), "")
        while stack:
            fd, prefix, subdirs = stack[-1]
            if not subdirs:
                stack.pop()
                os.close(fd)
                continue
            name = subdirs.pop()
            try:  # ELOOP: swapped for a symlink since it was listed
                enter(os.open(name, _DIR_FLAGS, dir_fd=fd), prefix + name + "/")
            except OSError as exc:
                reason = os.strerror(exc.errno) if exc.errno else type(exc).__name__
                skipped.append((prefix + name, f"unreadable directory ({reason})"))
    finally:
        for fd, _, _ in stack:
            os.close(fd)
    return found


def _list_directory(fd: int, prefix: str, own: set[tuple[int, int]],
                    found: list[tuple[str, bool]], skipped: list[tuple[str, str]],
                    git_dirs: frozenset[str] | None) -> list[str]:
    """The subdirectories to walk in the open directory ``fd`` (path ``prefix``); its doc
    files go to ``found``. A directory of doc-index's own is skipped whole, reported."""
    shown = prefix.rstrip("/") or "."
    st = os.fstat(fd)
    if (st.st_dev, st.st_ino) in own:
        skipped.append((shown, "the cache root of this build (or its staging area)"))
        return []
    with os.scandir(fd) as listing:
        entries = sorted(listing, key=lambda e: e.name)
    files = {entry.name for entry in entries if entry.is_file(follow_symlinks=False)}
    if files >= CACHE_FILES or any(
        entry.name == STAGING_DIR and entry.is_dir(follow_symlinks=False) for entry in entries
    ):
        skipped.append((shown, "holds a doc-index cache"))
        return []
    subdirs = []
    parent = prefix.rstrip("/").rpartition("/")[2]
    for entry in reversed(entries):  # popped from the end: walked in name order
        rel = prefix + entry.name
        if entry.is_dir(follow_symlinks=False):
            if git_dirs is not None:
                if rel + "/" not in git_dirs:
                    continue  # git lists nothing below it: ignored, or no files at all
            elif entry.name in SKIPPED_DIRS and not _sphinx_source(fd, entry.name):
                held = _doc_files_below(fd, entry.name)
                if held:
                    noun = "doc file" if held == 1 else "doc files"
                    skipped.append((_shown(rel), f"directory skipped by name outside git "
                                                 f"(held {held} {noun})"))
                continue
            problem = path_problem(rel)
            if problem is not None:
                skipped.append((_shown(rel), problem))
                continue
            subdirs.append(entry.name)
        elif entry.is_symlink():
            try:
                to_directory = entry.is_dir()  # the target's type only; nothing is opened
            except OSError:
                to_directory = False
            if to_directory:
                skipped.append((rel, "symlinked directory not followed"))
            elif _wanted(entry.name, parent):
                found.append((rel, True))
        elif _wanted(entry.name, parent):
            found.append((rel, False))
    return subdirs


def _sphinx_source(parent_fd: int, name: str) -> bool:
    """Whether the directory ``name`` (a build folder's name) is a Sphinx source folder:
    ``build/`` holding a regular ``conf.py`` (SQLAlchemy's and alembic's ``doc/build``),
    which no build writes (setuptools' ``build/`` holds ``lib/``, Sphinx's output no
    ``conf.py``)."""
    if name != "build":
        return False
    try:
        fd = _open_dir_below(parent_fd, [name])
    except OSError:
        return False
    try:
        return stat.S_ISREG(os.stat("conf.py", dir_fd=fd, follow_symlinks=False).st_mode)
    except OSError:
        return False
    finally:
        os.close(fd)


def _doc_files_below(parent_fd: int, name: str) -> int:
    """How many doc files the directory ``name`` holds, at any depth (names only: only
    directories are opened, one at a time, below handles, never through a symlink)."""
    count = 0
    pending = [[name]]
    while pending:
        parts = pending.pop()
        try:
            fd = _open_dir_below(parent_fd, parts)
        except OSError:
            continue
        try:
            with os.scandir(fd) as listing:
                for entry in listing:
                    if entry.is_dir(follow_symlinks=False):
                        pending.append([*parts, entry.name])
                    elif is_doc_path(entry.name):
                        count += 1
        except OSError:
            pass
        finally:
            os.close(fd)
    return count


def _shown(rel: str) -> str:
    """``rel`` as the report shows it: undecodable bytes become ``?``."""
    return rel.encode("utf-8", "replace").decode("utf-8")


def _check_file(tree: _Tree, rel: str, is_link: bool, max_bytes: int,
                ) -> tuple[bytes, list[str]] | str:
    """The file's bytes and its path components below the root (a symlink's target), or
    the reason it is skipped. A symlink is followed only to a file inside the tree, by the
    same component-wise walk; its target's name goes through the same one check."""
    parts = rel.split("/")
    try:
        if is_link:
            parts = tree.link_target(parts)
            problem = path_problem("/".join(parts))
            if problem is not None:
                return f"symlink target: {problem}"
        data = tree.read(parts, max_bytes)
    except _LeavesTree:
        return "symlink leaves the source tree"
    except OSError as exc:
        return f"unreadable ({type(exc).__name__})"
    if isinstance(data, str):
        return data
    return data, parts


def entry_for(rel: str, tree: _Tree, parts: list[str], data: bytes, max_bytes: int,
              ) -> SourceFile:
    """A local file: hashed now, read again (not kept in memory) when it is parsed.

    The second read walks from the tree's handle again, never through a symlink (a file
    or directory swapped for a link after the scan) and stops past ``max_bytes`` (a file
    that grew over the cap): both raise OSError, so the file is skipped as unreadable."""

    def read() -> bytes:
        content = tree.read(parts, max_bytes)
        if isinstance(content, str):
            raise OSError(errno.EINVAL, content)  # not a regular file, or grew over the cap
        return content

    return SourceFile(rel, hashlib.sha256(data).hexdigest(), len(data), read)
