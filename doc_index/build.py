"""``doc-index build``: pick the source (directory or git), run the store, print the summary."""

from __future__ import annotations

import re
import sys
import time
from pathlib import Path

from .printable import printable
from .store.index_store import BuildReport, IndexStore
from .store.local_source import build_from_directory, summary_lines

_GIT_PREFIXES = ("http://", "https://", "ssh://", "git://", "file://", "git@")
_SCP_LIKE = re.compile(r"^[\w.-]+@[\w.-]+:")  # user@host:owner/name.git


def looks_like_git(source: str) -> bool:
    """A URL (any case of scheme), or a path to a bare repository (a directory with HEAD
    and objects/)."""
    if source.lower().startswith(_GIT_PREFIXES):
        return True
    path = Path(source)
    if _SCP_LIKE.match(source) and not path.exists():
        return True
    return path.is_dir() and (path / "HEAD").is_file() and (path / "objects").is_dir()


def run_build(source: str, root: Path, *, name: str | None = None, ref: str | None = None,
              full: bool = False, max_bytes: int = 10 * 1024 * 1024) -> int:
    from .store.manifest import CacheTooLarge

    try:
        return _run_build(source, root, name=name, ref=ref, full=full, max_bytes=max_bytes)
    except CacheTooLarge as exc:  # nothing was written: the live cache, if any, is kept
        if sys.stderr.isatty():
            sys.stderr.write("\r\033[K")
        print(f"error: {printable(str(exc))}", file=sys.stderr)
        return 1


def _run_build(source: str, root: Path, *, name: str | None, ref: str | None, full: bool,
               max_bytes: int) -> int:
    started = time.perf_counter()
    store = IndexStore(root)
    progress = _progress_bar() if sys.stderr.isatty() else None
    if looks_like_git(source):
        from .store.git_source import GitSourceError, build_from_git

        try:
            report = build_from_git(store, source, name=name, ref=ref, full=full,
                                    max_bytes=max_bytes, progress=progress)
        except GitSourceError as exc:
            if progress is not None:
                sys.stderr.write("\r\033[K")
            print(f"error: {printable(exc.message)}", file=sys.stderr)
            return exc.exit_code
    else:
        directory = Path(source)
        if not directory.is_dir():
            from .store.git_source import redact

            print(f"error: not a directory or git repository: {printable(redact(source))}",
                  file=sys.stderr)
            return 6
        report = build_from_directory(store, directory, name=name, full=full,
                                      max_bytes=max_bytes, progress=progress)
    if progress is not None:
        sys.stderr.write("\r\033[K")
    print_summary(report, time.perf_counter() - started)
    return 0


def print_summary(report: BuildReport, seconds: float) -> None:
    """The one-screen build summary, on stderr."""
    for line in summary_lines(report, seconds):
        print(line, file=sys.stderr)


def _progress_bar():  # type: ignore[no-untyped-def]
    def show(done: int, total: int) -> None:
        width = 30
        filled = width * done // max(total, 1)
        sys.stderr.write(f"\r  [{'#' * filled}{'.' * (width - filled)}] {done}/{total} files")
        sys.stderr.flush()

    return show
