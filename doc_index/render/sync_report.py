"""``doc-index sync``'s report: the plan (``--dry-run``) or what was done, one line per
cache, the failures again at the end."""

from __future__ import annotations

from ..foundation.printable import printable
from ..store.sources.package_sync import SyncReport


def sync_lines(report: SyncReport) -> list[str]:
    """The report for people, every name escaped (``printable``)."""
    files = ", ".join(report.files) or "no lockfile"
    head = "plan" if report.dry_run else "sync"
    lines = [f"{head} {printable(str(report.project))}: {len(report.items)} "
             f"cache{'s' if len(report.items) != 1 else ''} from {printable(files)}"]
    lines += [f"  warning: {printable(w)}" for w in report.warnings]
    width = max((len(item.key) for item in report.items), default=0)
    for item in report.items:
        state = item.action if report.dry_run or item.outcome is None else item.outcome
        detail = item.reason if report.dry_run or not item.message else item.message
        if item.outcome == "failed":
            detail = f"{item.reason}: {item.message}" if report.dry_run else "see below"
        lines.append(f"  {state:<10} {printable(item.key).ljust(width)}  ({printable(detail)})")
    if not report.dry_run:
        counts = [f"{report.count(o)} {o}" for o in ("kept", "built", "up to date", "pruned",
                                                    "failed") if report.count(o)]
        lines.append(f"done: {', '.join(counts) or 'nothing to do'}")
    if report.meaning is not None:
        lines.append(f"meaning: {printable(report.meaning)}")
    for item in report.failures:
        lines.append(f"failed: {printable(item.spec)}: {printable(item.message or '')}")
    return lines


__all__ = ["sync_lines"]
