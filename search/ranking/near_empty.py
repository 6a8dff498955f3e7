"""A heading with (almost) no text of its own counts ``empty`` (0.5) of its score: it tells
an agent nothing. "Almost": at most ``empty_terms`` body terms beyond the heading's."""

from __future__ import annotations

from ...store.search_index import SearchIndex
from .base import RankRule
from .state import Prior, RankState


def near_empty(index: SearchIndex, limit: int) -> list[int]:
    """The sections with at most ``limit`` body terms beyond their heading's."""
    return [d for d, (t, b) in enumerate(zip(index.lens[0], index.lens[2])) if b - t <= limit]


def apply(state: RankState) -> None:
    params = state.params
    factor, limit = params.empty, params.empty_terms
    if factor != 1.0:
        index = state.cache.index
        state.priors.append(Prior(("near-empty", factor, limit), factor,
                                  lambda: near_empty(index, limit)))


RULE = RankRule("near_empty", apply)
