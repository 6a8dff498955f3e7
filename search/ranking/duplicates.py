"""An exact duplicate of a better-ranked section (same ``version``: same text) is not
selected: it would spend the budget on what the answer already holds."""

from __future__ import annotations

from .base import RankRule
from .state import RankState


def apply(state: RankState) -> None:
    versions = state.cache.sections.versions  # a column: no row dicts
    seen: set[str] = set()
    unique = []
    for entry in state.ranked:
        version = versions[entry[2]]
        if version not in seen:
            seen.add(version)
            unique.append(entry)
    state.ranked = unique


RULE = RankRule("duplicates", apply)
