"""Deprecated API counts ``deprecated`` (0.5) of its score, unless the question asks what
changed (``query_words.asks_what_changed``): a developer asking how to do something wants
the way the installed version recommends, and the pages of a current release still
document the old way beside it (``CancelToken 👎deprecated`` beside ``AbortController``,
a ``deprecations`` page, a ``legacy`` module, ``pydantic.v1`` inside pydantic 2).

A section is deprecated when its heading or heading path (its file's path and its
ancestors' headings, the ranking's path field) names it so: a word stemming to
``deprec`` (deprecated, deprecations) or ``legaci`` (legacy), or a path component
``v1`` (a first version kept inside a later one). Its text alone does not decide: a
current API's text often mentions what it replaced. Read from the search index's
postings (the heading and path counts of those terms), once per loaded cache.
"""

from __future__ import annotations

import re

from ...store.native_cache import NativeCache
from ..provenance import heading_path
from .base import RankRule
from .query_words import asks_what_changed
from .state import Prior, RankState
from .tables import per_cache

# The index terms that may mark a heading or heading path as deprecated (candidates), and
# what confirms it: the word standing alone (not ``deprecated_args()``, a helper), in a
# path that is not about moving off it (``Migrate to ...``: an upgrade guide); ``v1``
# not as a version number (``v1.3``: a release's heading).
MARKS = ("deprec", "legaci", "v1")
_ALONE = re.compile(r"(?<![\w-])(?:deprecat[a-z]*|legacy|v1(?!\.\d))(?![\w-])", re.IGNORECASE)
_MOVING = re.compile(r"\b(?:migrat\w*|upgrad\w*|moving|porting)\b", re.IGNORECASE)


def deprecated_sections(cache: NativeCache) -> list[int]:
    """The sections whose heading or heading path holds a ``MARKS`` term (per loaded
    cache)."""
    def build() -> list[int]:
        candidates: set[int] = set()
        for term in MARKS:
            docs, tfs = cache.index.postings(term)
            candidates.update(d for d, p in zip(docs, tfs) if p >= 0x10000 and p >> 16)
        files = cache.sections.files
        out = []
        for d in sorted(candidates):
            words = " ".join([files[d].replace("/", " ").replace(".", " "),
                              *heading_path(cache, d)])
            if _ALONE.search(words) and not _MOVING.search(words):
                out.append(d)
        return out
    return per_cache(cache, ("deprecated-sections", MARKS), build)


def apply(state: RankState) -> None:
    factor = state.params.deprecated
    if factor != 1.0 and not asks_what_changed(state.query):
        cache = state.cache
        state.priors.append(Prior(("deprecated", factor), factor,
                                  lambda: deprecated_sections(cache)))


RULE = RankRule("deprecated", apply)
