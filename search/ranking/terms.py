"""One query term: its postings and idf, and what the BM25F scan of them saw.

A posting's packed tf is the body tf alone (under 0x10000) or ``title << 24 | path << 16
| body`` (see ``store.search_index``).
"""

from __future__ import annotations

from bisect import bisect_left

from ...foundation import detmath
from ...store.search_index import SearchIndex


class Term:
    """A query term's postings and idf; ``titles`` and ``file_tf`` are filled by the BM25F
    scan (``bm25f.scan``) for the heading bonus and the page evidence."""

    __slots__ = ("docs", "tfs", "idf", "titles", "file_tf")

    def __init__(self, index: SearchIndex, term: str) -> None:
        self.docs, self.tfs = index.postings(term)
        df = len(self.docs)
        n = index.count
        self.idf = detmath.ln(1.0 + (n - df + 0.5) / (df + 0.5)) if df else 0.0
        self.titles: dict[int, int] = {}  # section -> title tf, where it is > 0
        self.file_tf: dict[int, int] = {}  # file -> body tf summed over its sections

    def lookup(self, d: int) -> int:
        """The packed tf of section ``d`` (0 when the term does not occur in it)."""
        docs = self.docs
        i = bisect_left(docs, d)
        return self.tfs[i] if i < len(docs) and docs[i] == d else 0
