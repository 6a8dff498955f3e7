"""doc-index: a section-level documentation cache for AI agents.

The library API (``doc_index.api``; every door is a thin layer over it)::

    import doc_index

    report = doc_index.build("path/to/repo", root="caches")   # a BuildReport
    answer = doc_index.resolve(report.key, "retry timeout", 2000, root="caches")
    for doc in answer.documents:
        print(doc["id"], doc["score"], doc["tokens"])

``list_caches``, ``inspect``, ``describe_caches``, ``describe`` (a cache's source, ref,
commit, tokens, build time: ``CacheDetails``), ``delete``, ``install_hooks`` and
``uninstall_hooks`` do the rest; errors are ``DocIndexError`` subclasses
(``doc_index.foundation.errors``). The code lives in three subpackages, following the data:
``indexer`` (source text -> sections), ``store`` (sections <-> cache directory) and
``server`` (cache -> answers: selection, the three tools, MCP, the ``context`` CLI). The
names below load on first use (PEP 562), so ``import doc_index`` costs every door nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from .api import (
        build,
        delete,
        describe,
        describe_caches,
        inspect,
        install_hooks,
        list_caches,
        resolve,
        uninstall_hooks,
    )
    from .foundation.errors import CacheMissing, ContextError, DocIndexError, UsageError
    from .search.cache_details import CacheDetails
    from .search.results import Answer, CacheEntry, CacheInfo
    from .store.index_store import BuildReport
    from .store.sources.git import GitSourceError

_EXPORTS = {
    "build": "api", "list_caches": "api", "inspect": "api", "resolve": "api",
    "delete": "api", "install_hooks": "api", "uninstall_hooks": "api",
    "describe_caches": "api", "describe": "api", "CacheDetails": "search.cache_details",
    "DocIndexError": "foundation.errors", "UsageError": "foundation.errors",
    "ContextError": "foundation.errors",
    "CacheMissing": "foundation.errors",
    "Answer": "search.results", "CacheEntry": "search.results", "CacheInfo": "search.results",
    "BuildReport": "store.index_store", "GitSourceError": "store.sources.git",
}

__all__ = [
    "Answer", "BuildReport", "CacheDetails", "CacheEntry", "CacheInfo", "ContextError",
    "DocIndexError", "GitSourceError", "CacheMissing", "UsageError", "__version__", "build",
    "delete", "describe", "describe_caches", "inspect", "install_hooks", "list_caches",
    "resolve", "uninstall_hooks",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'doc_index' has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value  # later lookups skip this function
    return value
