"""Identifier parts: ``BackgroundTasks`` also matches "background tasks".

The query analysis (``indexer.analysis``) keeps an identifier whole and splits it into its
parts, as the build does for the documents; the parts form scores the mean of the parts'
scores, so an identifier the docs spell out in words still counts as the word, once.
"""

from __future__ import annotations

from ...indexer.analysis import Concept
from .base import FormRule, keep
from .forms import Form
from .params import Params


def drop(concept: Concept) -> Concept:
    return concept._replace(parts=())


def forms(concept: Concept, params: Params) -> list[Form]:
    if not concept.parts:
        return []
    share = 1.0 / len(concept.parts)
    return [[(p, share) for p in concept.parts]]


RULE = FormRule("identifier_parts", keep, drop, forms)
