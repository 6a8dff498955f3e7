"""Loading a native doc-index cache for resolve (stub: the real loader lands with the store)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .errors import ContextError


@dataclass
class NativeCache:
    cache_version: str
    document_count: int


def load_native_cache(cache_dir: Path) -> NativeCache:
    raise ContextError("internal_error", "native caches are not readable yet")
