"""Filling the token budget of a native answer: the whole answer stays within it.

``select`` ranks the selectable sections; :class:`Packer` takes them in that order and
decides, for each, whether it goes in whole, as an excerpt, or not at all:

1. Charge: the selection object is charged ``ceil(9/8 x estimate_tokens(its JSON))``
   with its numbers at their widest (``tokens_used`` = budget, the document counters =
   ``documents_considered``); each document ``estimate_tokens`` of the exact compact JSON
   the agent receives (id, version, content with its JSON escapes, score, tokens, why,
   source) plus ``ceil(tokens / 8)``. Why 1/8 of the content: JSON-escaped section text is
   under-counted by ``indexer.tokens.estimate_tokens`` by at most about 12 % (cl100k and
   o200k, every section of more than 200 tokens of the corpora; median +1 %), while the
   metadata (ids, hashes, numbers, keys) is over-counted (median +8 %, worst -5 %). So the
   charges of an answer add up to at most the budget, and its real token count stays
   under it (``bench/answer_tokens.py`` measures it). ``tokens`` and ``tokens_used`` keep
   their spec meaning (the stored estimate of the content), so ``tokens_used`` < budget.
2. Whole: the answer's first document goes in whole when its charge fits what is left;
   any later one when it also fits ``LATER_SHARE`` (2/5) of the budget. A long section
   further down a ranking would otherwise take the room of the next two or three: at
   budget 2,000 (about 240 tokens of metadata a document) an answer holds three or four
   documents, and on the blind dependency questions the first section holding the answer
   ranked 3rd to 8th in a third of the misses. Measured at budget 2,000: dependency dev
   half answered 107 -> 111 of 167 (5 gained, 1 lost; 101 -> 105 on the caches built
   without the repositories), budget-hit fresh-1 0.60 -> 0.65, fresh-2 unchanged (click
   -1, sqlalchemy +1), dev unchanged; at 500 and 8,000 no budget-hit moved. Shares of 0.35
   to 0.5 score alike; capping the first document too lost answers (3 to 6: its whole
   text is the likeliest answer).
3. Excerpt: a section that does not go in whole is cut to the window of its text that
   holds the most query-term occurrences (ties: the earliest) and fits: for the answer's
   first document half of what is left, so that the next-ranked sections keep the other
   half, since the best-ranked section is not always the answer (measured at budget 2,000
   on the dev, fresh-1 and fresh-2 questions: budget-hit 83 -> 87 of 118; unchanged at 500
   and 8,000); for a later one ``LATER_SHARE`` of the budget (or what is left, if less).
   The answer's first document may take all that is left when half would not hold
   content as large as its metadata.
   Only the section's first ``EXCERPT_SCAN_CHARS`` characters (whole lines) are searched.
   Windows are runs of blocks: a block starts at a line that follows a blank line and is
   not indented, outside fenced code (so a paragraph, a list, an indented or fenced code
   block stays whole); when no such window fits, of lines that start at the left margin
   outside fenced code (never mid-line, never inside a code block). An excerpt with no
   query-term occurrence is not returned, nor, below the answer's first document, one
   whose content is smaller than its own metadata's charge (crumbs do not earn their
   tokens; the first document is the best answer there is, at any size). Its document
   keeps the section's ``id``, ``version`` (an agent fetches the whole section by it) and
   ``score``; ``content`` is the excerpt, ``tokens`` its estimate and ``why`` counts in
   it; ``source.lines`` stays the section's range and ``source.excerpt`` = ``{"lines":
   [first, last], "of_tokens": <the section's tokens>}``.
4. Last or not at all: a section whose text is only its heading never takes budget, nor
   a table of contents: a section holding a ``toctree`` directive (the index says which)
   whose text beyond its heading is only ``toctree`` directives (RST or MyST) and list
   items that are a bare link; the pages it names are sections of their own. A short
   section (at most ``empty_terms`` terms beyond its heading, the ranking's "near-empty"
   rule: ``## timeout`` / ``Seconds to wait.``) is offered after all the others, in its
   ranking order, into what they left: its metadata costs more than its text, so it
   never takes the place of a longer match, but an answer is never empty while a
   matching section fits. Sections under the relevance floor never reach the packer
   (``rank_concepts``).
5. Counted: a section that goes in neither whole nor as an excerpt counts in
   ``documents_excluded_by_budget``, so an answer with no document but a positive count
   says that sections matched and the budget was too small for them. A budget smaller
   than the selection object's charge takes no document at all.

Everything is integer arithmetic over the text (``estimate_tokens``), so the same cache
and arguments give the same bytes anywhere. Speed: a section is read only when the least
its metadata can cost (from the manifest, remembered per loaded cache) leaves room for it
whole or for an excerpt, so the long tail of a ranking costs a lookup per section; it is
read once (text and heading path); a document is priced from its parts, never rendered
(``priced``: the content's share of the estimate, the one part as long as the section,
is the same in every answer and remembered per loaded cache).
"""

