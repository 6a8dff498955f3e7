"""Where a selected section comes from: what the ``source`` object of a native answer holds.

``specs/context.resolve.md`` allows optional provenance after the spec's fields; each
document of a native answer carries ``source``::

    {"file": "patterns/sqlite3.rst", "title": "Easy Querying",
     "path": ["Using SQLite 3 with Flask", "Easy Querying"], "lines": [61, 96]}

``file`` is the repository-relative path of the raw file, ``title`` the section's heading,
``path`` its heading path (the titles of its ancestors, then its own; a file's untitled
root section is left out) and ``lines`` the first and last line of the section in the raw
file (1-based, inclusive; raw files keep the source's lines, ``\\r\\n`` read as one). A
section whose text the page pulled in (an included file, an autodoc docstring) adds
``origins``: where that text came from, as the build recorded it (``store.expansion``):
``[{"file": "../src/flask/helpers.py", "lines": [188, 239]}, ...]``, paths relative to the
same folder as ``file``, lines of those files; the page's own lines are listed too when
the section mixes both. A document that is an excerpt adds ``excerpt`` (see
``search.packing``). Context Engine v0 answers never carry it.

The start line is counted at resolve time, for selected sections only, as the newlines
before the section's first byte in its raw file: no build-time field, so every cache of
this index version answers with it. One ``Lines`` per answer remembers how far it counted
in each file, so sections of one file cost one pass over it, not one each.

The manifest fields read here (``title``, ``parent``) are not needed to select, so the
loader does not check them; a selected section whose title is not a string, or whose
parent is not an earlier section of its file (a loop, a missing or foreign parent), is
``cache_invalid`` (never repaired).
"""

from __future__ import annotations

from bisect import bisect_right

from ..foundation.errors import CacheInvalid
from ..store.native_cache import NativeCache


def heading_path(cache: NativeCache, d: int) -> list[str]:
    """The titles of section ``d``'s ancestors, outermost first, then its own title. The
    untitled root section of a file (its text before the first heading, such as RST
    labels) is an ancestor with no title: left out. A parent is an earlier section of the
    same file (as the build makes them), looked for backwards from its child."""
    table = cache.sections
    ids, files, titles, parents = table.ids, table.files, table.titles, table.parents
    path: list[str] = []
    current = d
    while True:
        title = titles[current]
        if not isinstance(title, str):
            raise CacheInvalid(detail="section title is not a string")
        if title or current == d:
            path.append(title)
        parent = parents[current]
        if parent is None:
            break
        file = files[current]
        j = current - 1
        while j >= 0 and files[j] == file and ids[j] != parent:
            j -= 1
        if j < 0 or files[j] != file:  # also a parent that is no string, or a loop
            raise CacheInvalid(detail="section parent is not an earlier section")
        current = j
    path.reverse()
    return path


def line_count(text: str) -> int:
    """Lines of a text: newlines, plus one for a last line without one (at least 1)."""
    return max(text.count("\n") + (0 if text.endswith("\n") else 1), 1)


def split_lines(text: str) -> list[str]:
    """The lines of a text as ``line_count`` counts them, each with its ``\\n``: only
    ``\\n`` ends a line (``str.splitlines`` also ends one at ``\\r``, ``\\f``, U+0085,
    U+2028...: an excerpt's lines counted so ran past its section and its file)."""
    lines = [line + "\n" for line in text.split("\n")]
    last = lines.pop()[:-1]
    return [*lines, last] if last else lines


class Lines:
    """First lines of sections, counted once per file and answer: per file, the byte
    offsets counted up to so far and their line numbers, so the next section of the file
    counts on from the nearest point before it."""

    def __init__(self, cache: NativeCache) -> None:
        self.cache = cache
        self._known: dict[str, tuple[list[int], list[int]]] = {}

    def first_line(self, d: int) -> int:
        table = self.cache.sections
        offsets, lines = self._known.setdefault(table.files[d], ([0], [1]))
        offset = table.byte_offsets[d]
        at = bisect_right(offsets, offset) - 1
        line = lines[at] + self.cache.newlines(d, offsets[at], offset)
        if offsets[at] != offset:
            offsets.insert(at + 1, offset)
            lines.insert(at + 1, line)
        return line


def section_source(cache: NativeCache, d: int, path: list[str], first: int,
                   text: str) -> dict[str, object]:
    """The ``source`` object of section ``d`` whole (``excerpt`` is added by whoever cuts
    it): its file, heading, heading ``path``, lines from ``first`` and its origins."""
    source: dict[str, object] = {"file": cache.sections.files[d], "title": path[-1],
                                 "path": path, "lines": [first, first + line_count(text) - 1]}
    origins = section_origins(cache, d)
    if origins is not None:
        source["origins"] = origins
    return source


MAX_ORIGINS = 16


def section_origins(cache: NativeCache, d: int) -> list[dict[str, object]] | None:
    """Section ``d``'s ``origins`` as the manifest has them, None when it has none;
    ``cache_invalid`` when they are not a short list of ``{"file": str, "lines": [int,
    int]}`` (never repaired)."""
    extra = cache.sections.others.get(d)
    if not extra or "origins" not in extra:
        return None
    origins = extra["origins"]
    if not isinstance(origins, list) or len(origins) > MAX_ORIGINS or not all(
            _is_origin(o) for o in origins):
        raise CacheInvalid(detail="section origins are not a list of file and lines")
    return [{"file": o["file"], "lines": list(o["lines"])} for o in origins]


def _is_origin(origin: object) -> bool:
    if not isinstance(origin, dict) or origin.keys() != {"file", "lines"}:
        return False
    file, lines = origin["file"], origin["lines"]
    return (isinstance(file, str) and len(file) <= 4096 and isinstance(lines, list)
            and len(lines) == 2 and all(type(n) is int and n >= 0 for n in lines))
