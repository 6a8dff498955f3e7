"""Selection on native caches: rank sections for a query, then fill the token budget.

PRINCIPLES (placeholder, rewritten with the measured design below).
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass
from typing import Any

from ..indexer.analysis import (
    FEATURE_CHANGELOG,
    WORD,
    Concept,
    all_stopword_terms,
    query_concepts,
)
from . import detmath
from .errors import ContextError
from .native_cache import NativeCache

MAX_QUERY_BYTES = 4096
_EPS = 1e-9  # safety margin of the pruning bounds (they are compared, never output)


@dataclass(frozen=True)
class Params:
    k1: float = 1.2
    weights: tuple[float, float, float] = (3.0, 1.0, 1.0)  # title, path, body
    b: tuple[float, float, float] = (0.3, 0.3, 0.75)
    floor: float = 0.25  # relative to the best score
    alt_weight: float = 0.5  # an abbreviation / synonym counts this much of the word
    title_bonus: float = 0.2  # heading precision bonus, in units of the matched concepts
    page: float = 1.0  # up to (1 + page) x for a page (file) that matches the whole query
    page_b: float = 0.75
    changelog: float = 0.5  # prior of release-notes sections
    empty: float = 0.5  # prior of a heading with (almost) no body
    empty_terms: int = 3  # "almost no body": at most this many body terms beyond the title
    prune: bool = True  # skip what provably cannot reach the floor (same output either way)


PARAMS = Params()


def _concepts(query: str) -> list[Concept]:
    if len(query.encode("utf-8", "surrogatepass")) > MAX_QUERY_BYTES:
        raise ContextError("invalid_query", "query longer than 4096 bytes")
    concepts = query_concepts(query)
    if not concepts:
        if not WORD.search(query):
            raise ContextError("invalid_query", "query has no searchable term")
        concepts = [Concept(t) for t in all_stopword_terms(query)]
    return concepts


def _flat(concepts: list[Concept]) -> list[str]:
    return list(dict.fromkeys(t for c in concepts for t in c.terms))


def analyze_query(query: str) -> list[str]:
    """The query's search terms; invalid_query when it has none at all."""
    return _flat(_concepts(query))


# -- per-cache data, computed once per loaded cache -----------------------------------------

@dataclass
class _Tables:
    norm: tuple[list[float], list[float], list[float]]  # field weight / length normalization
    prior: list[float]  # changelog and near-empty priors (1.0 for most sections)
    file_of: list[int]  # file number of each section
    file_start: list[int]  # first section of each file
    file_norm: list[float]  # page length normalization of each file


def _tables(cache: NativeCache, params: Params) -> _Tables:
    index = cache.index
    key = ("tables", params.weights, params.b, params.page_b, params.changelog, params.empty,
           params.empty_terms)
    got = index.memo.get(key)
    if got is not None:
        return got
    lens = index.lens
    n = index.count
    norm = []
    for f in range(3):
        w, b, avg, col = params.weights[f], params.b[f], index.avg[f] or 1.0, lens[f]
        norm.append([w / (1.0 - b + b * col[d] / avg) for d in range(n)])
    prior = [1.0] * n
    if params.changelog != 1.0:
        for d in index.postings(FEATURE_CHANGELOG)[0]:
            prior[d] = params.changelog
    if params.empty != 1.0:
        title, body, limit = lens[0], lens[2], params.empty_terms
        for d in range(n):
            if body[d] - title[d] <= limit:
                prior[d] *= params.empty
    file_of: list[int] = []
    file_start: list[int] = []
    file_len: list[int] = []
    last = None
    body = lens[2]
    for d, section in enumerate(cache.sections):
        name = section["file"]
        if name != last:
            file_start.append(d)
            file_len.append(0)
            last = name
        file_of.append(len(file_start) - 1)
        file_len[-1] += body[d]
    avg_file = (sum(file_len) / len(file_len)) if file_len else 1.0
    pb = params.page_b
    file_norm = [1.0 - pb + pb * length / avg_file for length in file_len]
    file_start.append(n)
    got = _Tables((norm[0], norm[1], norm[2]), prior, file_of, file_start, file_norm)
    if len(index.memo) > 16:
        index.memo.clear()
    index.memo[key] = got
    return got


# -- scoring --------------------------------------------------------------------------------

