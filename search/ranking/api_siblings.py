"""API siblings: the k-th API reference entry of one page in the ranking counts
``siblings`` ** (k - 1) of its score (the first counts whole).

An API reference page documents each member of a class in a section of its own
(``Console.print()``, ``Console.log()``, ``Console.status()``, ...): the entries share
their class's name and vocabulary, so a question that matches the class matches them all
alike, and three or four near-copies filled an answer that holds three or four documents.
A page's guides are not touched: consecutive sections of a guide are different steps, and
demoting them cost the section-gold sets (every page's k-th section at 0.9: dev MRR
-0.001, fresh-1 -0.015, fresh-2 -0.017; ``docs/decisions/ranking-rules.md``).

An entry is a section whose text the build took from docstrings (its ``origins``, written
by Sphinx autodoc, mkdocstrings and the ``_api/<module>.md`` pages of package sources;
``store.expansion``), known per loaded cache from the manifest. The scores are re-scaled
by nothing (the best section is the first of its page), re-sorted (score, then id) and cut
at the floor again; the factors are products of IEEE multiplications (no ``pow``).
"""

from __future__ import annotations

from operator import itemgetter

from ...store.native_cache import NativeCache
from .base import RankRule
from .state import RankState
from .tables import per_cache


def api_entries(cache: NativeCache) -> frozenset[int]:
    """The sections whose text came from docstrings (per loaded cache)."""
    others = cache.sections.others
    return per_cache(cache, ("api-entries",), lambda: frozenset(
        d for d, extra in others.items() if extra.get("origins")))


def apply(state: RankState) -> None:
    factor = state.params.siblings
    entries = api_entries(state.cache)
    if factor == 1.0 or not entries:
        return
    files = state.cache.sections.files
    seen: dict[str, float] = {}  # page -> the factor of its next entry
    out = []
    changed = False
    for score, section_id, d in state.ranked:
        if d in entries:
            f = seen.get(files[d], 1.0)
            seen[files[d]] = f * factor
            if f != 1.0:
                score *= f
                changed = True
        out.append((score, section_id, d))
    if not changed:
        return
    floor = state.floor
    out = [e for e in out if e[0] >= floor]
    out.sort(key=itemgetter(1))
    out.sort(key=itemgetter(0), reverse=True)  # stable: equal scores stay in id order
    state.ranked = out


RULE = RankRule("api_siblings", apply)
