"""Alternatives: another spelling of the same idea counts, at a lower weight.

From a small generic table of software abbreviations and two-word verbs
(``indexer.analysis``: ``config`` ~ configuration, ``turn off`` ~ disable), each at
``alt_weight`` of the word; the best form counts, so one idea spelled three ways counts
once. With ``alt_weight`` 0 the alternatives still match (they mark a section as holding
a query term and count in the heading bonus) but add no score; switched off by name they
are not looked for at all.
"""

from __future__ import annotations

from ...indexer.analysis import Concept
from .base import FormRule, keep
from .forms import Form
from .params import Params


def drop(concept: Concept) -> Concept:
    return concept._replace(alts=())


def forms(concept: Concept, params: Params) -> list[Form]:
    return [[(a, params.alt_weight)] for a in concept.alts]


RULE = FormRule("alternatives", keep, drop, forms)