class _Term:
    """One query term's postings and BM25F scores (computed on demand)."""

    __slots__ = ("docs", "tfs", "idf", "scores", "titles", "file_tf")

    def __init__(self, cache: NativeCache, term: str) -> None:
        index = cache.index
        self.docs, self.tfs = index.postings(term)
        df = len(self.docs)
        n = index.count
        self.idf = detmath.ln(1.0 + (n - df + 0.5) / (df + 0.5)) if df else 0.0
        self.scores: dict[int, float] | None = None
        self.titles: dict[int, int] = {}
        self.file_tf: dict[int, int] | None = None

    def lookup(self, d: int) -> int:
        """The packed tf of section ``d`` (0 when the term does not occur in it)."""
        docs = self.docs
        i = bisect_left(docs, d)
        return self.tfs[i] if i < len(docs) and docs[i] == d else 0

    def score_all(self, tables: _Tables, k1: float) -> dict[int, float]:
        """BM25F score of every section holding the term (and its title and file tfs)."""
        if self.scores is None:
            nt, np_, nb = tables.norm
            file_of = tables.file_of
            idf = self.idf
            out: dict[int, float] = {}
            file_tf: dict[int, int] = {}
            titles = self.titles
            get = file_tf.get
            for d, p in zip(self.docs, self.tfs):
                if p < 0x10000:
                    tf = p * nb[d]
                    body = p
                else:
                    body = p & 0xFFFF
                    title = p >> 24
                    tf = title * nt[d] + ((p >> 16) & 0xFF) * np_[d] + body * nb[d]
                    if title:
                        titles[d] = title
                out[d] = idf * tf / (k1 + tf)
                if body:
                    f = file_of[d]
                    file_tf[f] = get(f, 0) + body
            self.scores = out
            self.file_tf = file_tf
        return self.scores

    def score_one(self, tables: _Tables, k1: float, d: int) -> float:
        """The term's score in section ``d`` alone (records its title tf)."""
        if self.scores is not None:
            return self.scores.get(d, 0.0)
        p = self.lookup(d)
        if not p:
            return 0.0
        nt, np_, nb = tables.norm
        title = p >> 24
        if title:
            self.titles[d] = title
        tf = title * nt[d] + ((p >> 16) & 0xFF) * np_[d] + (p & 0xFFFF) * nb[d]
        return self.idf * tf / (k1 + tf)

    def tf_in_file(self, tables: _Tables, f: int) -> int:
        if self.file_tf is not None:
            return self.file_tf.get(f, 0)
        docs, tfs = self.docs, self.tfs
        lo = bisect_left(docs, tables.file_start[f])
        hi = bisect_left(docs, tables.file_start[f + 1], lo)
        return sum(tfs[i] & 0xFFFF for i in range(lo, hi))


Form = list[tuple[str, float]]  # (term, coefficient): a form scores sum(coef * term score)


def _forms(concept: Concept, alt_weight: float) -> list[Form]:
    forms: list[Form] = [[(concept.main, 1.0)]]
    if concept.parts:
        share = 1.0 / len(concept.parts)
        forms.append([(p, share) for p in concept.parts])
    forms.extend([(a, alt_weight)] for a in concept.alts)
    return forms


