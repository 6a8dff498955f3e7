"""The one rule for cache names, shared by the store (which writes ``<root>/<name>``) and
the readers (which open the cache a caller names): :func:`name_problem`.

A name is one path component directly under the root: not empty, not ``.`` or ``..``,
not the store's own area :data:`STAGING_DIR`, no ``/`` or ``\\``, no control character
(C0, DEL, C1) and valid UTF-8 (no lone surrogates). Each door raises its own error type
with the problem (the store ``InvalidCacheKey``, readers ``cache_missing``).
"""

from __future__ import annotations

# A cache's two files that make it one (store.manifest): a walk of a source never enters a
# directory holding both (sources.walk).
MANIFEST_NAME = "manifest.json"
SEARCH_INDEX_NAME = "search.idx"

# The store's staging area and build locks under a cache root (store.commit): never a cache.
STAGING_DIR = ".doc-index-tmp"


def name_problem(name: object) -> str | None:
    """What makes ``name`` unusable as a cache name, or None when it is fine."""
    if not isinstance(name, str) or name in ("", ".", ".."):
        return "empty or relative"
    if name == STAGING_DIR:
        return "reserved for the store's staging area"
    if "/" in name or "\\" in name:
        return "not a single path component"
    if any(ord(ch) < 0x20 or 0x7F <= ord(ch) <= 0x9F for ch in name):
        return "holds a control character"
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return "not valid UTF-8"
    return None
