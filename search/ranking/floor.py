"""The relative floor: a section scoring under ``floor`` x the best is not selected, so
weak matches never fill the budget (switched off: every section with a positive score)."""

from __future__ import annotations

from .base import RankRule
from .state import RankState


def apply(state: RankState) -> None:
    state.floor = state.params.floor


RULE = RankRule("floor", apply)
