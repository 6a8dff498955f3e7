"""A build's one-screen summary (``doc-index build`` and the git hook's log print it)."""

from __future__ import annotations

from ..foundation.printable import printable
from ..store.index_store import BuildReport
from ..store.sources.docs_folder import kinds_line

SHOWN_SKIPPED = 20


def summary_lines(report: BuildReport, seconds: float) -> list[str]:
    """The one-screen build summary, every name escaped (``printable``)."""
    state = "built" if report.written else "up to date"
    kind = " (full)" if report.full and report.written else ""
    lines = [f"{printable(report.key)}: {state}{kind} -> {printable(report.cache_dir)}"]
    lines += [f"  {printable(line)}" for line in report.about]
    lines.append(f"  files: {len(report.added)} added, {len(report.changed)} changed, "
                 f"{len(report.removed)} removed, {len(report.unchanged)} unchanged, "
                 f"{len(report.skipped)} skipped")
    kinds = kinds_line(report.kinds)
    if kinds:
        lines.append(f"  {kinds}")
    lines += [f"  skipped {printable(path)}: {printable(reason)}"
              for path, reason in report.skipped[:SHOWN_SKIPPED]]
    if len(report.skipped) > SHOWN_SKIPPED:
        lines.append(f"  ... and {len(report.skipped) - SHOWN_SKIPPED} more skipped")
    lines += [f"  note {printable(path)}: {printable(note)}"
              for path, note in report.notes[:SHOWN_SKIPPED]]
    if len(report.notes) > SHOWN_SKIPPED:
        lines.append(f"  ... and {len(report.notes) - SHOWN_SKIPPED} more notes")
    lines.append(f"  sections: {report.sections} ({report.tokens} tokens)")
    if report.meaning is not None:
        lines.append(f"  meaning: {printable(report.meaning)}")
    lines.append(f"  time: {seconds:.2f} s")
    return lines