from __future__ import annotations

import json
import re
from array import array
from collections.abc import Callable
from itertools import accumulate
from operator import mul
from typing import Any

from ..foundation.strict_json import dumps
from ..indexer.analysis import WORD, term_counts
from ..indexer.tokens import FEATURE_WEIGHTS, WEIGHT_SCALE, estimate_tokens, token_features
from ..store.native_cache import NativeCache
from .provenance import Lines, heading_path, section_source, split_lines
from .query_limits import why_terms

_META_MEMO = "packing-least-metadata"
_HEAD_MEMO = "packing-head-estimate"
MARGIN = (9, 8)  # charge = ceil(estimate x 9 / 8)
LATER_SHARE = (2, 5)  # rule 2: a document after the first takes at most 2/5 of the budget
# (``Params.later_share``, so that ``bench/ablation.py`` can switch it off with (1, 1))
_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")
_LINK_ITEM = re.compile(r"(?:[-*+]|\d+[.)])\s+\[[^\]]*\]\([^)]*\)")
_MYST_TOCTREE = re.compile(r"(`{3,}|~{3,})\{toctree\}")
_TOCTREE_TERM = "toctre"  # what "toctree" indexes as: only sections holding it are read
_TOC_MEMO = "packing-toctree-sections"
_RULE_CHARS = frozenset("=-~^*+#\"'`:._")
# Rule 3: an excerpt is looked for in a section's first 512 Ki characters only. Finding it
# costs a token estimate and a term count per block of the text scanned: a hostile 9 MB
# section cost 6.5 s on every answer that excerpted it. The largest section of the seven
# corpora (a sqlalchemy changelog) is 402 KB, so no real answer changes.
EXCERPT_SCAN_CHARS = 512 * 1024

# No document is charged less than this skeleton's estimate (empty strings and lists).
MIN_DOCUMENT = estimate_tokens(dumps({
    "id": "", "version": "", "content": "", "score": 0.0, "tokens": 0,
    "why": {"query_terms": [], "term_matches": 0, "total_words": 0},
    "source": {"file": "", "title": "", "path": [], "lines": [1, 1]}}))
WholeWhy = Callable[[int], tuple[list[str], int]]  # section -> (terms found, occurrences)


