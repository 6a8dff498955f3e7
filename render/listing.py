"""``doc-index list`` and ``inspect`` for people, and their ``--json`` for scripts.

Renders :class:`~doc_index.search.cache_details.CacheDetails` (``Cache.info``); every name
and location is escaped (``printable``). The ``context`` CLI and MCP keep the spec's
outputs (``render.spec_json``); these are doc-index's own.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..foundation.printable import printable
from ..meaning_status import MeaningStatus
from ..search.cache_details import NATIVE, V0, CacheDetails
from ..sources.identity import PACKAGE_KINDS, shown_source

_COLUMNS = ("NAME", "SOURCE", "REF", "COMMIT", "SECTIONS", "TOKENS", "SIZE", "AGE")
_RIGHT = {"SECTIONS", "TOKENS", "SIZE"}


def list_json(caches: Sequence[CacheDetails]) -> str:
    """``list --json``: ``{"caches": [<details>, ...]}``, in the order of ``list``."""
    return _json({"caches": [c.as_json() for c in caches]})


def details_json(cache: CacheDetails) -> str:
    """``inspect --json``: one cache's details object."""
    return _json(cache.as_json())


def _json(value: object) -> str:
    """One line of compact JSON, as every JSON output of doc-index and ``context``, with
    every character that is not printable (``str.isprintable``) as a ``\\uXXXX`` escape:
    json.dumps escapes C0 only, and a manifest's names and locations are untrusted (a raw
    U+009B is a CSI to a terminal that takes C1 controls, U+2028 a new line, U+202E turns
    the text after it around). Parsed, the JSON is the same."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return _NOT_PLAIN.sub(_escaped, text) + "\n"


_NOT_PLAIN = re.compile(r"[^\x20-\x7e]")  # (json.dumps has escaped C0 already)


def _escaped(match: re.Match[str]) -> str:
    char = match.group()
    if char.isprintable():
        return char
    code = ord(char)
    if code > 0xFFFF:  # JSON spells an astral character as its UTF-16 surrogate pair
        code -= 0x10000
        return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"
    return f"\\u{code:04x}"


def list_text(caches: Sequence[CacheDetails], root: Path, now: datetime | None = None,
              meaning: MeaningStatus | None = None) -> str:
    """One line per cache under a header: name, source, ref, short commit, sections,
    tokens, size (every file below the cache directory), age; then, given the
    installation's ``meaning``, one line: whether answers use it, in how many caches."""
    if not caches:
        return (f"no caches under {printable(str(root))} "
                "(doc-index build <path-or-git-url> makes one)\n")
    table = _table(caches, now)
    if meaning is None:
        return table
    return table + meaning_footer(caches, meaning) + "\n"


def meaning_footer(caches: Sequence[CacheDetails], meaning: MeaningStatus) -> str:
    """``meaning: on (...); 3 of 5 caches hold current vectors (...)`` or why not."""
    if not meaning.on:
        return printable(meaning.line())
    native = [c for c in caches if c.format == NATIVE]
    held = sum(1 for c in native if c.vectors == "current")
    rest = "" if held == len(native) else (
        ": the others answer by words until built or synced again")
    return printable(f"{meaning.line()}; {held} of {len(native)} caches hold current "
                     f"vectors{rest}")


def _table(caches: Sequence[CacheDetails], now: datetime | None) -> str:
    now = now or datetime.now(timezone.utc)
    rows = [list(_COLUMNS)] + [_row(c, now) for c in caches]
    widths = [max(len(row[i]) for row in rows) for i in range(len(_COLUMNS))]
    lines = []
    for row in rows:
        cells = [cell.rjust(w) if col in _RIGHT else cell.ljust(w)
                 for col, cell, w in zip(_COLUMNS, row, widths)]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines) + "\n"


def _row(cache: CacheDetails, now: datetime) -> list[str]:
    source = cache.source or {}
    return [
        printable(cache.name),
        source_text(cache),
        printable(source["ref"]) if source.get("ref") else "-",
        printable(cache.commit[:7]) if cache.commit else "-",
        f"{cache.sections:,}" if cache.format else "-",
        f"{cache.tokens:,}" if cache.tokens is not None else "-",
        size_text(cache.size_bytes) if cache.format else "-",
        age_text(cache.indexed_at, now),
    ]


