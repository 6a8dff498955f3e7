"""The final score: prior x (the additive score) x page factor, scaled to [0, 1] by the
best; the sections under the floor are dropped; the order is score descending, then id
ascending.

The best score is at least that of the section with the best additive score, and every
prior <= 1 <= factor <= ``page_max``: a section whose additive score is under ``cut`` stays
under the floor, so only the others are scored (at C speed over the dense sums).
"""

from __future__ import annotations

from itertools import compress
from operator import itemgetter

from .base import RankRule
from .state import RankState
from .tables import files, per_cache

_EPS = 1e-9  # safety margin of the pruning bounds (they are compared, never output)


def priors(state: RankState) -> list[float]:
    """Each section's prior: the product of the factors of the priors that apply to it
    (per loaded cache and set of priors)."""
    def build() -> list[float]:
        prior = [1.0] * state.cache.index.count
        for p in state.priors:
            for d in p.sections():
                prior[d] *= p.factor
        return prior
    return per_cache(state.cache, ("prior", *[p.key for p in state.priors]), build)


def apply(state: RankState) -> None:
    raw = state.raw
    top_raw = max(raw)
    if top_raw <= 0.0:
        return
    prior = priors(state)
    pages = files(state.cache)
    file_of = pages.of
    factor = state.factor or [1.0] * len(pages.length)
    floor = state.floor
    top = raw.index(top_raw)
    lower = prior[top] * top_raw * factor[file_of[top]]
    cut = max(floor * lower / state.page_max * (1.0 - _EPS), 5e-324)  # never a zero score
    final = {d: prior[d] * raw[d] * factor[file_of[d]]
             for d in compress(range(len(raw)), map(cut.__le__, raw))}
    best = max(final.values())
    ids = state.cache.sections.ids  # a column: no row dicts
    ranked = []
    cut = floor * best * (1.0 - _EPS)
    for d, s in final.items():
        if s >= cut:
            score = s / best
            if score >= floor:
                ranked.append((score, ids[d], d))
    ranked.sort(key=itemgetter(1))
    ranked.sort(key=itemgetter(0), reverse=True)  # stable: equal scores stay in id order
    state.ranked = ranked


RULE = RankRule("score", apply)
