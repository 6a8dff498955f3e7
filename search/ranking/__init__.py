"""Ranking a native cache's sections for a query: rules in a list, one file each.

A query word is a *concept*; the form rules (``rules.FORM_RULES``) give it more ways to
match (identifier parts, alternatives, related words), and the best way counts, once.
Sections are scored by the rank rules (``rules.RANK_RULES``), in order: BM25F over
heading, heading path and text; the heading-precision bonus; page evidence; the priors
(release notes, near-empty headings); the own-text rule; the relative floor; the final
score and order; duplicate versions dropped. Each rule's weight is in :class:`Params`,
and any rule can be switched off by name (``Params.off``). What each rule does and why,
and the ablation table, are in ``docs/decisions/ranking-rules.md``.

Determinism: IEEE basic operations and ``foundation.detmath`` only, every sum taken in
query order by plain ``+`` (``detmath.ordered_sum``, never the built-in ``sum`` of floats),
so equal cache bytes and arguments give equal output bytes on any machine.
"""

from __future__ import annotations

from .core import Ranked, analyze_query, concepts, flat_terms, rank, rank_concepts
from .params import PARAMS, Params
from .rules import FORM_RULES, RANK_RULES, RULE_NAMES

__all__ = ["FORM_RULES", "PARAMS", "Params", "RANK_RULES", "RULE_NAMES", "Ranked",
           "analyze_query", "concepts", "flat_terms", "rank", "rank_concepts"]
