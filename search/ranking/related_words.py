"""Related words: a stand-in for a query word the corpus never uses.

A user asks in their own words ("a *huge* file"), the docs use others ("large"). When no
form of a query word occurs anywhere in the cache, its nearest related terms that the
cache does use stand in for it, each a form at ``Params.related`` of the word (at most
``related_count`` of them; ``related`` 0: off). They come from a shipped table,
``related_words.txt``: for each common English word's index term, the terms of its
nearest words by a static word embedding, best first, written offline by
``bench/related_words.py``. Words the corpus uses are never expanded: a word the docs use
is better evidence than any neighbour of it (``docs/decisions/ranking-rules.md``).

The table holds terms, never vectors: nothing is computed from floats at query time, so
answers stay byte-identical on any machine. It is read from the installed package (no
network, no model, no new dependency), once per process and only when a query word
misses; a lookup is one substring search of its bytes (sorted lines ``term<TAB>related
terms``), cheaper than parsing it.
"""

from __future__ import annotations

from pathlib import Path

from ...indexer.analysis import Concept
from ...store.native_cache import NativeCache
from ...store.search_index import SearchIndex
from .base import FormRule
from .forms import Form
from .params import Params

TABLE_PATH = Path(__file__).with_name("related_words.txt")
_table: bytes | None = None


def related_words(term: str) -> list[str]:
    """The related terms of ``term`` in the shipped table, best first."""
    global _table
    if _table is None:
        _table = TABLE_PATH.read_bytes()
    key = b"\n" + term.encode("utf-8") + b"\t"
    at = _table.find(key)
    if at < 0:
        return []
    start = at + len(key)
    return _table[start:_table.index(b"\n", start)].decode("utf-8").split(" ")


def related_terms(index: SearchIndex, concept: Concept, limit: int) -> tuple[str, ...]:
    """Up to ``limit`` related terms that stand in for ``concept`` in this cache: none
    when any of its own forms occurs in the cache."""
    terms = index.terms
    if any(t in terms for t in concept.terms):
        return ()
    return tuple([t for t in related_words(concept.main) if t in terms][:limit])


def add(concept: Concept, cache: NativeCache, params: Params) -> Concept:
    if not params.related:
        return concept
    return concept._replace(related=related_terms(cache.index, concept, params.related_count))


def drop(concept: Concept) -> Concept:
    return concept._replace(related=())


def forms(concept: Concept, params: Params) -> list[Form]:
    return [[(r, params.related)] for r in concept.related]


RULE = FormRule("related_words", add, drop, forms)
