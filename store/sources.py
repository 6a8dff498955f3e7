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
from dataclasses import dataclass, field
from pathlib import Path

from ..indexer.formats import is_doc_path

DEFAULT_MAX_BYTES = 10 * 1024 * 1024

SKIPPED_DIRS = frozenset(
    {
        ".git", ".hg", ".svn", ".bzr", "_darcs", "CVS", ".jj",
        "node_modules", "__pycache__", ".venv", "venv", ".tox", ".nox", ".mypy_cache",
        ".pytest_cache", ".ruff_cache", "_build", "build", "dist", "site", ".eggs",
        "site-packages", ".doc-index-tmp",
    }
)


@dataclass(frozen=True)
class SourceFile:
    """One documentation file of a source: ``read()`` gives its bytes; ``digest`` is the
    content hash recorded in ``file_hashes`` (sha256 of the bytes for a directory)."""

    path: str
    digest: str
    size: int
    read: Callable[[], bytes]


@dataclass
class Scan:
    files: list[SourceFile] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (path, reason)
    commit_hash: str = ""


def _git_output(root: Path, *args: str) -> bytes | None:
    """stdout of ``git -C root <args>``, or None when git is missing or fails.

    A work tree's walk needs two plumbing answers from git (the visible files, HEAD), so it
    asks the git command directly: importing GitPython costs about 130 ms, more than the
    rest of a build where nothing changed. Git sources use GitPython (``git_source``)."""
    env = {k: v for k, v in os.environ.items() if k not in _GIT_REPO_ENV}
    try:
        done = subprocess.run(["git", "-C", os.fspath(root), *args], capture_output=True,
                              env=env, check=False)
    except OSError:
        return None
    return done.stdout if done.returncode == 0 else None


# Variables that would point git at another repository than the walked directory's.
_GIT_REPO_ENV = frozenset({"GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR",
                           "GIT_OBJECT_DIRECTORY", "GIT_PREFIX"})


def _git_visible(root: Path) -> set[str] | None:
    """Files a git work tree tracks or would track (ignored ones excluded), or None."""
    if not (root / ".git").exists():
        return None
    out = _git_output(root, "ls-files", "--cached", "--others", "--exclude-standard", "-z")
    if out is None:
        return None
    return {os.fsdecode(p) for p in out.split(b"\0") if p}


def git_head(root: Path) -> str:
    if not (root / ".git").exists():
        return ""
    out = _git_output(root, "rev-parse", "--verify", "--quiet", "HEAD")
    return out.decode("ascii", "replace").strip() if out else ""


def scan_directory(root: Path, max_bytes: int = DEFAULT_MAX_BYTES) -> Scan:
    """Every documentation file below ``root`` (sorted by path), with the ones skipped."""
    root = root.resolve()
    scan = Scan()
    visible = _git_visible(root)
    if visible is not None:
        scan.commit_hash = git_head(root)
    found: list[SourceFile] = []
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
        for name in sorted(filenames):
            rel = rel_dir + name
            if not is_doc_path(name):
                continue
            if visible is not None and rel not in visible:
                continue
            try:
                rel.encode("utf-8")
            except UnicodeEncodeError:
                shown = rel.encode("utf-8", "replace").decode()
                scan.skipped.append((shown, "file name is not UTF-8"))
                continue
            full = Path(dirpath) / name
            entry = _check_file(root, full, max_bytes)
            if isinstance(entry, str):
                scan.skipped.append((rel, entry))
                continue
            found.append(entry_for(rel, entry[1], entry[0], max_bytes))
    found.sort(key=lambda f: f.path)
    scan.files = found
    scan.skipped.sort()
    return scan


def _check_file(root: Path, full: Path, max_bytes: int) -> tuple[bytes, Path] | str:
    """The file's bytes and real path (a symlink's target), or the reason it is skipped.
    The walk does not follow directory symlinks, so only the file itself can be a link."""
    try:
        st = os.lstat(full)
        if stat.S_ISLNK(st.st_mode):
            target = full.resolve()
            if not target.is_relative_to(root):
                return "symlink leaves the source tree"
            st = os.stat(target)
            full = target
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


def entry_for(rel: str, full: Path, data: bytes, max_bytes: int | None = None) -> SourceFile:
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
