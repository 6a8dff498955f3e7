"""Selection on native caches: rank sections for a query, then fill the token budget.

Principles (each one a class of questions, none a single question; measured with
``bench/quality.py`` on the dev questions, tuned where flask-docs and fastapi-docs agree):

1. Sections are the documents, each with three fields: its heading (title), its heading
   path (file path words and ancestor headings) and its text (body). Scoring is BM25F
   (k1 1.2, field weights 3/1/1, length normalization b 0.3/0.3/0.75): the weighted field
   frequencies are saturated together, so a term repeated in heading, path and body is
   not counted three times. Saturating each field on its own scored easy questions a
   little better and hard ones much worse (fastapi hard MRR -0.1 to -0.2).
2. Documents and queries go through the same analysis (``indexer.analysis``): words,
   identifiers kept whole and split (``BackgroundTasks`` -> backgroundtasks, background,
   task), Snowball stems, irregular verb forms (``sent`` -> send), stopwords including
   contraction fragments and conversational filler ("I want a way to ...").
3. One query word is one *concept*. Its forms are the word itself, the mean of its
   identifier parts, and alternatives from a small generic table of software
   abbreviations and two-word verbs (``config`` ~ configuration, ``turn off`` ~ disable)
   at half weight; the best form counts, so one idea spelled three ways counts once.
   A word of which no form occurs anywhere in the cache gets one more form at half weight:
   its nearest related word the cache uses (``semantic``: a shipped table, no vectors at
   query time). It fires rarely (2 of the 70 dev and fresh questions on flask/fastapi,
   whose vocabularies are large): dev unchanged, fresh MRR 0.54 -> 0.56 (one question).
   Expanding every word with the full embedding model lost dev MRR (-0.01 to -0.03), and
   so did adding its query-section cosine to the score (``bench/ablation.py``).
4. Heading precision: a heading made of query words is the likeliest answer. Bonus =
   0.2 x (share of the heading's terms the query matches) x (idf mass of the concepts the
   heading holds), added outside BM25 saturation, which otherwise drowns the heading in a
   long body. It needs two of the query's concepts in the heading (one for a one-concept
   query): many headings are one generic word of their domain ("Commands", "Requests",
   "Example"), and such a heading holding one word of a longer question is weak evidence
   (it keeps its BM25F heading weight). On documentation the ranking was not designed on
   (fresh-2: click, httpx, sqlalchemy) this gained MRR on each corpus (+0.01 to +0.03),
   dev and fresh-1 unchanged within one rank (``bench/ablation.py``).
5. Page evidence: paraphrased questions often name what a page is about rather than the
   words of the answering section. Each section's score is multiplied by
   1 + 0.5 x (BM25 of its whole file for the query) / (the query's idf mass), in
   [1, 1.5). (Weight 1.0 scored the same on the dev questions and worse on fresh ones.)
6. Priors: release notes x 0.5, since they mention every feature in passing; a heading
   with (almost) no text of its own (at most 3 terms beyond the heading) x 0.5, since it
   tells an agent nothing. Release notes are what a file's own name says (``CHANGES``,
   ``changelog_14``, ``release-notes``; a number-named file in a changelog folder) or a
   section under a version-number heading; a folder's name alone is not enough, and
   "what's new" and migration pages are not release notes: they explain features in
   prose and answer upgrade questions (sqlalchemy's ``changelog/`` folder holds about 740
   such sections; demoting them cost its fresh questions 0.17 MRR).
7. Selectable: a section whose own text holds a query term (a match in its heading path
   only ranks it, never selects it), scoring at least 0.25 x the best (a relative floor,
   so weak matches never fill the budget), and not an exact duplicate (same version) of
   a better-ranked section. Scores are scaled to [0, 1] by the best; the order is score
   descending, then id ascending; ``server.packing`` fills the budget from that order
   (whole sections, else the best-matching excerpt; short sections last).
8. Determinism: IEEE basic operations and ``detmath.ln`` only, every sum taken in query
   order by plain ``+`` (never the built-in ``sum`` of floats, compensated since Python
   3.12), so equal cache bytes and arguments give equal output bytes on any machine.
9. Speed: one term-at-a-time pass over the postings into dense per-section sums (file
   tfs summed along the way: a file's sections are contiguous), per-section
   normalizations and priors computed once per loaded cache, the floor cut at C speed.

Tried and left out, because they did not hold on both corpora: a coordination factor
(score x share of the query matched: MRR -0.04 on flask, -0.01 on fastapi), pseudo-
relevance feedback (query drift: MRR -0.2), larger heading weights or bonuses (easy
questions up, hard ones down). Parameters sit on a flat optimum: tuned on flask alone they
give fastapi 0.76 MRR@10, tuned on fastapi alone flask 0.84 (0.88 and 0.76 with the
defaults).

Checked on documentation the ranking was not designed on (issue 14; ``bench/ablation.py``,
aggregates of fresh-2 per corpus only) and left out, because no setting helped every set:
k1 0.9 (sqlalchemy +0.04, flask -0.02), body b 0.5 or 0.9, page evidence 0.25 or off
(sqlalchemy +0.07 off, dev -0.02), page evidence from the page's headings instead of its
text (dev -0.02), length averages without the release notes or by the median (sqlalchemy's
16 changelog sections hold 40% of its text; no gain), role markup (``:class:``) left out
of the body terms (no gain), heading-field idf for the heading bonus (within noise), and a
reciprocal-rank fusion with plain BM25 (about +0.01 on each set, under one question:
not worth a second ranking whose scores the budget floor could not use).
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass
from itertools import compress
from operator import itemgetter
from typing import Any

from ..foundation.errors import QueryError
from ..indexer.analysis import (
    FEATURE_CHANGELOG,
    WORD,
    Concept,
    all_stopword_terms,
    query_concepts,
)
from ..search.packing import Packer
from ..search.query_limits import check_query_length, why_terms
from ..store.native_cache import NativeCache
from . import detmath
from .semantic import related_terms

_EPS = 1e-9  # safety margin of the pruning bounds (they are compared, never output)


@dataclass(frozen=True)
class Params:
    k1: float = 1.2
    weights: tuple[float, float, float] = (3.0, 1.0, 1.0)  # title, path, body
    b: tuple[float, float, float] = (0.3, 0.3, 0.75)
    floor: float = 0.25  # relative to the best score
    alt_weight: float = 0.5  # an abbreviation / synonym counts this much of the word
    title_bonus: float = 0.2  # heading precision bonus, in units of the matched concepts
    page: float = 0.5  # up to (1 + page) x for a page (file) that matches the whole query
    page_b: float = 0.75
    changelog: float = 0.5  # prior of release-notes sections
    empty: float = 0.5  # prior of a heading with (almost) no body
    empty_terms: int = 3  # "almost no body": at most this many body terms beyond the title
    related: float = 0.5  # a related word (``semantic``) of a word the cache lacks; 0: off
    related_count: int = 1  # related words that stand in for one query word (best first)
    title_concepts: int = 2  # the heading bonus needs this many query concepts in the heading


PARAMS = Params()


def _concepts(query: str, cache: NativeCache | None = None,
              params: Params = PARAMS) -> list[Concept]:
    """The query's concepts; with ``cache``, a word the cache lacks gets its related
    words there (``semantic``), unless ``params.related`` is 0."""
    check_query_length(query)
    concepts = query_concepts(query)
    if not concepts:
        if not WORD.search(query):
            raise QueryError(detail="query has no searchable term")
        concepts = [Concept(t) for t in all_stopword_terms(query)]
    if cache is not None and params.related:
        concepts = [c._replace(related=related_terms(cache.index, c, params.related_count))
                    for c in concepts]
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
        by_length = {x: w / (1.0 - b + b * x / avg) for x in set(col)}  # few distinct lengths
        norm.append(list(map(by_length.__getitem__, col)))
    prior = [1.0] * n
    if params.changelog != 1.0:
        for d in index.postings(FEATURE_CHANGELOG)[0]:
            prior[d] = params.changelog
    if params.empty != 1.0:
        limit = params.empty_terms
        for d, (t, b) in enumerate(zip(lens[0], lens[2])):
            if b - t <= limit:
                prior[d] *= params.empty
    file_of: list[int] = []
    file_start: list[int] = []
    file_len: list[int] = []
    last = None
    number = -1
    for d, (name, length) in enumerate(zip(cache.sections.files, lens[2])):
        if name != last:
            file_start.append(d)
            file_len.append(0)
            last = name
            number += 1
        file_of.append(number)
        file_len[number] += length
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
    """One query term: its postings, idf, and what a scan of them found."""

    __slots__ = ("docs", "tfs", "idf", "titles", "file_tf")

    def __init__(self, cache: NativeCache, term: str) -> None:
        index = cache.index
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

    def scan(self, tables: _Tables, k1: float, found: bytearray, path_only: list[int],
             raw: list[float] | None = None) -> dict[int, float]:
        """BM25F score of every section holding the term: added into ``raw`` when given
        (the fast path of a one-term concept), else returned. Records titles and file tfs,
        marks in ``found`` the sections whose own text holds the term and lists in
        ``path_only`` those that hold it only in their heading path."""
        nt, np_, nb = tables.norm
        file_of = tables.file_of
        idf = self.idf
        out: dict[int, float] = {}
        file_tf = self.file_tf
        titles = self.titles
        # Sections of a file are contiguous and postings sorted: sum tfs per file run.
        cur = -1
        run = 0
        for d, p in zip(self.docs, self.tfs):
            if p < 0x10000:
                tf = p * nb[d]
                body = p
                found[d] = 1
            else:
                body = p & 0xFFFF
                title = p >> 24
                tf = title * nt[d] + ((p >> 16) & 0xFF) * np_[d] + body * nb[d]
                if title:
                    titles[d] = title
                if body:
                    found[d] = 1
                else:
                    path_only.append(d)
            if raw is None:
                out[d] = idf * tf / (k1 + tf)
            else:
                raw[d] += idf * tf / (k1 + tf)
            f = file_of[d]
            if f != cur:
                if run:
                    file_tf[cur] = run
                cur = f
                run = body
            else:
                run += body
        if run:
            file_tf[cur] = run
        return out

    def page_scores(self, tables: _Tables, k1: float) -> dict[int, float]:
        """The term's BM25 score of each page (file) that holds it."""
        idf = self.idf
        file_norm = tables.file_norm
        out: dict[int, float] = {}
        for f, tf in self.file_tf.items():
            x = tf / file_norm[f]
            out[f] = idf * x / (k1 + x)
        return out


