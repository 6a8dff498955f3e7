"""slugify as DESIGN.md fixes it: ids and navigation paths are built from it."""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

_DASH_RUNS = re.compile(r"[\s_]+")
_MULTI_DASH = re.compile(r"-{2,}")


@lru_cache(maxsize=65536)
def slugify(text: str) -> str:
    """Lowercase; keep Unicode letters/digits, space, ``_`` and ``-``; runs of space/``_``
    become ``-``; collapse and trim ``-``; an empty result is ``section``."""
    text = unicodedata.normalize("NFC", text).lower()
    kept = "".join(ch for ch in text if ch.isalnum() or ch in " _-" or ch.isspace())
    slug = _DASH_RUNS.sub("-", kept)
    slug = _MULTI_DASH.sub("-", slug).strip("-")
    return slug or "section"