def details_text(cache: CacheDetails, now: datetime | None = None,
                 meaning: MeaningStatus | None = None) -> str:
    """``inspect NAME`` for people: the list's fields, one per line, and the source and
    timing in full; given ``meaning`` (``Cache.meaning_status``), whether its answers use
    meaning, or why not."""
    now = now or datetime.now(timezone.utc)
    source = cache.source or {}
    kind = {NATIVE: "doc-index cache", V0: "Context Engine v0 cache"}.get(
        cache.format or "", "unknown")
    fields = [
        ("name", printable(cache.name)),
        ("format", kind),
        ("valid", "yes" if cache.valid else f"no ({printable(cache.problem or '')})"),
        ("source", source_text(cache)),
        ("ref", printable(source["ref"]) if source.get("ref") else
         "- (the default branch)" if source.get("kind") == "git" else "-"),
        ("commit", printable(cache.commit) if cache.commit else "-"),
        ("repo", printable(cache.repo) if cache.repo else "-"),
        ("sections", f"{cache.sections:,}"),
        ("tokens", f"{cache.tokens:,}" if cache.tokens is not None else "-"),
        ("size", f"{size_text(cache.size_bytes)} ({cache.size_bytes:,} bytes in all; "
                 f"total_bytes {cache.total_bytes:,}: the files at its top)"),
        ("indexed at", _when(cache.indexed_at, now)),
        ("cache_version", printable(cache.cache_version) or "-"),
    ]
    if source.get("kind") in PACKAGE_KINDS:
        fields.insert(4, ("docs", docs_text(source)))
    if meaning is not None:
        fields.append(("meaning", printable(meaning.line().removeprefix("meaning: "))))
    width = max(len(label) for label, _ in fields) + 1
    return "".join(f"{(label + ':').ljust(width)} {value}\n" for label, value in fields)


def docs_text(source: dict[str, Any]) -> str:
    """Where a package cache's docs folder came from, or what it could not get and git's
    or the tag search's reason (``inspect``'s ``docs`` line)."""
    repository = source.get("repository") or {}
    if source.get("docs_from") == "archive":
        return "the archive's docs folder"
    if source.get("docs_from") == "repository":
        commit = repository.get("commit") or ""
        text = (f"{repository.get('docs') or 'the docs folder'} of {repository.get('url')} "
                f"at tag {repository.get('tag')} (commit {commit[:12]})")
        if repository.get("docs_why"):  # a package of a monorepo: which folder, and why
            text += f": {repository['docs_why']}"
        left_out = repository.get("left_out")
        if isinstance(left_out, list) and left_out:
            text += f"; {len(left_out)} folder{'s' if len(left_out) != 1 else ''} of other " \
                    "packages left out"
        return printable(text)
    note = source.get("docs_note")
    if not note:
        return "- (not recorded by the doc-index that built it)"
    why = repository.get("why")
    return printable(f"{note}; {why}" if why else note)


def _when(indexed_at: str | None, now: datetime) -> str:
    if not indexed_at:
        return "-"
    zone = "" if indexed_at.endswith("Z") else " UTC"  # (a v0 cache's RFC 3339 says so)
    return f"{printable(indexed_at)}{zone} ({age_text(indexed_at, now)})"


def source_text(cache: CacheDetails) -> str:
    """The source column: kind and location (``git work tree /home/me/proj/docs``)."""
    if cache.format is None:
        return f"invalid: {printable(cache.problem or 'no readable manifest')}"
    if cache.format == V0:
        return "Context Engine v0 cache"
    if cache.source is None:
        if cache.problem:
            return f"unknown: {printable(cache.problem)}"
        return "not recorded (built by an older doc-index)"
    shown = shown_source({**cache.source, "ref": None})  # the ref has its own column
    return printable(shown or "")


def size_text(size: int) -> str:
    """``980 B``, ``12.3 KiB``, ``4.5 MiB``, ``1.2 GiB``."""
    value = float(size)
    for unit in ("B", "KiB", "MiB"):
        if value < 1024:
            return f"{size} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GiB"


def age_text(indexed_at: str | None, now: datetime) -> str:
    """How long ago a UTC timestamp was: ``12 s ago``, ``5 min ago``, ``3 h ago``,
    ``4 days ago``; ``-`` when it is missing or not a timestamp."""
    if not indexed_at:
        return "-"
    try:
        when = datetime.fromisoformat(indexed_at.replace("Z", "+00:00"))
    except ValueError:
        return "-"
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    seconds = int((now - when).total_seconds())
    if seconds < 0:
        return "in the future"
    for unit, span in (("days", 86400), ("h", 3600), ("min", 60)):
        if seconds >= span:
            count = seconds // span
            return f"{count} {'day' if unit == 'days' and count == 1 else unit} ago"
    return f"{seconds} s ago"


__all__ = ["age_text", "details_json", "details_text", "list_json", "list_text",
           "size_text", "source_text"]
