"""Heading precision: a heading made of query words is the likeliest answer.

Bonus = ``title_bonus`` x (share of the heading's terms the query matches) x (idf mass of
the concepts the heading holds), added outside BM25 saturation, which otherwise drowns the
heading in a long body. It needs ``title_concepts`` of the query's concepts in the heading
(fewer when the query has fewer): many headings are one generic word of their domain
("Commands", "Requests", "Example"), and such a heading holding one word of a longer
question is weak evidence (it keeps its BM25F heading weight).
"""

from __future__ import annotations

from .base import RankRule
from .state import RankState


def apply(state: RankState) -> None:
    params = state.params
    title_w: dict[int, float] = {}  # idf mass of the concepts in the heading
    title_tf: dict[int, int] = {}  # query-term occurrences in the heading
    title_n: dict[int, int] = {}  # query concepts in the heading
    terms = state.terms
    for concept in state.live:
        hit: set[int] = set()
        for t in concept.terms:
            for d, tt in terms[t].titles.items():
                hit.add(d)
                title_tf[d] = title_tf.get(d, 0) + tt
        w = concept.bound
        for d in hit:
            title_w[d] = title_w.get(d, 0.0) + w
            title_n[d] = title_n.get(d, 0) + 1
    heading_terms = state.cache.index.lens[0]
    need = min(params.title_concepts, len(state.live))
    tb = params.title_bonus
    raw = state.raw
    for d, w in title_w.items():
        if title_n[d] >= need:
            precision = title_tf[d] / heading_terms[d]
            raw[d] += tb * (precision if precision < 1.0 else 1.0) * w


RULE = RankRule("heading_bonus", apply)
