"""The step after an answer: a cache's outline, and sections read by id.

``resolve`` returns the sections that fit its budget, whole or as marked excerpts; these
two let an agent see what a cache holds and read what an answer points to
(docs/formats.md, "Outline and read" has the bytes):

- :func:`outline`: the cache's files in path order, each with its sections in file order
  (id, heading, depth, tokens), narrowed to the files whose path starts with ``prefix``
  and to headings at most ``depth`` deep; ``cursor`` (a section id) starts the listing
  there. What the budget cuts is said in ``outline.next``: the cursor to ask with next.
- :func:`read`: section ``id`` whole (scope ``section``), every section of its file in
  order (``page``), or the sections just before and after it in its file
  (``neighbours``); each document carries the ``source`` object of a ``resolve`` answer.
  A section that does not fit whole is returned as its first lines that fit, marked as
  ``resolve`` marks an excerpt (``source.excerpt``), and ``read.next_line`` is the line
  to ask from next (same id and scope, ``line``): the rest is read in steps, never lost.

The budget bounds the whole answer as ``resolve``'s does (``search.packing``), with the
same charges: the summary object at 9/8 of its estimate with its numbers at their widest,
each document ``doc_charge`` (its JSON's estimate and 1/8 of its content's), each outline
entry ``charge`` of its JSON (9/8) and one token for its comma; they add up to at most
the budget. The answer as rendered is checked last, ``estimate_tokens(text) <= budget``,
its last entry dropped while it is not (never seen on the sample caches). Only a budget
below the summary's own charge gives an answer over it: no entry, the summary, and the
cursor or line to ask again with. Nothing is skipped
to fill the budget: what is listed is a contiguous run, so ``next`` and ``next_line``
resume exactly where it stopped.

On a Context Engine v0 cache (documents, not sections of files) each document is one
file holding one untitled section at depth 0: the outline lists them by id, a read
returns a document whole or its first lines (``source``: its id as ``file``, ``title``
``""``, ``path`` ``[]``, its lines), and it has no neighbours; ``tokens`` are the v0
count (``ceil(bytes/4)``), as its ``resolve`` answers give them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..foundation.errors import CacheInvalid, QueryError
from ..foundation.printable import printable
from ..foundation.strict_json import dumps
from ..indexer.tokens import estimate_tokens
from ..store.v0_cache import V0Cache
from .budget import check_budget
from .packing import MARGIN, charge, doc_charge
from .provenance import Lines, heading_path, line_count, section_source, split_lines
from .results import (
    READ_SCOPES,
    Outline,
    OutlineFile,
    OutlineSection,
    OutlineSummary,
    ReadDocument,
    Reading,
    ReadSummary,
)
from .tools import spec_errors, with_loaded

if TYPE_CHECKING:
    from ..store.native_cache import NativeCache
    from .warm_caches import WarmCaches

SCOPES = READ_SCOPES
DEFAULT_BUDGET = 2000
MAX_ARGUMENT_BYTES = 4096  # an id, prefix or cursor (ids are slugs of one heading)
_DEPTH_MEMO = "navigation-depths"
_WIDEST_LINE = 10**9  # what next_line is charged as before it is known


class NavigationError(QueryError):
    """An outline or read argument that names nothing: the message says which and what to
    ask instead (no path: MCP clients are told it too)."""

    def __init__(self, message: str) -> None:
        super().__init__(f"Query is invalid: {message}", detail=message)


def _shown(text: str) -> str:
    """An argument quoted for a message: at most 80 characters, controls escaped."""
    cut = text if len(text) <= 80 else text[:77] + "..."
    return f"'{cut}'" if cut.isprintable() else printable(cut)


# The two kinds of cache as one view: ids, files, tokens, titles, depths, text, source.


class _NativeView:
    def __init__(self, cache: NativeCache) -> None:
        self.cache = cache
        table = cache.sections
        self.ids, self.files, self.tokens = table.ids, table.files, table.tokens
        self._lines = Lines(cache)

    def title(self, i: int) -> str:
        title = self.cache.sections.titles[i]
        if not isinstance(title, str):
            raise CacheInvalid(detail="section title is not a string")
        return title

    def depths(self) -> list[int]:
        """Per section, the titled headings of its heading path (per loaded cache)."""
        memo = self.cache.index.memo
        got = memo.get(_DEPTH_MEMO)
        if got is None:
            got = memo[_DEPTH_MEMO] = heading_depths(self.cache)
        return got

    def text(self, i: int) -> str:
        return self.cache.section_text(i)

    def source(self, i: int, text: str) -> Any:
        path = heading_path(self.cache, i)
        return section_source(self.cache, i, path, self._lines.first_line(i), text)


class _V0View:
    def __init__(self, cache: V0Cache) -> None:
        self.documents = cache.documents
        self.ids = self.files = [doc.id for doc in cache.documents]
        self.tokens = [-(-len(doc.content.encode("utf-8")) // 4) for doc in cache.documents]

    def title(self, i: int) -> str:
        return ""

    def depths(self) -> list[int]:
        return [0] * len(self.ids)

    def text(self, i: int) -> str:
        return self.documents[i].content

    def source(self, i: int, text: str) -> Any:
        return {"file": self.ids[i], "title": "", "path": [], "lines": [1, line_count(text)]}


_View = _NativeView | _V0View


def _view(cache: Any) -> _View:
    return _V0View(cache) if isinstance(cache, V0Cache) else _NativeView(cache)


def heading_depths(cache: NativeCache) -> list[int]:
    """Per section, how many titled headings its heading path holds (``len(source.path)``
    but for a file's untitled text before its first heading, which is 0), in one pass: a
    parent is an earlier section of the same file (``provenance.heading_path``'s rule,
    cache_invalid otherwise)."""
    table = cache.sections
    depths: list[int] = []
    seen: dict[str, int] = {}
    file = None
    for section_id, this_file, title, parent in zip(table.ids, table.files, table.titles,
                                                    table.parents):
        if this_file is not file:
            file, seen = this_file, {}
        if not isinstance(title, str):
            raise CacheInvalid(detail="section title is not a string")
        depth = 1 if title else 0
        if parent is not None:
            if not isinstance(parent, str) or parent not in seen:
                raise CacheInvalid(detail="section parent is not an earlier section")
            depth += seen[parent]
        seen[section_id] = depth
        depths.append(depth)
    return depths


def _check_text(value: object, what: str, *, empty: bool = True) -> str:
    if not isinstance(value, str) or (not empty and not value):
        raise NavigationError(f"{what} must be {'a' if empty else 'a non-empty'} string")
    try:
        size = len(value.encode("utf-8"))
    except UnicodeEncodeError:
        raise NavigationError(f"{what} is not valid UTF-8") from None
    if size > MAX_ARGUMENT_BYTES:
        raise NavigationError(f"{what} is over {MAX_ARGUMENT_BYTES} bytes")
    return value


def _check_whole(value: object, what: str, least: int) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise NavigationError(f"{what} must be a whole number from {least}")
    return value


# outline ------------------------------------------------------------------------------


@spec_errors
def outline(cache_dir: Path, prefix: str = "", budget: object = DEFAULT_BUDGET, *,
            depth: object = None, cursor: object = None,
            warm: WarmCaches | None = None) -> Outline:
    """The files and headings of the cache at ``cache_dir`` within ``budget`` tokens
    (module docstring). BudgetError first, then NavigationError for an argument, then
    the cache's errors, as ``tools.answer``."""
    checked = check_budget(budget)
    _check_text(prefix, "prefix")
    wanted_depth = _check_whole(depth, "depth", 0)
    if cursor is not None:
        _check_text(cursor, "cursor", empty=False)
    return with_loaded(cache_dir, lambda cache: _outline(
        _view(cache), prefix, checked, wanted_depth, cursor), warm)


def _outline(view: _View, prefix: str, budget: int, depth: int | None,
             cursor: Any) -> Outline:
    depths = view.depths()
    files, ids = view.files, view.ids
    rows = [i for i, file in enumerate(files)
            if file.startswith(prefix) and (depth is None or depths[i] <= depth)]
    start = 0
    if cursor is not None:
        found = next((k for k, i in enumerate(rows) if ids[i] == cursor), None)
        if found is None:
            raise NavigationError(f"the cursor {_shown(cursor)} is no section of this "
                                  "outline (the cache was rebuilt?): ask without a cursor")
        start = found
    summary: OutlineSummary = {
        "prefix": prefix, "depth": depth, "cursor": cursor, "budget": budget,
        "files": len({files[i] for i in rows}), "sections": len(rows), "listed": len(rows),
        "next": max((ids[i] for i in rows), key=len, default=None)}  # at its widest
    left = budget - charge(dumps({"files": [], "outline": summary}))
    totals = _file_tokens(view)
    listed: list[OutlineFile] = []
    count = 0
    for i in rows[start:]:
        entry: OutlineSection = {"id": ids[i], "title": view.title(i), "depth": depths[i],
                                 "tokens": view.tokens[i]}
        cost = charge(dumps(entry)) + 1
        new_file = not listed or listed[-1]["file"] != files[i]
        if new_file:
            cost += charge(dumps({"file": files[i], "tokens": totals[files[i]],
                                  "sections": []})) + 1
        if cost > left:
            break
        left -= cost
        if new_file:
            listed.append({"file": files[i], "tokens": totals[files[i]], "sections": []})
        listed[-1]["sections"].append(entry)
        count += 1
    return _fit_outline(listed, summary, [ids[i] for i in rows[start:]], count)


def _fit_outline(listed: list[OutlineFile], summary: OutlineSummary, ids: list[str],
                 count: int) -> Outline:
    """The outline with its true counts, its last entries dropped while the rendered
    answer's charge is over the budget."""
    while True:
        summary["listed"] = count
        summary["next"] = ids[count] if count < len(ids) else None
        answer = Outline(listed, summary)
        if count == 0 or estimate_tokens(outline_text(answer)) <= summary["budget"]:
            return answer
        listed[-1]["sections"].pop()
        if not listed[-1]["sections"]:
            listed.pop()
        count -= 1


def _file_tokens(view: _View) -> dict[str, int]:
    totals: dict[str, int] = {}
    for file, tokens in zip(view.files, view.tokens):
        totals[file] = totals.get(file, 0) + tokens
    return totals


def outline_text(answer: Outline) -> str:
    """The outline's JSON text (what every door prints or sends)."""
    return dumps({"files": answer.files, "outline": answer.outline})


# read ---------------------------------------------------------------------------------


@spec_errors
def read(cache_dir: Path, section_id: object, scope: object = "section",
         budget: object = DEFAULT_BUDGET, *, line: object = None,
         warm: WarmCaches | None = None) -> Reading:
    """Section ``section_id`` of the cache at ``cache_dir`` whole, its page or its
    neighbours (``scope``), from file line ``line`` on, within ``budget`` tokens (module
    docstring). BudgetError first, then NavigationError for an argument or an id no
    section has, then the cache's errors."""
    checked = check_budget(budget)
    wanted = _check_text(section_id, "id", empty=False)
    if scope not in SCOPES:
        raise NavigationError(f"scope must be one of {', '.join(SCOPES)}")
    start = _check_whole(line, "line", 1)
    return with_loaded(cache_dir, lambda cache: _read(
        _view(cache), wanted, str(scope), checked, start), warm)


def _read(view: _View, section_id: str, scope: str, budget: int,
          line: int | None) -> Reading:
    try:
        d = view.ids.index(section_id)
    except ValueError:
        raise NavigationError(f"no section has the id {_shown(section_id)} in this cache; "
                              "the outline lists the ids") from None
    page = [i for i, file in enumerate(view.files) if file == view.files[d]]
    at = page.index(d)
    order = {"section": [d], "page": page,
             "neighbours": page[max(at - 1, 0):at] + page[at + 1:at + 2]}[scope]
    reader = _Reader(view, {
        "id": section_id, "scope": scope, "line": line, "budget": budget,
        "tokens_used": budget, "documents_selected": len(order),
        "sections_in_scope": len(order), "next_line": _WIDEST_LINE})
    reached = False
    for s in order:
        taken = reader.take(s, line)
        reached = reached or taken is not None
        if taken is False:
            break
    if line is not None and not reached and order:
        raise NavigationError(f"line {line} is past the end of this {scope}")
    return reader.result()


class _Reader:
    """The documents of one read, in order, within the budget."""

    def __init__(self, view: _View, summary: ReadSummary) -> None:
        self.view = view
        self.summary = summary
        self.left = summary["budget"] - charge(dumps({"documents": [], "read": summary}))
        self.documents: list[ReadDocument] = []
        self.starts: list[int] = []  # the first line each document holds
        self.next_line: int | None = None

    def take(self, s: int, line: int | None) -> bool | None:
        """Add section ``s`` (from ``line`` on): True when it went in whole or to its end,
        False when the budget stopped the read (``next_line`` set), None when ``line`` is
        past it."""
        text = self.view.text(s)
        source = self.view.source(s, text)
        first, last = source["lines"]
        if line is not None and last < line:
            return None
        skip = 0 if line is None else max(line - first, 0)
        if skip == 0:
            doc: ReadDocument = {"id": self.view.ids[s], "content": text,
                                 "tokens": self.view.tokens[s], "source": source}
            cost = doc_charge(dict(doc))
            if cost <= self.left:
                self._add(doc, cost, first)
                return True
        lines = split_lines(text)[skip:]
        found = self._excerpt(s, lines, first + skip, source)
        if found is None:
            self.next_line = first + skip
            return False
        doc, cost, shown = found
        if self.documents and 2 * doc["tokens"] < cost:
            self.next_line = first + skip  # crumbs after the first document: read it next
            return False
        self._add(doc, cost, first + skip)
        if shown < len(lines):
            self.next_line = first + skip + shown
            return False
        return True

    def _add(self, doc: ReadDocument, cost: int, start: int) -> None:
        self.left -= cost
        self.documents.append(doc)
        self.starts.append(start)

    def _excerpt(self, s: int, lines: list[str], start: int,
                 source: Any) -> tuple[ReadDocument, int, int] | None:
        """The most of ``lines`` (from file line ``start``) that fits, as a marked excerpt
        of section ``s``: (document, its charge, lines shown), or None when not one line
        fits. Lines are summed by their own estimates up to what is left, then the
        document's real charge decides (largest count that fits, by bisection)."""
        def document(k: int) -> tuple[ReadDocument, int]:
            content = "".join(lines[:k])
            cut: Any = dict(source, excerpt={"lines": [start, start + k - 1],
                                             "of_tokens": self.view.tokens[s]})
            doc: ReadDocument = {"id": self.view.ids[s], "content": content,
                                 "tokens": estimate_tokens(content), "source": cut}
            return doc, doc_charge(dict(doc))

        high = _lines_within(lines, self.left)
        low = 0  # document(low) fits (0: nothing shown)
        while low < high:
            mid = (low + high + 1) // 2
            if document(mid)[1] <= self.left:
                low = mid
            else:
                high = mid - 1
        if low == 0:
            return None
        doc, cost = document(low)
        return doc, cost, low

    def result(self) -> Reading:
        """The reading with its true counts, its last document dropped while the rendered
        answer's estimate is over the budget (then read from that document's first line)."""
        summary = self.summary
        while True:
            summary["tokens_used"] = sum(doc["tokens"] for doc in self.documents)
            summary["documents_selected"] = len(self.documents)
            summary["next_line"] = self.next_line
            answer = Reading(self.documents, summary)
            if not self.documents or estimate_tokens(reading_text(answer)) <= summary["budget"]:
                return answer
            self.documents.pop()
            self.next_line = self.starts.pop()


def _lines_within(lines: list[str], left: int) -> int:
    """How many of ``lines`` fit in ``left`` tokens, counting each line's JSON-escaped
    estimate with the 9/8 margin (an upper bound for the bisection: stops at the first
    line past it, so a huge section costs what the budget can hold, not its size)."""
    num, den = MARGIN
    total = 0
    for k, text in enumerate(lines):
        total += -(-estimate_tokens(json.dumps(text, ensure_ascii=False)[1:-1]) * num // den)
        if total > left:
            return k
    return len(lines)


def reading_text(answer: Reading) -> str:
    """The reading's JSON text (what every door prints or sends)."""
    return dumps({"documents": answer.documents, "read": answer.read})



@spec_errors
def section_ids(cache_dir: Path, *, warm: WarmCaches | None = None) -> list[str]:
    """Every section id of the cache at ``cache_dir``, in outline order (MCP completions
    of a section template's ``id``)."""
    return with_loaded(cache_dir, lambda cache: list(_view(cache).ids), warm)
