"""``doc-index build``: pick the source (directory or git), run the store, print the summary."""

from __future__ import annotations

import re
import sys
import time
from pathlib import Path

from .store.index_store import BuildReport, IndexStore, warm_worker
from .store.sources import scan_directory

_GIT_PREFIXES = ("http://", "https://", "ssh://", "git://", "file://", "git@")
_SCP_LIKE = re.compile(r"^[\w.-]+@[\w.-]+:")  # user@host:owner/name.git


def looks_like_git(source: str) -> bool:
    """A URL, or a path to a bare repository (a directory with HEAD and objects/)."""
    if source.startswith(_GIT_PREFIXES):
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
        print(f"error: {exc}", file=sys.stderr)
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
            print(f"error: {exc.message}", file=sys.stderr)
            return exc.exit_code
    else:
        directory = Path(source)
        if not directory.is_dir():
            print(f"error: not a directory or git repository: {source}", file=sys.stderr)
            return 6
        directory = directory.resolve()
        repo_name = name or directory.name
        key = f"local-{repo_name}"
        warm = warm_worker(store, key, full)  # imports the parsers during the walk
        try:
            scan = scan_directory(directory, max_bytes=max_bytes)
            report = store.update_index(key, "local", repo_name, scan, full=full,
                                        progress=progress, warm=warm)
        finally:
            if warm is not None:
                warm.close()
    if progress is not None:
        sys.stderr.write("\r\033[K")
    print_summary(report, time.perf_counter() - started)
    return 0


def print_summary(report: BuildReport, seconds: float) -> None:
    """The one-screen build summary, on stderr."""
    out = sys.stderr
    state = "built" if report.written else "up to date"
    kind = " (full)" if report.full and report.written else ""
    print(f"{report.key}: {state}{kind} -> {report.cache_dir}", file=out)
    print(
        f"  files: {len(report.added)} added, {len(report.changed)} changed, "
        f"{len(report.removed)} removed, {len(report.unchanged)} unchanged, "
        f"{len(report.skipped)} skipped",
        file=out,
    )
    for path, reason in report.skipped[:20]:
        print(f"  skipped {path}: {reason}", file=out)
    if len(report.skipped) > 20:
        print(f"  ... and {len(report.skipped) - 20} more skipped", file=out)
    for path, note in report.notes[:20]:
        print(f"  note {path}: {note}", file=out)
    if len(report.notes) > 20:
        print(f"  ... and {len(report.notes) - 20} more notes", file=out)
    print(f"  sections: {report.sections} ({report.tokens} tokens)", file=out)
    print(f"  time: {seconds:.2f} s", file=out)


def _progress_bar():  # type: ignore[no-untyped-def]
    def show(done: int, total: int) -> None:
        width = 30
        filled = width * done // max(total, 1)
        sys.stderr.write(f"\r  [{'#' * filled}{'.' * (width - filled)}] {done}/{total} files")
        sys.stderr.flush()

    return show
