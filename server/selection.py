"""Selection on native caches (stub: ranking lands with the indexer)."""

from __future__ import annotations

from typing import Any

from .errors import ContextError
from .native_cache import NativeCache


def select(cache: NativeCache, query: str, budget: int) -> dict[str, Any]:
    raise ContextError("internal_error", "native selection is not implemented yet")