Form = list[tuple[str, float]]  # (term, coefficient): a form scores sum(coef * term score)


def _forms(concept: Concept, params: Params) -> list[Form]:
    forms: list[Form] = [[(concept.main, 1.0)]]
    if concept.parts:
        share = 1.0 / len(concept.parts)
        forms.append([(p, share) for p in concept.parts])
    forms.extend([(a, params.alt_weight)] for a in concept.alts)
    forms.extend([(r, params.related)] for r in concept.related)
    return forms


def _best_form(forms: list[Form], scores: dict[str, dict[int, float]]) -> dict[int, float]:
    """Per section (or page), the best form's score: a form is one term's score times its
    coefficient, or the coefficient-weighted sum of an identifier's parts (in part order)."""
    out: dict[int, float] = {}
    if len(forms[0]) == 1 and forms[0][0][1] == 1.0:
        out = dict(scores[forms[0][0][0]])
        forms = forms[1:]
    get = out.get
    for form in forms:
        if len(form) == 1:
            t, coef = form[0]
            for d, s in scores[t].items():
                if coef != 1.0:
                    s *= coef
                if s > get(d, 0.0):
                    out[d] = s
        else:
            mean: dict[int, float] = {}
            for t, coef in form:
                for d, s in scores[t].items():
                    mean[d] = mean.get(d, 0.0) + coef * s
            for d, s in mean.items():
                if s > get(d, 0.0):
                    out[d] = s
    return out


