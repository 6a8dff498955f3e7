"""From a query to the ranked sections: the query's concepts, then the rule lists."""

from __future__ import annotations

from ...foundation.errors import QueryError
from ...indexer.analysis import WORD, Concept, all_stopword_terms, query_concepts
from ...store.native_cache import NativeCache
from ..query_limits import check_query_length
from .forms import Form
from .params import PARAMS, Params
from .rules import FORM_RULES, RANK_RULES, check_off
from .state import RankState

Ranked = list[tuple[float, str, int]]  # (score in [0, 1], id, section number), best first


def concepts(query: str, cache: NativeCache | None = None,
             params: Params = PARAMS) -> list[Concept]:
    """The query's concepts (one a query word; invalid_query when it has no term at all),
    with the form rules' fields: those switched off dropped, and with ``cache`` those
    taken from it (the related words of a word the cache lacks)."""
    check_query_length(query)
    found = query_concepts(query)
    if not found:
        if not WORD.search(query):
            raise QueryError(detail="query has no searchable term")
        found = [Concept(t) for t in all_stopword_terms(query)]
    check_off(params.off)
    for rule in FORM_RULES:
        if rule.name in params.off:
            found = [rule.drop(c) for c in found]
        elif cache is not None:
            found = [rule.add(c, cache, params) for c in found]
    return found


def flat_terms(found: list[Concept]) -> list[str]:
    """The concepts' terms, each once, in query order."""
    return list(dict.fromkeys(t for c in found for t in c.terms))


def analyze_query(query: str) -> list[str]:
    """The query's search terms; invalid_query when it has none at all."""
    return flat_terms(concepts(query))


def concept_forms(concept: Concept, params: Params) -> list[Form]:
    """The word itself at weight 1, then each form rule's forms (the best one counts)."""
    forms: list[Form] = [[(concept.main, 1.0)]]
    for rule in FORM_RULES:
        if rule.name not in params.off:
            forms.extend(rule.forms(concept, params))
    return forms


def rank_concepts(cache: NativeCache, found: list[Concept], params: Params = PARAMS,
                  query: str = "") -> Ranked:
    """Selectable sections, best first: the rank rules over the concepts as given
    (``query``, the query as asked, for the rules that read its spelling)."""
    check_off(params.off)
    state = RankState(cache, params, [concept_forms(c, params) for c in found], query)
    if not state.live:
        return []
    for rule in RANK_RULES:
        if rule.name not in params.off:
            rule.apply(state)
    return state.ranked


def rank(cache: NativeCache, query: str, params: Params = PARAMS) -> Ranked:
    """The ranking ``select`` fills the budget from."""
    return rank_concepts(cache, concepts(query, cache, params), params, query)