def charge(text: str) -> int:
    """What a piece of JSON text is charged against the budget."""
    num, den = MARGIN
    return -(-estimate_tokens(text) * num // den)


def doc_charge(doc: dict[str, Any]) -> int:
    """What a document is charged: the estimate of its JSON text, plus 1/8 of its
    content's ``tokens`` (the estimator's error is the content's, see rule 1)."""
    num, den = MARGIN
    return estimate_tokens(dumps(doc)) + -(-doc["tokens"] * (num - den) // den)


def _milli(text: str) -> int:
    """``estimate_tokens(text)`` before rounding up, in thousandths of a token (the
    weighted sum of its features; ``tests/test_tokens.py`` checks the identity)."""
    return sum(map(mul, FEATURE_WEIGHTS, token_features(text)))


# A document's compact JSON is HEAD + TAIL, split before its score: HEAD ends with _CLOSE,
# TAIL starts with it. The estimate is a sum over characters of features that look back at
# most five characters, so for a part M of five or more characters, milli(A + M + B) =
# milli(A + M) + milli(M + B) - milli(M); with M = _CLOSE: milli(JSON) = (milli(HEAD) -
# milli(_CLOSE)) + milli(TAIL). The first term holds the content (the one part as long as
# the section) and depends on the id, version and content only: the same in every answer
# that holds the section whole, so it is remembered per loaded cache. TAIL is short.
_CLOSE = '","score":'
_CLOSE_MILLI = _milli(_CLOSE)
_encode = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


def head_milli(section_id: str, version: str, content: str) -> int:
    """The share of a document's estimate that its id, version and content make."""
    head = _encode({"id": section_id, "version": version, "content": content})
    return _milli(head[:-1] + _CLOSE[1:]) - _CLOSE_MILLI


def priced(doc: dict[str, Any], head: int) -> int:
    """``doc_charge(doc)``, computed from its parts without rendering the document:
    ``head`` is ``head_milli`` of its id, version and content."""
    tail = _encode({"score": doc["score"], "tokens": doc["tokens"], "why": doc["why"],
                    "source": doc["source"]})
    num, den = MARGIN
    total = head + _milli('",' + tail[1:] + "\n")
    return -(-total // WEIGHT_SCALE) + -(-doc["tokens"] * (num - den) // den)


def frame_charge(query: str, budget: int, considered: int) -> int:
    """The charge of the answer without documents, its numbers at their widest."""
    return charge(dumps({"documents": [], "selection": {
        "query": query, "budget": budget, "tokens_used": budget,
        "documents_considered": considered, "documents_selected": considered,
        "documents_excluded_by_budget": considered}}))


def block_starts(lines: list[str], fine: bool) -> list[int]:
    """Where the blocks of ``lines`` start (see rule 3 above): a line at the left margin
    outside fenced code that follows a blank line (any such line when ``fine``)."""
    starts = [0]
    fence = ""
    for i, line in enumerate(lines):
        opener = _FENCE.match(line)
        if fence:
            if opener and opener.group(1).startswith(fence) and not line[opener.end():].strip():
                fence = ""
            continue
        if i and line.strip() and line[0] not in " \t" and (fine or not lines[i - 1].strip()):
            starts.append(i)
        if opener:
            fence = opener.group(1)
    return starts


def is_navigation(text: str, title: str) -> bool:
    """True when ``text`` holds nothing beyond its heading (``title`` and RST rules) but
    ``toctree`` directives (RST, or MyST fenced; options and entries included) and list
    items that are a bare Markdown link."""
    fence = ""  # the fence of the MyST toctree we are in
    in_rst = False
    for line in text.splitlines():
        bare = line.strip()
        if fence:
            if bare.startswith(fence) and not set(bare) - {fence[0]}:
                fence = ""
            continue
        if in_rst and (not bare or line[0] in " \t"):
            continue
        in_rst = bare.startswith(".. toctree::")
        myst = _MYST_TOCTREE.match(bare)
        if myst:
            fence = myst.group(1)
        if in_rst or myst or not bare or bare == title or _LINK_ITEM.fullmatch(bare):
            continue
        if bare.lstrip("#").strip() == title or not set(bare) - _RULE_CHARS:
            continue  # the heading's Markdown form, an RST under- or overline
        return False
    return True


class Packer:
    """Takes the ranked sections of one answer, best first, within ``budget``."""

    def __init__(self, cache: NativeCache, query: str, budget: int, terms: list[str],
                 whole_why: WholeWhy, empty_terms: int,
                 similarity: dict[int, float] | None = None,
                 later_share: tuple[int, int] = LATER_SHARE) -> None:
        self.cache = cache
        self.later_share = later_share
        self.similarity = similarity or {}  # section -> its similarity (answers by meaning)
        self.terms = terms
        self.whole_why = whole_why
        self.empty_terms = empty_terms
        self.query = query
        self.budget = budget
        self.left = budget - frame_charge(query, budget, cache.document_count)
        self.lines = Lines(cache)
        self.documents: list[dict[str, Any]] = []
        self.used = 0
        self.excluded = 0
        self.short: list[tuple[float, str, int]] = []

    def offer(self, score: float, section_id: str, d: int) -> None:
        """Add section ``d`` whole, as an excerpt, or count it as excluded by budget; a
        short section waits for :meth:`offer_short` (rule 4)."""
        lens = self.cache.index.lens
        own = lens[2][d] - lens[0][d]
        if own <= 0:
            return  # only its heading: never worth budget (rule 4)
        if own <= self.empty_terms:
            self.short.append((score, section_id, d))
            return
        self._place(score, section_id, d)

    def offer_short(self) -> None:
        """The short sections held back by :meth:`offer`, in their ranking order, into what
        the others left (rule 4)."""
        short, self.short = self.short, []
        for score, section_id, d in short:
            self._place(score, section_id, d)

    def _place(self, score: float, section_id: str, d: int) -> None:
        read: tuple[str, list[str]] | None = None  # the text and heading path, read once
        if d in self._toctree_sections():
            read = self.cache.section_text(d), heading_path(self.cache, d)
            if is_navigation(read[0], read[1][-1]):
                return  # a table of contents: never worth budget (rule 4)
        if self.left < MIN_DOCUMENT:  # no document fits any more: nothing to look at
            self.excluded += 1
            return
        table = self.cache.sections
        tokens = table.tokens[d]
        meta = self._least_metadata(d)
        room = self._room()
        if meta + tokens > room and 2 * meta > room:
            self.excluded += 1
            return
        text, path = read or (self.cache.section_text(d), heading_path(self.cache, d))
        first = self.lines.first_line(d)
        source = section_source(self.cache, d, path, first, text)
        shown, matches = self.whole_why(d)
        doc = _document(section_id, table.versions[d], text, score, tokens, shown, matches,
                        self.cache.index.words[d], source, self.similarity.get(d))
        cost = priced(doc, self._head_milli(d, section_id, text))
        if cost > room:
            excerpt = self._excerpt(doc, text, first)
            if excerpt is None:
                self.excluded += 1
                return
            doc, cost = excerpt
        self.left -= cost
        self.used += doc["tokens"]
        self.documents.append(doc)

    def _room(self) -> int:
        """What the next document may be charged whole (rule 2)."""
        if not self.documents:
            return self.left
        num, den = self.later_share
        return min(self.left, self.budget * num // den)

    def _toctree_sections(self) -> set[int]:
        """The sections whose text holds a toctree directive (per loaded cache)."""
        memo = self.cache.index.memo
        got = memo.get(_TOC_MEMO)
        if got is None:
            got = memo[_TOC_MEMO] = set(self.cache.index.postings(_TOCTREE_TERM)[0])
        return got

    def _head_milli(self, d: int, section_id: str, text: str) -> int:
        """``head_milli`` of section ``d`` whole (remembered per loaded cache, 8 bytes a
        section: a warm server estimates a section's text once)."""
        table = self.cache.sections
        if section_id != table.ids[d]:  # not what the memo holds (no ranking does this)
            return head_milli(section_id, table.versions[d], text)
        memo = self.cache.index.memo.get(_HEAD_MEMO)
        if memo is None:
            memo = self.cache.index.memo[_HEAD_MEMO] = array("q", [-1]) * len(table)
        got = memo[d]
        if got < 0:
            got = memo[d] = head_milli(section_id, table.versions[d], text)
        return got

    def _least_metadata(self, d: int) -> int:
        """What section ``d``'s metadata costs at least (score 0.0, no heading path, the
        shortest lines), from the manifest alone and remembered per loaded cache (4 bytes a
        section): a section that can fit neither whole nor as an excerpt is not read."""
        table = self.cache.sections
        memo = self.cache.index.memo.get(_META_MEMO)
        if memo is None:
            memo = self.cache.index.memo[_META_MEMO] = array("i", [-1]) * len(table)
        got = memo[d]
        if got < 0:
            title = table.titles[d]
            got = memo[d] = doc_charge(_document(  # no content: nothing long to render
                table.ids[d], table.versions[d], "", 0.0, 0, [], 0, 0,
                {"file": table.files[d], "title": title if isinstance(title, str) else "",
                 "path": [], "lines": [1, 1]}))
        return got

    def _excerpt(self, whole: dict[str, Any], text: str,
                 first: int) -> tuple[dict[str, Any], int] | None:
        """The best window of ``text`` that fits, as a document, and its charge."""
        meta = doc_charge(self._excerpt_doc(whole, "", first, first, 0))  # no content
        # The first document: half of what is left, the next-ranked sections keep the other
        # half (the best section is not always the answer); it may take it all when half
        # would not hold content as large as its metadata (a small budget). A later one:
        # its share of the budget (rule 2).
        if self.documents:
            cap = self._room()
        else:
            cap = self.left // 2
            if cap - meta < meta:
                cap = self.left
        # Below the answer's first document, an excerpt smaller than its own metadata does
        # not earn its tokens (the first one is the best answer there is: any size).
        least = meta if self.documents else 1
        if cap - meta < least:
            return None
        lines = split_lines(_scanned(text))
        for fine in (False, True):
            starts = block_starts(lines, fine)
            found = self._window(whole, lines, starts, first, cap - meta, cap, least)
            if found is not None:
                return found
        return None

    def _window(self, whole: dict[str, Any], lines: list[str], starts: list[int], first: int,
                room: int, cap: int, least: int) -> tuple[dict[str, Any], int] | None:
        """The run of blocks (``starts``) whose content's charge fits ``room`` with the most
        query-term occurrences, as a document charged at most ``cap`` (None if none)."""
        bounds = [*starts, len(lines)]
        blocks = ["".join(lines[a:b]) for a, b in zip(bounds, bounds[1:])]
        costs = [estimate_tokens(json.dumps(b, ensure_ascii=False)[1:-1]) for b in blocks]
        num, den = MARGIN
        if -(-min(costs) * num // den) > room:
            return None  # not one block fits: no need to look at their words
        wanted = set(self.terms)
        hits = [sum(n for t, n in term_counts(b).items() if t in wanted) for b in blocks]
        # The heading is in ``source`` already: its words make no window worth more.
        in_title = term_counts(whole["source"]["title"])
        hits[0] = max(hits[0] - sum(n for t, n in in_title.items() if t in wanted), 0)
        # Per start block, the longest run that fits; the best run has the most hits. A
        # run's hits come from running sums: summing each run was quadratic in the blocks
        # (a 9 MB section of short paragraphs at budget 200,000 took 77 s).
        before = [0, *accumulate(hits)]
        best: tuple[int, int, int] | None = None  # (-hits, start, end) of the best window
        end = 0
        total = 0
        for i in range(len(blocks)):
            if end < i:
                end, total = i, 0
            while end < len(blocks) and -(-(total + costs[end]) * num // den) <= room:
                total += costs[end]
                end += 1
            if end > i:
                key = (before[i] - before[end], i, end)
                if key[0] < 0 and (best is None or key < best):
                    best = key
                total -= costs[i]
        if best is None:
            return None
        _, i, end = best
        # The blocks' estimates sum close to the window's own: check the real charge and
        # drop blocks from the end while it does not fit.
        while before[end] - before[i] > 0:
            a, b = bounds[i], bounds[end]
            while b - 1 > a and not lines[b - 1].strip():
                b -= 1  # trailing blank lines carry nothing
            doc = self._excerpt_doc(whole, "".join(lines[a:b]), first + a, first + b - 1,
                                    whole["tokens"])
            cost = priced(doc, head_milli(doc["id"], doc["version"], doc["content"]))
            if cost <= cap:
                return (doc, cost) if doc["tokens"] >= least else None
            end -= 1
        return None

    def _excerpt_doc(self, whole: dict[str, Any], content: str, first: int, last: int,
                     of_tokens: int) -> dict[str, Any]:
        counts = term_counts(content)
        found = [t for t in dict.fromkeys(self.terms) if counts.get(t)]
        source = dict(whole["source"])
        source["excerpt"] = {"lines": [first, last], "of_tokens": of_tokens}
        return _document(whole["id"], whole["version"], content, whole["score"],
                         estimate_tokens(content), why_terms(found),
                         sum(counts[t] for t in found), len(WORD.findall(content)), source,
                         whole["why"].get("similarity"))

    def answer(self) -> dict[str, Any]:
        return {
            "documents": self.documents,
            "selection": {
                "query": self.query,
                "budget": self.budget,
                "tokens_used": self.used,
                "documents_considered": self.cache.document_count,
                "documents_selected": len(self.documents),
                "documents_excluded_by_budget": self.excluded,
            },
        }


def _scanned(text: str) -> str:
    """The whole lines of a section an excerpt is looked for in: at least one, and no more
    than ``EXCERPT_SCAN_CHARS`` characters (rule 3). Cut before splitting, so a huge
    section is never split into lines past the limit."""
    if len(text) <= EXCERPT_SCAN_CHARS:
        return text
    end = text.rfind("\n", 0, EXCERPT_SCAN_CHARS)
    if end < 0:
        end = text.find("\n")
    return text if end < 0 else text[:end + 1]


def _document(section_id: str, version: str, content: str, score: float, tokens: int,
              shown: list[str], matches: int, words: int,
              source: dict[str, Any], similarity: float | None = None) -> dict[str, Any]:
    why: dict[str, Any] = {"query_terms": shown, "term_matches": matches, "total_words": words}
    if similarity is not None:  # answered by meaning: the section's share of the best cosine
        why["similarity"] = similarity
    return {
        "id": section_id,
        "version": version,
        "content": content,
        "score": score,
        "tokens": tokens,
        "why": why,
        "source": source,
    }
