"""Selection on native caches: the ranking (``search.ranking``), packed into the budget
(``search.packing``: whole sections, else the best-matching excerpt; short sections last).

With vectors and a model (``search.meaning``), the lexical ranking without its floor is
fused with the query's similarity (``embedding.fusion``) before it is packed; the
packer, provenance and budget rules are the same, and each document's ``why`` gains its
``similarity``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..indexer.analysis import Concept
from ..store.native_cache import NativeCache
from .packing import Packer
from .query_limits import why_terms
from .ranking import PARAMS, Params, Ranked, flat_terms, rank_concepts
from .ranking import concepts as query_concepts
from .ranking.terms import Term
from .results import ByMeaning


def select(cache: NativeCache, query: str, budget: int, params: Params = PARAMS,
           meaning: ByMeaning | None = None) -> dict[str, Any]:
    """The SelectionResult for ``query`` within ``budget`` tokens: the ranking (fused with
    the query's similarity when ``meaning`` finds vectors and a model), packed by
    ``search.packing`` (whole sections, excerpts, provenance)."""
    found = query_concepts(query, cache, params)
    cosines = None
    if meaning is not None:
        # lazy: the model's libraries load only when answers use meaning
        from .meaning import similarity

        cosines, used = similarity(cache, query, meaning.model_dir)
        if meaning.outcome is not None:
            meaning.outcome.append(used)
    if cosines is None:
        return pack(cache, query, budget, found, rank_concepts(cache, found, params, query),
                    params)
    ranked, similarities = fused_ranking(cache, query, found, cosines, params)
    return pack(cache, query, budget, found, ranked, params, similarity=similarities)


def fused_ranking(cache: NativeCache, query: str, concepts: list[Concept], cosines: Any,
                  params: Params = PARAMS) -> tuple[Ranked, dict[int, float]]:
    """The lexical ranking without its floor fused with the query's ``cosines``
    (``embedding.fusion``), and each fused section's similarity (``select`` by meaning;
    ``bench/ablation.py`` scores rules through it with the cosines computed once)."""
    # lazy: the model's libraries load only when answers use meaning
    from ..embedding.fusion import fuse

    lexical = rank_concepts(cache, concepts, replace(params, floor=0.0), query)
    table = cache.sections
    fused = fuse(lexical, cosines, table.ids, table.versions)
    return [(f.score, f.id, f.d) for f in fused], {f.d: f.similarity for f in fused}


def pack(cache: NativeCache, query: str, budget: int, concepts: list[Concept],
         ranked: Ranked, params: Params = PARAMS,
         similarity: dict[int, float] | None = None) -> dict[str, Any]:
    """The SelectionResult of a ranking (``select``'s; the benchmark packs its baselines'
    rankings the same way, so budget-hit compares rankings, not budget rules).
    ``similarity``: each ranked section's similarity to the query, shown in ``why``."""
    terms = flat_terms(concepts)
    postings = [Term(cache.index, t) for t in terms] if ranked else []

    def whole_why(d: int) -> tuple[list[str], int]:
        """The query terms in section ``d``'s text and their occurrences there."""
        counts = [(term, p.lookup(d) & 0xFFFF) for term, p in zip(terms, postings)]
        return why_terms([t for t, n in counts if n]), sum(n for _, n in counts)

    packer = Packer(cache, query, budget, terms, whole_why, params.empty_terms, similarity,
                    params.later_share)
    for score, section_id, d in ranked:
        packer.offer(score, section_id, d)
    packer.offer_short()
    return packer.answer()
