"""A build's one-screen summary (``doc-index build`` and the git hook's log print it)."""

from __future__ import annotations

from ..foundation.printable import printable
from ..sources.docs_folder import kinds_line
from ..store.index_store import BuildReport

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
    lines += expansion_lines(report)
    lines.append(f"  sections: {report.sections} ({report.tokens} tokens)")
    if report.meaning is not None:
        lines.append(f"  meaning: {printable(report.meaning)}")
    lines.append(f"  time: {seconds:.2f} s")
    return lines


SHOWN_REASONS = 3


def expansion_lines(report: BuildReport) -> list[str]:
    """What expanding the parsed pages did: autodoc directives documented and not found,
    includes inlined and left as notes, with the most frequent reasons."""
    counts = report.expansion
    lines = []
    missing = sum(counts.not_found.values())
    if counts.documented or missing:
        line = (f"  autodoc: {counts.documented} documented ({counts.objects} objects), "
                f"{missing} not found")
        lines.append(line + _reasons(counts.not_found))
    if counts.includes:
        notes = sum(counts.notes.values())
        line = f"  includes: {counts.includes - notes} inlined, {notes} left as notes"
        lines.append(line + _reasons(counts.notes))
    return lines


def _reasons(reasons: dict[str, int]) -> str:
    """``: 3 no such module; 1 no such object`` (the most frequent first), or ""."""
    if not reasons:
        return ""
    top = sorted(reasons.items(), key=lambda item: (-item[1], item[0]))
    shown = "; ".join(f"{n} {printable(reason)}" for reason, n in top[:SHOWN_REASONS])
    more = f"; {len(top) - SHOWN_REASONS} more reasons" if len(top) > SHOWN_REASONS else ""
    return f": {shown}{more}"
