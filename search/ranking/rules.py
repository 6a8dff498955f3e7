"""The rule lists: what the ranking does, in the order it does it.

``FORM_RULES`` give a query word more ways to match; ``RANK_RULES`` score and filter the
sections. A rule named in ``Params.off`` does not run (``bench/ablation.py`` switches each
off in turn). The order matters where a rule reads what an earlier one left: the BM25F
scan records what the heading bonus, the page evidence and the own-text rule read; the
own-text rule zeroes what the bonus added; ``score`` combines the priors and the page
factors and applies the floor; ``duplicates`` filters the ordered result.
"""

from __future__ import annotations

from . import (
    alternatives,
    api_siblings,
    bm25f,
    deprecated,
    duplicates,
    floor,
    heading_bonus,
    identifier_parts,
    near_empty,
    own_text,
    page_evidence,
    related_words,
    release_notes,
    score,
)
from .base import FormRule, RankRule

FORM_RULES: tuple[FormRule, ...] = (
    identifier_parts.RULE,
    alternatives.RULE,
    related_words.RULE,
)
RANK_RULES: tuple[RankRule, ...] = (
    bm25f.RULE,
    heading_bonus.RULE,
    page_evidence.RULE,
    release_notes.RULE,
    deprecated.RULE,
    near_empty.RULE,
    own_text.RULE,
    floor.RULE,
    score.RULE,
    duplicates.RULE,
    api_siblings.RULE,
)
RULE_NAMES: tuple[str, ...] = (*[r.name for r in FORM_RULES], *[r.name for r in RANK_RULES])


def check_off(off: tuple[str, ...]) -> None:
    """A name in ``Params.off`` that names no rule is a mistake, not a no-op."""
    unknown = [name for name in off if name not in RULE_NAMES]
    if unknown:
        raise ValueError(f"no ranking rule named {', '.join(unknown)} (rules: "
                         f"{', '.join(RULE_NAMES)})")
