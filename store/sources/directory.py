"""A local directory's build, as a library call (the CLI and the git hook both use it).

``build_from_directory`` is the directory twin of ``git_source.build_from_git``: it walks
the directory (git's view of it when it is in a work tree, at any depth) and updates its
cache (named by ``identity``), returning the ``BuildReport``; it prints nothing (the
doors render the report: ``render.build_summary``).
"""

from __future__ import annotations

from pathlib import Path

from ...foundation.errors import UsageError
from ...foundation.printable import printable
from ..index_store import BuildReport, IndexStore, Progress, warm_worker
from .docs_folder import check_subdir
from .identity import directory_source
from .walk import DEFAULT_MAX_BYTES, Scan, nothing_to_index, scan_directory


def build_from_directory(store: IndexStore, directory: Path, *, name: str | None = None,
                         full: bool = False, replace: bool = False,
                         max_bytes: int = DEFAULT_MAX_BYTES,
                         progress: Progress | None = None, subdir: str | None = None,
                         everything: bool = False) -> BuildReport:
    """Build or update the cache of a folder: its default name (``source_identity``:
    ``<owner>-<name>[-<sub-path>]`` in a work tree with an ``origin``, else
    ``local-<parent>-<folder>``) or exactly ``name``. ``replace``: a cache of that name
    built from another source is replaced, not refused. ``subdir``: build that folder
    below ``directory`` instead (as if it were named); ``everything``: a work tree's top
    indexes every file, not its docs (``doc_selection``). A folder with nothing to index
    is an error (``NothingToIndex``); nothing is written."""
    if subdir is not None:
        directory = directory / check_subdir(subdir)
        if not directory.is_dir():
            raise UsageError(f"--subdir: no folder {printable(str(directory))}")
    directory = directory.resolve()
    identity = directory_source(directory, everything=everything)
    key = identity.cache_key(name)
    with warm_worker(store, key, full) as warm:  # imports the parsers during the walk
        scan = scan_directory(directory, max_bytes=max_bytes, cache_root=store.root,
                              mode=identity.scope)
        if not scan.files:
            raise nothing_to_index(printable(str(directory)), scan)
        report = store.update_index(key, identity.owner, identity.name, scan, full=full,
                                    progress=progress, warm=warm, source=identity,
                                    replace=replace)
    return tell(report, scan)


def tell(report: BuildReport, scan: Scan) -> BuildReport:
    """``report`` with what the scan says about its source (the summary's lines)."""
    selection = scan.selection
    lines = [] if selection is None else [selection.line(), selection.copies_line()]
    report.about = [line for line in lines if line] + scan.notes
    report.kinds = dict(scan.kinds)
    return report


__all__ = ["build_from_directory", "tell"]
