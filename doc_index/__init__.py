"""doc-index: a section-level documentation cache for AI agents.

The library (``doc_index.library``; every door calls it)::

    import doc_index

    index = doc_index.DocIndex("caches")          # the caches under one root
    report = index.build("path/to/repo")           # a BuildReport
    answer = index.cache(report.key).resolve("retry timeout", 2000)
    for doc in answer.documents:
        print(doc["id"], doc["score"], doc["tokens"])

``index.caches()`` lists the caches, ``cache.info()`` describes one (``CacheDetails``),
``cache.delete()`` deletes it; ``index.install_hooks``, ``uninstall_hooks``, ``serve`` and
``mcp_config`` do the rest, and ``build_v0`` is ``context build``. Errors are one tree
under ``DocIndexError`` (``doc_index.foundation.errors`` draws it). The layers are in
docs/architecture.md. The names below load on first use (PEP 562), so ``import
doc_index`` costs every door nothing.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from .foundation.errors import (
        BadSource,
        BudgetError,
        CacheInvalid,
        CacheMissing,
        ContextError,
        DocIndexError,
        GitSourceError,
        InternalError,
        IoError,
        NothingToIndex,
        OtherSource,
        PackageError,
        QueryError,
        SourceError,
        UsageError,
    )
    from .library import Cache, DocIndex, build_v0
    from .search.cache_details import CacheDetails
    from .search.results import Answer, Document, Selection
    from .store.index_store import BuildReport
    from .store.v0_build import BuiltCache

_ERRORS = ("BadSource", "BudgetError", "CacheInvalid", "CacheMissing", "ContextError",
           "DocIndexError", "GitSourceError", "InternalError", "IoError", "NothingToIndex",
           "OtherSource", "PackageError", "QueryError", "SourceError", "UsageError")
_EXPORTS = {
    "DocIndex": "library", "Cache": "library", "build_v0": "library",
    "Answer": "search.results", "Document": "search.results", "Selection": "search.results",
    "CacheDetails": "search.cache_details", "BuildReport": "store.index_store",
    "BuiltCache": "store.v0_build",
    **{name: "foundation.errors" for name in _ERRORS},
}

__all__ = [
    "Answer", "BadSource", "BudgetError", "BuildReport", "BuiltCache", "Cache", "CacheDetails",
    "CacheInvalid", "CacheMissing", "ContextError", "DocIndex", "DocIndexError", "Document",
    "GitSourceError", "InternalError", "IoError", "NothingToIndex", "OtherSource", "PackageError",
    "QueryError", "Selection", "SourceError", "UsageError", "__version__", "build_v0",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'doc_index' has no attribute {name!r}")

    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value  # later lookups skip this function
    return value
