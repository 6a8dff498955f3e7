"""Selection on native caches: rank sections for a query, then fill the token budget.

Ranking is BM25F over three fields of a section (its title, its path = file and ancestor
titles, its body), computed from the build-time search index with IEEE basic operations
only (``detmath``), so the same cache and query give the same bytes on every machine.
Scores are scaled to [0, 1] by the best score; sections under a relevance floor, and
sections that match no query term, are never selected.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..indexer.analysis import WORD, all_stopword_terms, query_terms
from . import detmath
from .errors import ContextError
from .native_cache import NativeCache

MAX_QUERY_BYTES = 4096


@dataclass(frozen=True)
class Params:
    k1: float = 1.2
    weights: tuple[float, float, float] = (3.0, 1.0, 1.0)  # title, path, body
    b: tuple[float, float, float] = (0.3, 0.3, 0.75)
    floor: float = 0.2  # relative to the best score


PARAMS = Params()


def analyze_query(query: str) -> list[str]:
    """The query's search terms; invalid_query when it has none at all."""
    if len(query.encode("utf-8", "surrogatepass")) > MAX_QUERY_BYTES:
        raise ContextError("invalid_query", "query longer than 4096 bytes")
    terms = query_terms(query)
    if not terms:
        if not WORD.search(query):
            raise ContextError("invalid_query", "query has no searchable term")
        terms = all_stopword_terms(query)
    return terms


def score_sections(cache: NativeCache, terms: list[str],
                   params: Params = PARAMS) -> dict[int, tuple[float, int]]:
    """Section number -> (raw BM25F score, occurrences of the terms in its body)."""
    index = cache.index
    n = index.count
    avg = index.avg
    lens = index.lens
    k1 = params.k1
    wt, wp, wb = params.weights
    bt, bp, bb = params.b
    # Per-section length normalizations are computed lazily and memoized per call.
    scores: dict[int, float] = {}
    matches: dict[int, int] = {}
    norm_cache: dict[int, tuple[float, float, float]] = {}
    at = avg[0] or 1.0
    ap = avg[1] or 1.0
    ab = avg[2] or 1.0
    for term in terms:
        docs, tfs = index.postings(term)
        df = len(docs)
        if df == 0:
            continue
        idf = detmath.ln(1.0 + (n - df + 0.5) / (df + 0.5))
        for d, packed in zip(docs, tfs):
            norms = norm_cache.get(d)
            if norms is None:
                norms = (
                    wt / (1.0 - bt + bt * lens[0][d] / at),
                    wp / (1.0 - bp + bp * lens[1][d] / ap),
                    wb / (1.0 - bb + bb * lens[2][d] / ab),
                )
                norm_cache[d] = norms
            body = packed & 0xFFFF
            tf = (packed >> 24) * norms[0] + ((packed >> 16) & 0xFF) * norms[1] + body * norms[2]
            scores[d] = scores.get(d, 0.0) + idf * tf / (k1 + tf)
            matches[d] = matches.get(d, 0) + body
    return {d: (s, matches[d]) for d, s in scores.items()}


def rank(cache: NativeCache, terms: list[str],
         params: Params = PARAMS) -> list[tuple[float, str, int, int]]:
    """Selectable sections, best first: (score in [0, 1], id, section number, matches)."""
    scored = score_sections(cache, terms, params)
    best = max((s for s, _ in scored.values()), default=0.0)
    ranked: list[tuple[float, str, int, int]] = []
    sections = cache.sections
    if best > 0.0:
        for d, (raw, n_match) in scored.items():
            score = raw / best
            if score >= params.floor:
                ranked.append((score, sections[d]["id"], d, n_match))
    ranked.sort(key=lambda r: (-r[0], r[1]))
    return ranked


def select(cache: NativeCache, query: str, budget: int, params: Params = PARAMS) -> dict[str, Any]:
    """The SelectionResult for ``query`` within ``budget`` tokens."""
    terms = analyze_query(query)
    ranked = rank(cache, terms, params)
    sections = cache.sections
    documents = []
    used = 0
    excluded = 0
    for score, section_id, d, n_match in ranked:
        section = sections[d]
        tokens = section["tokens"]
        if used + tokens > budget:
            excluded += 1
            continue
        used += tokens
        documents.append({
            "id": section_id,
            "version": section["version"],
            "content": cache.section_text(d),
            "score": score,
            "tokens": tokens,
            "why": {"query_terms": terms, "term_matches": n_match,
                    "total_words": cache.index.words[d]},
        })
    return {
        "documents": documents,
        "selection": {
            "query": query,
            "budget": budget,
            "tokens_used": used,
            "documents_considered": cache.document_count,
            "documents_selected": len(documents),
            "documents_excluded_by_budget": excluded,
        },
    }
