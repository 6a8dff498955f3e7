"""slugify as docs/cache-format.md fixes it: ids and navigation paths are built from it."""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

# In a str pattern \w is exactly str.isalnum() or "_", and \s is str.isspace().
_DROPPED = re.compile(r"[^\w\s-]+")
_DASH_RUNS = re.compile(r"[\s_]+")
_MULTI_DASH = re.compile(r"-{2,}")


@lru_cache(maxsize=65536)
def slugify(text: str) -> str:
    """Lowercase; keep Unicode letters/digits, space, ``_`` and ``-``; runs of space/``_``
    become ``-``; collapse and trim ``-``; an empty result is ``section``."""
    text = unicodedata.normalize("NFC", text).lower()
    kept = _DROPPED.sub("", text)
    slug = _DASH_RUNS.sub("-", kept)
    slug = _MULTI_DASH.sub("-", slug).strip("-")
    return slug or "section"
