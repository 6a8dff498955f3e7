"""The ranking's parameters: each rule's weight, and the names of the rules switched off.

A rule with a weight is switched off by its neutral value (``title_bonus`` 0, ``page`` 0,
``changelog`` 1, ...) or by its name in ``off``; a rule without one (``identifier_parts``,
``own_text``, ``duplicates``) by its name only. ``bench/ablation.py`` switches each rule
off in turn; ``bench/loco.py`` tunes every number here (``off`` holds none).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Params:
    k1: float = 1.2
    weights: tuple[float, float, float] = (3.0, 1.0, 1.0)  # title, path, body
    b: tuple[float, float, float] = (0.3, 0.3, 0.75)
    floor: float = 0.25  # relative to the best score
    alt_weight: float = 0.5  # an abbreviation / synonym counts this much of the word
    title_bonus: float = 0.2  # heading precision bonus, in units of the matched concepts
    page: float = 0.5  # up to (1 + page) x for a page (file) that matches the whole query
    page_b: float = 0.75
    changelog: float = 0.5  # prior of release-notes sections
    changelog_asked: float = 1.0  # ... when the query asks what changed
    deprecated: float = 0.5  # prior of deprecated API, unless the query asks what changed
    siblings: float = 0.4  # the k-th API entry of one page in the ranking: siblings ** (k-1)
    empty: float = 0.5  # prior of a heading with (almost) no body
    empty_terms: int = 3  # "almost no body": at most this many body terms beyond the title
    related: float = 0.5  # a related word of a word the cache lacks; 0: off
    related_count: int = 1  # related words that stand in for one query word (best first)
    title_concepts: int = 2  # the heading bonus needs this many query concepts in the heading
    later_share: tuple[int, int] = (2, 5)  # packing: a later document's share; (1, 1): off
    off: tuple[str, ...] = ()  # names of rules that do not run (``rules.RULE_NAMES``)


PARAMS = Params()