def _ordered_sum(values: list[float]) -> float:
    """Left-to-right float sum. (The built-in ``sum`` compensates rounding since Python
    3.12, so its last bit depends on the Python version.)"""
    total = 0.0
    for v in values:
        total += v
    return total


def rank_concepts(cache: NativeCache, concepts: list[Concept],
                  params: Params = PARAMS) -> list[tuple[float, str, int]]:
    """Selectable sections, best first: (score in [0, 1], id, section number).

    score = prior x (sum over concepts of the best form's BM25F + heading bonus)
            x (1 + page x page match); sections under ``floor`` x the best are dropped, and
    exact duplicates (same version) after the first. Every sum runs in query order."""
    tables = _tables(cache, params)
    k1, floor, tb, gamma = params.k1, params.floor, params.title_bonus, params.page
    terms: dict[str, _Term] = {}
    uses: dict[str, int] = {}
    for c in concepts:
        for t in c.terms:
            if t not in terms:
                terms[t] = _Term(cache, t)
            uses[t] = uses.get(t, 0) + 1
    cforms = [_forms(c, params) for c in concepts]
    bound = [max(_ordered_sum([coef * terms[t].idf for t, coef in form]) for form in forms)
             for forms in cforms]
    live = [i for i in range(len(concepts)) if bound[i] > 0.0]
    total = _ordered_sum([bound[i] for i in live])
    if not live:
        return []

    raw = [0.0] * cache.index.count  # dense: cheaper than a dict at corpus scale
    found = bytearray(cache.index.count)  # the section's own text holds a query term
    path_only: list[int] = []
    section_scores: dict[str, dict[int, float]] = {}
    page: dict[int, float] = {}
    title_w: dict[int, float] = {}
    title_tf: dict[int, int] = {}
    title_n: dict[int, int] = {}  # query concepts in the heading
    for i in live:
        # Forms whose terms never occur play no part.
        forms = [f for f in cforms[i] if any(terms[t].docs for t, _ in f)]
        concept_terms = [t for f in forms for t, _ in f]
        if len(concept_terms) == 1 and uses[concept_terms[0]] == 1 and forms[0][0][1] == 1.0:
            term = terms[concept_terms[0]]
            term.scan(tables, k1, found, path_only, raw)  # one term: straight into the sums
            pg = term.page_scores(tables, k1)
        else:
            page_scores: dict[str, dict[int, float]] = {}
            for t in concept_terms:
                if t not in section_scores:
                    section_scores[t] = terms[t].scan(tables, k1, found, path_only)
                page_scores[t] = terms[t].page_scores(tables, k1)
            for d, s in _best_form(forms, section_scores).items():
                raw[d] += s
            pg = _best_form(forms, page_scores)
        get = page.get
        for f, s in pg.items():
            page[f] = get(f, 0.0) + s
        hit: set[int] = set()
        for t in concept_terms:
            for d, tt in terms[t].titles.items():
                hit.add(d)
                title_tf[d] = title_tf.get(d, 0) + tt
        w = bound[i]
        for d in hit:
            title_w[d] = title_w.get(d, 0.0) + w
            title_n[d] = title_n.get(d, 0) + 1
    lens0 = cache.index.lens[0]
    # A heading holding one word of a longer question is weak evidence: many headings
    # are one generic word of their domain ("Commands", "Requests", "Example").
    need = min(params.title_concepts, len(live))
    for d, w in title_w.items():
        if title_n[d] >= need:
            precision = title_tf[d] / lens0[d]
            raw[d] += tb * (precision if precision < 1.0 else 1.0) * w

    factor = [1.0] * len(tables.file_norm)
    for f, p in page.items():
        factor[f] = 1.0 + gamma * p / total
    prior, file_of = tables.prior, tables.file_of
    # The best score is at least that of the section with the best raw score, and
    # prior <= 1 <= factor <= 1 + page: a raw score under ``cut`` stays under the floor.
    # A match in the heading path alone (file name, ancestor titles) ranks a section
    # but does not make it selectable: its own text must hold a query term.
    for d in path_only:
        if not found[d]:
            raw[d] = 0.0
    top_raw = max(raw)
    if top_raw <= 0.0:
        return []
    top = raw.index(top_raw)
    lower = prior[top] * top_raw * factor[file_of[top]]
    cut = max(floor * lower / (1.0 + gamma) * (1.0 - _EPS), 5e-324)  # never a zero score
    final = {d: prior[d] * raw[d] * factor[file_of[d]]
             for d in compress(range(len(raw)), map(cut.__le__, raw))}
    best = max(final.values())
    ids, versions = cache.sections.ids, cache.sections.versions  # columns: no row dicts
    ranked = []
    cut = floor * best * (1.0 - _EPS)
    for d, s in final.items():
        if s >= cut:
            score = s / best
            if score >= floor:
                ranked.append((score, ids[d], d))
    ranked.sort(key=itemgetter(1))
    ranked.sort(key=itemgetter(0), reverse=True)  # stable: equal scores stay in id order
    seen: set[str] = set()
    unique = []
    for entry in ranked:
        version = versions[entry[2]]
        if version not in seen:
            seen.add(version)
            unique.append(entry)
    return unique


