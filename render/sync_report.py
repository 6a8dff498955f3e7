"""``doc-index sync``'s report: the plan (``--dry-run``) or what was done, where each
ecosystem's packages come from, one line per cache, the refusals and failures again at the
end."""

from __future__ import annotations

from ..foundation.printable import printable
from ..sources.identity import NOT_REACHED
from ..sync import SyncReport


def sync_lines(report: SyncReport) -> list[str]:
    """The report for people, every name escaped (``printable``)."""
    files = ", ".join(report.files) or "no lockfile"
    head = "plan" if report.dry_run else "sync"
    lines = [f"{head} {printable(str(report.project))}: {len(report.items)} "
             f"cache{'s' if len(report.items) != 1 else ''} from {printable(files)}"]
    lines += [f"  {line}" for line in report.indexes]
    lines += [f"  warning: {printable(w)}" for w in report.warnings]
    width = max((len(item.key) for item in report.items), default=0)
    for item in report.items:
        state = item.action if report.dry_run or item.outcome is None else item.outcome
        detail = item.reason if report.dry_run or not item.message else item.message
        if item.outcome == "refused":
            detail = item.reason if report.dry_run else "see below"
        elif item.outcome == "failed":
            detail = f"{item.reason}: {item.message}" if report.dry_run else "see below"
        elif item.note and not report.dry_run:
            detail += f"; {item.note}"
        lines.append(f"  {state:<10} {printable(item.key).ljust(width)}  ({printable(detail)})")
    if not report.dry_run:
        counts = [f"{report.count(o)} {o}" for o in ("kept", "built", "up to date", "pruned",
                                                    "refused", "failed") if report.count(o)]
        lines.append(f"done: {', '.join(counts) or 'nothing to do'}{_without_docs(report)}")
    if report.meaning is not None:
        lines.append(f"meaning: {printable(report.meaning)}")
    for item in report.failures:
        lines.append(f"{item.outcome}: {printable(item.spec)}: {printable(item.message or '')}")
    return lines


def _without_docs(report: SyncReport) -> str:
    """`` (9 without a docs folder: 7 docs repository not reached)``: the caches kept or
    built with README-like files and API pages only, and how many of them for want of
    their repository (the cause a person can fix: a network, a mirror); or ""."""
    notes = [item.note for item in report.items if item.note and item.outcome != "failed"]
    if not notes:
        return ""
    unreached = sum(1 for note in notes if note.startswith(NOT_REACHED))
    return f" ({len(notes)} without a docs folder" + (
        f": {unreached} {NOT_REACHED})" if unreached else ")")


__all__ = ["sync_lines"]
