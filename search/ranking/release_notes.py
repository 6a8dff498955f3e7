"""Release notes count ``changelog`` (0.5) of their score: they mention every feature in
passing, and rarely answer a question about one, unless the question asks what changed
(an upgrade, a deprecation, a removal, a version: ``query_words.asks_what_changed``); then
they count ``changelog_asked`` of it.

Which sections are release notes is decided at build time (``indexer.analysis``
``section_features``: a file whose own name says so, a number-named file in a changelog
folder, a section under a version-number heading); "what's new" and migration pages are
not: they explain features in prose and answer upgrade questions.
"""

from __future__ import annotations

from ...indexer.analysis import FEATURE_CHANGELOG
from .base import RankRule
from .query_words import asks_what_changed
from .state import Prior, RankState


def apply(state: RankState) -> None:
    params = state.params
    asked = asks_what_changed(state.query)
    factor = params.changelog_asked if asked else params.changelog
    if factor != 1.0:
        index = state.cache.index
        state.priors.append(Prior(("release-notes", factor), factor,
                                  lambda: index.postings(FEATURE_CHANGELOG)[0]))


RULE = RankRule("release_notes", apply)
