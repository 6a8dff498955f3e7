"""One query's ranking as the rank rules build it (``rules.RANK_RULES``)."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable

from ...foundation.detmath import ordered_sum
from ...store.native_cache import NativeCache
from .forms import Form
from .params import Params
from .terms import Term


class LiveConcept:
    """A query concept some form of which occurs in the cache: ``bound``, the most it adds
    to a score (the idf mass of its best form); ``forms``, its forms that occur in the
    cache; ``terms``, their terms in form order (a term may repeat)."""

    __slots__ = ("bound", "forms", "terms")

    def __init__(self, bound: float, forms: list[Form], terms: list[str]) -> None:
        self.bound, self.forms, self.terms = bound, forms, terms


class Prior:
    """A factor of the score of some sections, the same for every query; ``key`` names
    what the sections and the factor depend on (the per-cache memo key)."""

    __slots__ = ("key", "factor", "sections")

    def __init__(self, key: Hashable, factor: float,
                 sections: Callable[[], Iterable[int]]) -> None:
        self.key, self.factor, self.sections = key, factor, sections


class RankState:
    """The query (``query``: as asked), its terms and concepts, and what the rules have
    found so far.

    ``raw``: each section's additive score (BM25F, heading bonus), dense (cheaper than a
    dict at corpus scale); ``found``: the section's own text holds a query term;
    ``path_only``: sections holding a term in their heading path only; ``factor``: each
    page's factor (None: 1) and ``page_max`` the largest it can be; ``priors``: the
    section priors that apply; ``floor``: the relative floor; ``ranked``: the result,
    best first, (score in [0, 1], id, section number)."""

    __slots__ = ("cache", "params", "query", "terms", "uses", "live", "total", "raw",
                 "found", "path_only", "factor", "page_max", "priors", "floor", "ranked")

    def __init__(self, cache: NativeCache, params: Params, cforms: list[list[Form]],
                 query: str = "") -> None:
        self.cache = cache
        self.params = params
        self.query = query
        self.terms: dict[str, Term] = {}
        self.uses: dict[str, int] = {}  # how many forms hold each term
        for forms in cforms:
            for form in forms:
                for t, _ in form:
                    if t not in self.terms:
                        self.terms[t] = Term(cache.index, t)
                    self.uses[t] = self.uses.get(t, 0) + 1
        self.live = [c for c in map(self._live, cforms) if c.bound > 0.0]
        self.total = ordered_sum([c.bound for c in self.live])  # the query's idf mass
        n = cache.index.count
        self.raw = [0.0] * n
        self.found = bytearray(n)
        self.path_only: list[int] = []
        self.factor: list[float] | None = None
        self.page_max = 1.0
        self.priors: list[Prior] = []
        self.floor = 0.0
        self.ranked: list[tuple[float, str, int]] = []

    def _live(self, forms: list[Form]) -> LiveConcept:
        terms = self.terms
        bound = max(ordered_sum([coef * terms[t].idf for t, coef in form]) for form in forms)
        # Forms whose terms never occur play no part.
        forms = [f for f in forms if any(terms[t].docs for t, _ in f)]
        return LiveConcept(bound, forms, [t for f in forms for t, _ in f])