def rank_concepts(cache: NativeCache, concepts: list[Concept],
                  params: Params = PARAMS) -> list[tuple[float, str, int]]:
    """Selectable sections, best first: (score in [0, 1], id, section number).

    score = prior x (sum over concepts of the best form's BM25F + heading bonus)
            x (1 + page x page match); sections under ``floor`` x the best are dropped, and
    exact duplicates (same version) after the first. Concepts are summed in query order,
    so pruning (which only skips sections that provably stay under the floor) never changes
    a score's bits."""
    tables = _tables(cache, params)
    k1, floor, tb, gamma = params.k1, params.floor, params.title_bonus, params.page
    terms: dict[str, _Term] = {}
    for c in concepts:
        for t in c.terms:
            if t not in terms:
                terms[t] = _Term(cache, t)
    cforms = [_forms(c, params.alt_weight) for c in concepts]
    bound = [max(sum(coef * terms[t].idf for t, coef in form) for form in forms)
             for forms in cforms]
    live = [i for i in range(len(concepts)) if bound[i] > 0.0]
    total = sum(bound[i] for i in live)
    if not live:
        return []
    prior = tables.prior
    boost = (1.0 + tb) * (1.0 + gamma) * (1.0 + _EPS)

    # Term-at-a-time over concepts, strongest first, until what is left cannot lift a
    # section that has not been seen yet to the floor.
    order = sorted(live, key=lambda i: (-bound[i], i))
    per_concept: dict[int, dict[int, float]] = {}
    acc: dict[int, float] = {}
    covered: dict[int, float] = {}
    best_lb = 0.0
    rest = total
    lens0 = cache.index.lens[0]
    file_of, file_norm = tables.file_of, tables.file_norm
    page_cache: dict[int, float] = {}

    def concept_score(i: int, d: int) -> float:
        g = per_concept.get(i)
        if g is not None:
            return g.get(d, 0.0)
        s = 0.0
        for form in cforms[i]:
            v = 0.0
            for t, coef in form:
                v += coef * terms[t].score_one(tables, k1, d)
            if v > s:
                s = v
        return s

    def page_factor(f: int) -> float:
        page = page_cache.get(f)
        if page is None:
            page = 0.0
            fn = file_norm[f]
            for i in live:
                best = 0.0
                for form in cforms[i]:
                    v = 0.0
                    for t, coef in form:
                        term = terms[t]
                        tf = term.tf_in_file(tables, f) / fn
                        if tf:
                            v += coef * term.idf * tf / (k1 + tf)
                    if v > best:
                        best = v
                page += best
            page = 1.0 + gamma * page / total
            page_cache[f] = page
        return page

    def doc_score(d: int) -> float:
        """The exact score of one section (used as a lower bound of the best)."""
        raw = 0.0
        w = 0.0
        title_tf = 0
        for i in live:
            s = concept_score(i, d)
            if s > 0.0:
                raw += s
                hit = False
                for t in concepts[i].terms:
                    tt = terms[t].lookup(d) >> 24
                    if tt:
                        hit = True
                        title_tf += tt
                if hit:
                    w += bound[i]
        if w > 0.0 and lens0[d]:
            precision = title_tf / lens0[d]
            raw += tb * (precision if precision < 1.0 else 1.0) * w
        return prior[d] * raw * page_factor(file_of[d])

    for i in order:
        if params.prune and rest * boost < floor * best_lb:
            break
        rest -= bound[i]
        g: dict[int, float] = {}
        for form in cforms[i]:
            if len(form) == 1:
                t, coef = form[0]
                scores = terms[t].score_all(tables, k1)
                if coef == 1.0 and not g:
                    g = scores if len(cforms[i]) == 1 else dict(scores)
                    continue
                for d, s in scores.items():
                    s *= coef
                    if s > g.get(d, 0.0):
                        g[d] = s
            else:
                mean: dict[int, float] = {}
                for t, coef in form:
                    for d, s in terms[t].score_all(tables, k1).items():
                        mean[d] = mean.get(d, 0.0) + coef * s
                for d, s in mean.items():
                    if s > g.get(d, 0.0):
                        g[d] = s
        per_concept[i] = g
        w = bound[i]
        top = 0.0
        top_d = -1
        for d, s in g.items():
            a = acc.get(d, 0.0) + s
            acc[d] = a
            covered[d] = covered.get(d, 0.0) + w
            a *= prior[d]
            if a > top:
                top = a
                top_d = d
        if params.prune and top_d >= 0 and top * boost > best_lb:
            exact = doc_score(top_d) * (1.0 - _EPS)
            if exact > best_lb:
                best_lb = exact
    rest = max(rest, 0.0)
    if params.prune and rest < total:
        cut = floor * best_lb
        scale = (1.0 + gamma) * (1.0 + _EPS)
        candidates = [d for d, a in acc.items()
                      if prior[d] * (a + rest + tb * (covered[d] + rest)) * scale >= cut]
    else:
        candidates = list(acc)

    # Exact scores of the candidates, every sum in query order.
    raw = dict.fromkeys(candidates, 0.0)
    title_w: dict[int, float] = {}
    title_tf: dict[int, int] = {}
    for i in live:
        g = per_concept.get(i)
        if g is None:
            g = {}
            for d in candidates:
                s = concept_score(i, d)
                if s > 0.0:
                    g[d] = s
        if len(g) <= len(raw):
            for d, s in g.items():
                if d in raw:
                    raw[d] += s
        else:
            for d in raw:
                s = g.get(d)
                if s is not None:
                    raw[d] += s
        in_title: set[int] = set()
        for t in concepts[i].terms:
            for d, tt in terms[t].titles.items():
                if d in raw and d in g:
                    in_title.add(d)
                    title_tf[d] = title_tf.get(d, 0) + tt
        w = bound[i]
        for d in in_title:
            title_w[d] = title_w.get(d, 0.0) + w
    for d, w in title_w.items():
        precision = title_tf[d] / lens0[d] if lens0[d] else 0.0
        raw[d] += tb * (precision if precision < 1.0 else 1.0) * w

    scored = [(prior[d] * r * page_factor(file_of[d]), d) for d, r in raw.items()]

    best = max((s for s, _ in scored), default=0.0)
    if best <= 0.0:
        return []
    sections = cache.sections
    ranked = []
    for s, d in scored:
        score = s / best
        if score >= floor:
            ranked.append((score, sections[d]["id"], d))
    ranked.sort(key=lambda r: (-r[0], r[1]))
    seen: set[str] = set()
    unique = []
    for entry in ranked:
        version = sections[entry[2]]["version"]
        if version not in seen:
            seen.add(version)
            unique.append(entry)
    return unique


def rank(cache: NativeCache, query: str,
         params: Params = PARAMS) -> list[tuple[float, str, int]]:
    """The ranking ``select`` fills the budget from."""
    return rank_concepts(cache, _concepts(query), params)


def term_matches(cache: NativeCache, terms: list[str], d: int) -> int:
    """Occurrences of the query terms in the body of section ``d``."""
    return sum(_Term(cache, t).lookup(d) & 0xFFFF for t in terms)


def select(cache: NativeCache, query: str, budget: int, params: Params = PARAMS) -> dict[str, Any]:
    """The SelectionResult for ``query`` within ``budget`` tokens."""
    concepts = _concepts(query)
    terms = _flat(concepts)
    ranked = rank_concepts(cache, concepts, params)
    sections = cache.sections
    documents = []
    used = 0
    excluded = 0
    for score, section_id, d in ranked:
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
            "why": {"query_terms": terms, "term_matches": term_matches(cache, terms, d),
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
