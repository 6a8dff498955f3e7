"""``doc-index build``: a progress bar on a terminal, ``DocIndex.build``, the summary."""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING

from ..render.build_summary import summary_lines

if TYPE_CHECKING:
    from ..library import DocIndex


def run_build(index: DocIndex, source: str, *, name: str | None = None,
              ref: str | None = None, full: bool = False, replace: bool = False,
              max_bytes: int | None = None, subdir: str | None = None,
              everything: bool = False) -> int:
    """Build and print the one-screen summary on stderr; errors reach ``cli.main``."""
    started = time.perf_counter()
    progress = _progress_bar if sys.stderr.isatty() else None
    try:
        report = index.build(source, name=name, ref=ref, full=full, replace=replace,
                             max_file_bytes=max_bytes, progress=progress, subdir=subdir,
                             everything=everything,
                             embed_progress=_embed_bar if progress is not None else None)
    finally:
        if progress is not None:
            sys.stderr.write("\r\033[K")  # the bar's line, before the summary or the error
    for line in summary_lines(report, time.perf_counter() - started):
        print(line, file=sys.stderr)
    return 0


def _progress_bar(done: int, total: int, what: str = "files") -> None:
    width = 30
    filled = width * done // max(total, 1)
    sys.stderr.write(f"\r  [{'#' * filled}{'.' * (width - filled)}] {done}/{total} {what}")
    sys.stderr.flush()


def _embed_bar(done: int, total: int) -> None:
    """The second bar: sections through the embedding model (the cache answers already)."""
    _progress_bar(done, total, "sections embedded")