def rank(cache: NativeCache, query: str,
         params: Params = PARAMS) -> list[tuple[float, str, int]]:
    """The ranking ``select`` fills the budget from."""
    return rank_concepts(cache, _concepts(query, cache, params), params)


def select(cache: NativeCache, query: str, budget: int, params: Params = PARAMS) -> dict[str, Any]:
    """The SelectionResult for ``query`` within ``budget`` tokens: the ranking, packed by
    ``server.packing`` (whole sections, excerpts, provenance)."""
    concepts = _concepts(query, cache, params)
    return pack(cache, query, budget, concepts, rank_concepts(cache, concepts, params), params)


def pack(cache: NativeCache, query: str, budget: int, concepts: list[Concept],
         ranked: list[tuple[float, str, int]], params: Params = PARAMS) -> dict[str, Any]:
    """The SelectionResult of a ranking (``select``'s; the benchmark packs its baselines'
    rankings the same way, so budget-hit compares rankings, not budget rules)."""
    terms = _flat(concepts)
    postings = [_Term(cache, t) for t in terms] if ranked else []

    def whole_why(d: int) -> tuple[list[str], int]:
        """The query terms in section ``d``'s text and their occurrences there."""
        found = [(term, p.lookup(d) & 0xFFFF) for term, p in zip(terms, postings)]
        return why_terms([t for t, n in found if n]), sum(n for _, n in found)

    packer = Packer(cache, query, budget, terms, whole_why, params.empty_terms)
    for score, section_id, d in ranked:
        packer.offer(score, section_id, d)
    packer.offer_short()
    return packer.answer()
