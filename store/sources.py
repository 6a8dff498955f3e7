"""Where documentation comes from: the walk of a local directory.

A source yields ``SourceFile``s (repo-relative POSIX path, a way to read the bytes, a
content hash) and reports what it skipped and why. Nothing here follows a symlink out of
the tree or reads a file it will not index.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from ..indexer.formats import is_doc_path
from .git_run import start_git

DEFAULT_MAX_BYTES = 10 * 1024 * 1024

SKIPPED_DIRS = frozenset(
    {
        ".git", ".hg", ".svn", ".bzr", "_darcs", "CVS", ".jj",
        "node_modules", "__pycache__", ".venv", "venv", ".tox", ".nox", ".mypy_cache",
        ".pytest_cache", ".ruff_cache", "_build", "build", "dist", "site", ".eggs",
        "site-packages", ".doc-index-tmp",
    }
)


# The build path's records are NamedTuples and plain classes, not dataclasses: what a
# build may import is stated by tests/test_import_rules.py.


class SourceFile(NamedTuple):
    """One documentation file of a source: ``read()`` gives its bytes; ``digest`` is the
    content hash recorded in ``file_hashes`` (sha256 of the bytes for a directory)."""

    path: str
    digest: str
    size: int
    read: Callable[[], bytes]


class Scan:
    """What a source holds: its doc files (sorted by path), what it skipped and why, and
    the commit it was read at ("" for a plain directory)."""

    def __init__(self, files: list[SourceFile] | None = None,
                 skipped: list[tuple[str, str]] | None = None, commit_hash: str = "") -> None:
        self.files: list[SourceFile] = files if files is not None else []
        self.skipped: list[tuple[str, str]] = skipped if skipped is not None else []
        self.commit_hash = commit_hash


class _GitQuery:
    """``git -C root <args>`` started now through the one git runner, its stdout read later
    (None when git is missing or fails), so the walk runs meanwhile.

    A work tree's walk needs two plumbing answers from git (the visible files, HEAD); the
    runner's clean environment and disabled options keep a work tree's ``.git/config``
    (``core.fsmonitor``, ...) and an inherited ``GIT_DIR`` out of them."""

    def __init__(self, root: Path, *args: str) -> None:
        try:
            self._proc: subprocess.Popen[bytes] | None = start_git(
                args, cwd=root, stderr=subprocess.DEVNULL)
        except OSError:
            self._proc = None

    def output(self) -> bytes | None:
        if self._proc is None:
            return None
        out, _ = self._proc.communicate()
        return out if self._proc.returncode == 0 else None


def scan_directory(root: Path, max_bytes: int = DEFAULT_MAX_BYTES) -> Scan:
    """Every documentation file below ``root`` (sorted by path), with the ones skipped.
    In a git work tree, files git ignores are left out and HEAD is the commit hash."""
    root = root.resolve()
    scan = Scan()
    # Asked at any depth: below a work tree's top, ls-files lists the files under ``root``
    # relative to it; outside any work tree both fail and the walk is a plain folder's.
    files_query = _GitQuery(root, "ls-files", "--cached", "--others", "--exclude-standard",
                            "-z")
    head_query = _GitQuery(root, "rev-parse", "--verify", "--quiet", "HEAD")
    candidates: list[tuple[str, str]] = []  # (relative path, full path)
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        rel_dir = os.path.relpath(dirpath, root)
        rel_dir = "" if rel_dir == "." else rel_dir.replace(os.sep, "/") + "/"
        kept = []
        for d in sorted(dirnames):
            full = os.path.join(dirpath, d)
            if d in SKIPPED_DIRS:
                continue
            if os.path.islink(full):
                scan.skipped.append((rel_dir + d, "symlinked directory not followed"))
                continue
            kept.append(d)
        dirnames[:] = kept
        candidates.extend((rel_dir + name, os.path.join(dirpath, name))
                          for name in sorted(filenames) if is_doc_path(name))
    visible: set[str] | None = None
    listed = files_query.output()
    head = head_query.output()
    if listed is not None:
        visible = {os.fsdecode(p) for p in listed.split(b"\0") if p}
        scan.commit_hash = head.decode("ascii", "replace").strip() if head else ""
    found: list[SourceFile] = []
    for rel, full in candidates:
        if visible is not None and rel not in visible:
            continue
        try:
            rel.encode("utf-8")
        except UnicodeEncodeError:
            shown = rel.encode("utf-8", "replace").decode()
            scan.skipped.append((shown, "file name is not UTF-8"))
            continue
        entry = _check_file(root, full, max_bytes)
        if isinstance(entry, str):
            scan.skipped.append((rel, entry))
            continue
        found.append(entry_for(rel, entry[1], entry[0], max_bytes))
    found.sort(key=lambda f: f.path)
    scan.files = found
    scan.skipped.sort()
    return scan


def _check_file(root: Path, full: str, max_bytes: int) -> tuple[bytes, str] | str:
    """The file's bytes and real path (a symlink's target), or the reason it is skipped.
    The walk does not follow directory symlinks, so only the file itself can be a link."""
    try:
        st = os.lstat(full)
        if stat.S_ISLNK(st.st_mode):
            target = Path(full).resolve()
            if not target.is_relative_to(root):
                return "symlink leaves the source tree"
            st = os.stat(target)
            full = os.fspath(target)
        if not stat.S_ISREG(st.st_mode):
            return "not a regular file"
        if st.st_size > max_bytes:
            return f"over the size cap ({st.st_size} > {max_bytes} bytes)"
        with open(full, "rb") as fh:
            data = fh.read(max_bytes + 1)
    except (OSError, RuntimeError) as exc:
        return f"unreadable ({type(exc).__name__})"
    if len(data) > max_bytes:
        return f"over the size cap (> {max_bytes} bytes)"
    return data, full


def entry_for(rel: str, full: str | Path, data: bytes, max_bytes: int | None = None,
              ) -> SourceFile:
    """A local file: hashed now, read again (not kept in memory) when it is parsed.

    The second read does not follow a symlink (a file swapped for a link out of the tree
    after the scan) and stops past ``max_bytes`` (a file that grew over the cap): both
    raise OSError, so the file is skipped as unreadable."""

    def read() -> bytes:
        with open(os.open(full, os.O_RDONLY | os.O_NOFOLLOW), "rb") as fh:
            if max_bytes is None:
                return fh.read()
            content = fh.read(max_bytes + 1)
        if len(content) > max_bytes:
            raise OSError(errno.EFBIG, f"grew over the size cap ({max_bytes} bytes)")
        return content

    return SourceFile(rel, hashlib.sha256(data).hexdigest(), len(data), read)
