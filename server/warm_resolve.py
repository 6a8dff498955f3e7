"""``tools.resolve`` with the loaded cache kept warm between calls (the MCP server's path).

Same steps, checks and errors as :func:`.tools.resolve`, in the same order; only the
loading is split out (:func:`load_for_resolve`) and memoized in a :class:`WarmCaches`
keyed by the cache's stamp, so a rebuilt cache is loaded again on the next call. A
native cache swapped out while a selection reads it (``CacheReplaced``) is dropped from
the memo and loaded again, like the cold path does.

This module exists until ``tools.resolve`` takes an optional ``warm`` argument itself
(see :func:`.mcp_tools.ToolCalls`, which prefers that when it is there); a differential
test keeps the two byte-identical meanwhile.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

from .errors import ContextError
from .tools import MANIFEST, check_budget
from .v0_cache import V0Cache, load_v0_cache, parse_json
from .v0_selection import render, select_v0
from .warm_caches import WarmCaches

KIND = "resolve"
ATTEMPTS = 3


def load_for_resolve(cache_dir: Path) -> Any:
    """The loaded cache behind ``cache_dir``: a :class:`V0Cache` or a ``NativeCache``."""
    try:
        data = (cache_dir / MANIFEST).read_bytes()
    except (FileNotFoundError, NotADirectoryError):
        raise ContextError("cache_missing", "no manifest.json") from None
    except IsADirectoryError:
        raise ContextError("cache_invalid", "manifest.json is a directory") from None
    try:
        manifest = parse_json(data)
    except ValueError:
        raise ContextError("cache_invalid", "manifest.json is not JSON") from None
    if isinstance(manifest, dict) and "build_config" in manifest:
        return load_v0_cache(cache_dir, manifest)
    if isinstance(manifest, dict) and "index_version" in manifest:
        from .native_cache import load_native_cache

        return load_native_cache(cache_dir)
    raise ContextError("cache_invalid", "manifest is neither a v0 nor a native manifest")


def resolve_warm(
    warm: WarmCaches, cache_dir: Path, query: str, budget: object, pretty: bool = False
) -> str:
    """:func:`.tools.resolve`, loading through ``warm``."""
    checked = check_budget(budget)
    if not isinstance(query, str):
        raise ContextError("invalid_query", "query must be a string")
    _require_directory(cache_dir)
    for _ in range(ATTEMPTS):
        cache = warm.get(cache_dir, KIND, load_for_resolve)
        if isinstance(cache, V0Cache):
            return render(select_v0(cache.documents, query, checked), pretty)
        from .jsonout import dumps
        from .native_cache import CacheReplaced
        from .selection import select

        try:
            return dumps(select(cache, query, checked), pretty)
        except CacheReplaced:
            warm.discard(cache_dir, KIND)
    raise ContextError("io_error", "the cache kept being replaced while it was read")


def _require_directory(path: Path) -> None:
    try:
        info = os.stat(path)
    except (FileNotFoundError, NotADirectoryError, ValueError):
        raise ContextError("cache_missing") from None
    if not stat.S_ISDIR(info.st_mode):
        raise ContextError("cache_missing")
