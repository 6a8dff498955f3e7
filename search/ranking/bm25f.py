"""BM25F: a section is a document of three fields, its heading, its heading path (file
path words and ancestor headings) and its text.

The weighted field frequencies (``Params.weights``, length normalization ``b`` per field)
are saturated together (``k1``), so a term repeated in heading, path and body is not
counted three times; saturating each field on its own ranked hard questions much worse.
A concept adds the score of its best form (``forms.best_form``). One term-at-a-time pass
over each term's postings into the dense per-section sums; the same pass records what the
later rules need (headings holding the term, per-file body tfs, sections whose own text
holds it), so no rule reads the postings again.
"""

from __future__ import annotations

from ...store.native_cache import NativeCache
from .base import RankRule
from .forms import best_form
from .state import RankState
from .tables import files, per_cache
from .terms import Term

Norms = tuple[list[float], list[float], list[float]]  # field weight / length normalization


def field_norms(cache: NativeCache, weights: tuple[float, float, float],
                b: tuple[float, float, float]) -> Norms:
    """Each section's weight / length normalization per field (per loaded cache)."""
    def build() -> Norms:
        index = cache.index
        norm = []
        for f in range(3):
            w, bf, avg, col = weights[f], b[f], index.avg[f] or 1.0, index.lens[f]
            by_length = {x: w / (1.0 - bf + bf * x / avg) for x in set(col)}  # few lengths
            norm.append(list(map(by_length.__getitem__, col)))
        return norm[0], norm[1], norm[2]
    return per_cache(cache, ("field-norms", weights, b), build)


def scan(term: Term, norm: Norms, file_of: list[int], k1: float, state: RankState,
         into_raw: bool) -> dict[int, float]:
    """BM25F score of every section holding ``term``: added into ``state.raw`` when
    ``into_raw`` (the fast path of a one-term concept), else returned. Records the term's
    titles and file tfs, and marks ``state.found``/``state.path_only``."""
    nt, np_, nb = norm
    idf = term.idf
    out: dict[int, float] = {}
    raw = state.raw
    found = state.found
    path_only = state.path_only
    file_tf = term.file_tf
    titles = term.titles
    # Sections of a file are contiguous and postings sorted: sum tfs per file run.
    cur = -1
    run = 0
    for d, p in zip(term.docs, term.tfs):
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
        if into_raw:
            raw[d] += idf * tf / (k1 + tf)
        else:
            out[d] = idf * tf / (k1 + tf)
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


def apply(state: RankState) -> None:
    params = state.params
    norm = field_norms(state.cache, params.weights, params.b)
    file_of = files(state.cache).of
    k1 = params.k1
    terms = state.terms
    scanned: dict[str, dict[int, float]] = {}
    for concept in state.live:
        only = concept.terms[0]
        if (len(concept.terms) == 1 and state.uses[only] == 1
                and concept.forms[0][0][1] == 1.0):
            scan(terms[only], norm, file_of, k1, state, True)  # straight into the sums
            continue
        for t in concept.terms:
            if t not in scanned:
                scanned[t] = scan(terms[t], norm, file_of, k1, state, False)
        raw = state.raw
        for d, s in best_form(concept.forms, scanned).items():
            raw[d] += s


RULE = RankRule("bm25f", apply)
