"""``doc-index sync``: progress on a terminal, ``DocIndex.sync``, the report."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from ..render.sync_report import sync_lines

if TYPE_CHECKING:
    from ..library import DocIndex


def run_sync(index: DocIndex, project: str, *, dry_run: bool, prune: bool,
             all_locked: bool, trust_project_index: bool = False) -> int:
    """The report on stdout; when packages failed or were refused, one ``error:`` line on
    stderr and the exit code of the first (the others' causes are in the report)."""
    progress = _progress if sys.stderr.isatty() and not dry_run else None
    try:
        report = index.sync(project, dry_run=dry_run, prune=prune, all_locked=all_locked,
                            progress=progress, trust_project_index=trust_project_index,
                            embed_progress=_embed_progress if progress is not None else None)
    finally:
        if progress is not None:
            sys.stderr.write("\r\033[K")
    sys.stdout.write("".join(f"{line}\n" for line in sync_lines(report)))
    sys.stdout.flush()
    failures = report.failures
    if not failures:
        return 0
    refused = sum(1 for item in failures if item.outcome == "refused")
    what = ("failed" if not refused else "refused" if refused == len(failures)
            else "failed or were refused")
    fix = ("fix those and run sync again" if not refused else
           "a refused one names an index your configuration does not: configure it, or "
           "accept the project's by hand with --trust-project-index")
    print(f"error: {len(failures)} of {len(report.items)} packages {what} (listed above); "
          f"the others are synced: {fix}", file=sys.stderr)
    return failures[0].exit_code or 1


def _progress(done: int, total: int, key: str) -> None:
    sys.stderr.write(f"\r\033[K  [{done}/{total}] {key}")
    sys.stderr.flush()


def _embed_progress(done: int, total: int) -> None:
    """After the caches are committed: sections through the embedding model."""
    sys.stderr.write(f"\r\033[K  embedding {done:,}/{total:,} sections")
    sys.stderr.flush()
