"""The sections of a loaded native cache, kept in columns instead of one dict per section.

A warm server holds every section of every loaded cache. As parsed JSON, a 41,640-section
cache (fastapi-docs x20, a 27 MB manifest) held 93 MiB of section dicts, half of it the
``keywords`` lists; in columns it holds 19 MiB (``bench/serve_memory.py breakdown``):

- ``summary`` and ``keywords`` (:data:`UNREAD_FIELDS`) are not kept: nothing that reads a
  loaded cache uses them (they are for people and other tools reading the manifest);
- ``byte_offset`` and ``byte_length`` are uint32 arrays (the loader checked them, see
  ``store.manifest.section_problem``: their sum is at most 1 GiB);
- ``file`` and ``parent`` share one string object per distinct value (a parent is the id
  of another section);
- every other field keeps its JSON value as parsed (nothing else is checked, so nothing
  else may be narrowed), fields the store does not write ride in a sparse map.

``table[i]`` is section ``i`` as a new dict with the fields kept, in the store's field
order, then any other fields in their manifest order; a field the manifest entry lacked
is absent, as it was from the parsed dict.
"""

from __future__ import annotations

import sys
from array import array
from collections.abc import Iterator, Sequence
from typing import Any, overload

from .manifest import SECTION_FIELDS, section_problem

UNREAD_FIELDS = ("summary", "keywords")
_KEPT = tuple(f for f in SECTION_FIELDS if f not in UNREAD_FIELDS)
_FIELDS = frozenset(SECTION_FIELDS)
_ABSENT: Any = object()  # an unchecked field the section entry did not have


class _AnyFile:
    """Every file name: what a section's file is checked against while ``doc_files`` may
    not be known yet (that check is done at the end)."""

    def __contains__(self, name: object) -> bool:
        return True


_ANY_FILE: Any = _AnyFile()
# Per-section cost of what resolve derives once per loaded cache and keeps with it
# (``SearchIndex.memo``: three field normalizations, a prior, a file number, as list
# slots), counted in the cache's memory estimate.
MEMO_BYTES_PER_SECTION = 48


def deep_size(value: Any) -> int:
    """The bytes a parsed JSON value holds, everything in it counted once per reference."""
    total, stack = 0, [value]
    while stack:
        item = stack.pop()
        total += sys.getsizeof(item)
        if isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return total


class SectionTable(Sequence[dict[str, Any]]):
    """Sections in manifest order; filled by :class:`SectionTableBuilder`."""

    def __init__(self) -> None:
        self.ids: list[str] = []
        self.files: list[str] = []
        self.paths: list[Any] = []
        self.titles: list[Any] = []
        self.depths: list[Any] = []
        self.parents: list[Any] = []
        self.line_counts: list[Any] = []
        self.byte_offsets = array("I")
        self.byte_lengths = array("I")
        self.versions: list[str] = []
        self.tokens: list[int] = []
        self.others: dict[int, dict[str, Any]] = {}  # fields the store does not write
        self.some_absent = False  # an unchecked field is missing from some entry
        self.memory_bytes = 0  # estimated, see SectionTableBuilder

    def __len__(self) -> int:
        return len(self.ids)

    @overload
    def __getitem__(self, i: int) -> dict[str, Any]: ...

    @overload
    def __getitem__(self, i: slice) -> list[dict[str, Any]]: ...

    def __getitem__(self, i: int | slice) -> dict[str, Any] | list[dict[str, Any]]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        row = {
            "id": self.ids[i], "file": self.files[i], "path": self.paths[i],
            "title": self.titles[i], "depth": self.depths[i], "parent": self.parents[i],
            "line_count": self.line_counts[i], "byte_offset": self.byte_offsets[i],
            "byte_length": self.byte_lengths[i], "version": self.versions[i],
            "tokens": self.tokens[i],
        }
        if self.some_absent:
            row = {k: v for k, v in row.items() if v is not _ABSENT}
        if self.others:
            extra = self.others.get(i if i >= 0 else i + len(self))
            if extra:
                row.update(extra)
        return row

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for i in range(len(self)):
            yield self[i]


class SectionTableBuilder:
    """Appends manifest section entries to a :class:`SectionTable` as they are parsed.

    Each entry is checked as ``store.manifest.section_problem`` checks it; the first
    problem is kept in ``problem`` and nothing is added after it: the cache is invalid, its
    loader reports it in its own order. ``doc_files`` may come
    after the sections in a manifest, so that a section's file is listed is checked at the
    end (:meth:`finish`)."""

    def __init__(self) -> None:
        self.table = SectionTable()
        self.problem: str | None = None
        self._shared: dict[str, str] = {}  # one object per distinct file name or id
        self._bytes = 0

    def add(self, entry: Any) -> None:
        if self.problem is not None:
            return
        problem = section_problem(entry, _ANY_FILE)
        if problem:
            self.problem = problem
            return
        t = self.table
        shared = self._shared
        section_id = entry["id"]
        section_id = shared.setdefault(section_id, section_id)
        file = entry["file"]
        file = shared.setdefault(file, file)
        parent = entry.get("parent", _ABSENT)
        if isinstance(parent, str):
            if parent not in shared:  # (a parent is an earlier section's id, shared)
                self._bytes += sys.getsizeof(parent)
            parent = shared.setdefault(parent, parent)
        t.ids.append(section_id)
        t.files.append(file)
        t.paths.append(entry.get("path", _ABSENT))
        t.titles.append(entry.get("title", _ABSENT))
        t.depths.append(entry.get("depth", _ABSENT))
        t.parents.append(parent)
        t.line_counts.append(entry.get("line_count", _ABSENT))
        t.byte_offsets.append(entry["byte_offset"])
        t.byte_lengths.append(entry["byte_length"])
        t.versions.append(entry["version"])
        t.tokens.append(entry["tokens"])
        if entry.keys() != _FIELDS:
            self._unusual(entry)
        # The objects a section alone holds: its id, path, title and version strings (its
        # numbers are counted in finish), and whatever an unchecked field holds instead (a
        # hostile manifest's lists, for the memory budget).
        size = sys.getsizeof
        self._bytes += size(section_id) + deep_size(t.paths[-1]) + deep_size(
            t.titles[-1]) + size(t.versions[-1])
        for number in (t.depths[-1], t.line_counts[-1]):
            if type(number) is not int:
                self._bytes += deep_size(number)

    def _unusual(self, entry: dict[str, Any]) -> None:
        """An entry without some unchecked field, or with fields the store does not write."""
        t = self.table
        if any(f not in entry for f in _KEPT):
            t.some_absent = True
        extra = {k: v for k, v in entry.items() if k not in SECTION_FIELDS}
        if extra:
            t.others[len(t) - 1] = extra
            self._bytes += deep_size(extra)

    def finish(self, doc_files: set[str]) -> SectionTable:
        """The table, with ``problem`` set when a section's file is not in ``doc_files``."""
        t = self.table
        # The table holds the sections before the first problem, so an unlisted file among
        # them comes first, as a check of the sections in order would find.
        if not set(t.files) <= doc_files:
            self.problem = "section of a file that is not in doc_files"
        self._shared.clear()
        n = len(t)
        # 9 list slots, 2 array items and 2 int objects (line count, tokens) per section.
        t.memory_bytes = (self._bytes + (8 * 9 + 4 * 2 + 32 * 2 + MEMO_BYTES_PER_SECTION) * n
                          + sum(sys.getsizeof(f) for f in set(t.files)))
        return t
