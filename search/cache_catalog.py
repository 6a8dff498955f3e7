"""What each cache holds, for agents: the MCP server's ``doc-index://caches`` resource.

The three v0 tools keep their bytes (the specs fix them); this catalog says, per cache,
where it came from (``source``: kind, location, ref and commit; for a package its name,
version, index, archive hash and the repository, tag and commit its docs came from), the
indexed commit, when it was built, and which projects pin it (``projects``: the folders
whose last ``doc-index sync`` named it, ``store.sync_records``). Only each manifest's
header is read (not its sections), every field checked as ``cache_details`` checks it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

RESOURCE_URI = "doc-index://caches"


def catalog(root: Path) -> dict[str, Any]:
    """``{"caches": [...]}`` in ``context.list_caches``' order; CacheMissing/IoError as it
    when the root cannot be listed. (Imports here: the server imports this module at
    start for ``RESOURCE_URI`` only.)"""
    from ..sources.identity import shown_source
    from ..store.index_store import IndexStore
    from ..store.sync_records import pinned_by_projects
    from .cache_details import checked_source
    from .tools import cache_entries

    store = IndexStore(root)
    pinned = pinned_by_projects(root)
    caches = []
    for entry in cache_entries(root):
        header = store.live_header(entry.path) if entry.has_manifest else None
        record = header.get("source") if header else None
        source = None
        if isinstance(record, dict) and shown_source(record) is not None:
            source = checked_source(record)
        item: dict[str, Any] = {
            "name": entry.path,
            "source": source,
            "described": shown_source(record, with_commit=True) if source else None,
            "commit": _text(header.get("commit_hash")) if header else None,
            "indexed_at": _text(header.get("indexed_at")) if header else None,
            "projects": pinned.get(entry.path, []),
        }
        caches.append(item)
    return {"caches": caches}


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


__all__ = ["RESOURCE_URI", "catalog"]
