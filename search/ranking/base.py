"""What a rule is: the two kinds the rule lists (``rules``) hold.

A *form rule* gives a query word (a ``Concept``) more ways to match: it fills its field of
the concept when the query is analysed (``add``), removes it when switched off (``drop``)
and turns it into weighted forms (``forms``). A *rank rule* works on one query's
:class:`~.state.RankState`: it adds to the section scores, sets a factor, or filters the
ranking. Both run in list order; a rule named in ``Params.off`` does not run.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ...indexer.analysis import Concept
from .forms import Form

if TYPE_CHECKING:
    from ...store.native_cache import NativeCache
    from .params import Params
    from .state import RankState

class FormRule:
    """A form rule: ``add`` fills its field of a concept from the cache, ``drop`` removes
    it, ``forms`` turns it into weighted forms. (Plain classes, not NamedTuples, here and
    in ``state``: they cost less to define on the resolve path's import.)"""

    __slots__ = ("name", "add", "drop", "forms")

    def __init__(self, name: str, add: Callable[[Concept, NativeCache, Params], Concept],
                 drop: Callable[[Concept], Concept],
                 forms: Callable[[Concept, Params], list[Form]]) -> None:
        self.name, self.add, self.drop, self.forms = name, add, drop, forms


class RankRule:
    """A rank rule: ``apply`` works on one query's state."""

    __slots__ = ("name", "apply")

    def __init__(self, name: str, apply: Callable[[RankState], None]) -> None:
        self.name, self.apply = name, apply


def keep(concept: Concept, cache: NativeCache, params: Params) -> Concept:
    """``FormRule.add`` of a rule whose field the query analysis fills."""
    return concept
