"""Page evidence: a paraphrased question often names what a page is about rather than the
words of the answering section.

Each section's score is multiplied by 1 + ``page`` x (BM25 of its whole file for the query,
each concept by its best form) / (the query's idf mass), in [1, 1 + ``page``). The file
tfs come from the BM25F scan; a page's length is normalized by ``page_b``.
"""

from __future__ import annotations

from ...store.native_cache import NativeCache
from .base import RankRule
from .forms import best_form
from .state import RankState
from .tables import files, per_cache
from .terms import Term


def file_norms(cache: NativeCache, page_b: float) -> list[float]:
    """Each file's length normalization (per loaded cache)."""
    def build() -> list[float]:
        file_len = files(cache).length
        avg_file = (sum(file_len) / len(file_len)) if file_len else 1.0
        return [1.0 - page_b + page_b * length / avg_file for length in file_len]
    return per_cache(cache, ("file-norms", page_b), build)


def page_scores(term: Term, file_norm: list[float], k1: float) -> dict[int, float]:
    """The term's BM25 score of each page (file) that holds it."""
    idf = term.idf
    out: dict[int, float] = {}
    for f, tf in term.file_tf.items():
        x = tf / file_norm[f]
        out[f] = idf * x / (k1 + x)
    return out


def apply(state: RankState) -> None:
    params = state.params
    gamma = params.page
    if gamma == 0.0:
        return  # every factor would be 1
    file_norm = file_norms(state.cache, params.page_b)
    terms, k1 = state.terms, params.k1
    page: dict[int, float] = {}
    for concept in state.live:
        scores = {t: page_scores(terms[t], file_norm, k1) for t in concept.terms}
        get = page.get
        for f, s in best_form(concept.forms, scores).items():
            page[f] = get(f, 0.0) + s
    factor = [1.0] * len(file_norm)
    total = state.total
    for f, p in page.items():
        factor[f] = 1.0 + gamma * p / total
    state.factor = factor
    state.page_max = 1.0 + gamma


RULE = RankRule("page_evidence", apply)
