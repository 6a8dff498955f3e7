"""A section is selectable only when its own text holds a query term: a match in its
heading path alone (file name, ancestor headings) ranks it among others but never selects
it, since its text would not be about the query."""

from __future__ import annotations

from .base import RankRule
from .state import RankState


def apply(state: RankState) -> None:
    raw, found = state.raw, state.found
    for d in state.path_only:
        if not found[d]:
            raw[d] = 0.0


RULE = RankRule("own_text", apply)
