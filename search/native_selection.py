"""Selection on native caches: the ranking (``search.ranking``), packed into the budget
(``server.packing``: whole sections, else the best-matching excerpt; short sections last).
"""

from __future__ import annotations

from typing import Any

from ..indexer.analysis import Concept
from ..store.native_cache import NativeCache
from .packing import Packer
from .query_limits import why_terms
from .ranking import PARAMS, Params, Ranked, flat_terms, rank_concepts
from .ranking import concepts as query_concepts
from .ranking.terms import Term


def select(cache: NativeCache, query: str, budget: int, params: Params = PARAMS) -> dict[str, Any]:
    """The SelectionResult for ``query`` within ``budget`` tokens: the ranking, packed by
    ``server.packing`` (whole sections, excerpts, provenance)."""
    found = query_concepts(query, cache, params)
    return pack(cache, query, budget, found, rank_concepts(cache, found, params), params)


def pack(cache: NativeCache, query: str, budget: int, concepts: list[Concept],
         ranked: Ranked, params: Params = PARAMS) -> dict[str, Any]:
    """The SelectionResult of a ranking (``select``'s; the benchmark packs its baselines'
    rankings the same way, so budget-hit compares rankings, not budget rules)."""
    terms = flat_terms(concepts)
    postings = [Term(cache.index, t) for t in terms] if ranked else []

    def whole_why(d: int) -> tuple[list[str], int]:
        """The query terms in section ``d``'s text and their occurrences there."""
        counts = [(term, p.lookup(d) & 0xFFFF) for term, p in zip(terms, postings)]
        return why_terms([t for t, n in counts if n]), sum(n for _, n in counts)

    packer = Packer(cache, query, budget, terms, whole_why, params.empty_terms)
    for score, section_id, d in ranked:
        packer.offer(score, section_id, d)
    packer.offer_short()
    return packer.answer()
