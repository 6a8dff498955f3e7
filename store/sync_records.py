"""Which caches ``sync`` made for which project, kept in the store's own area.

``<root>/.doc-index-tmp/.doc-index-tmp/sync/<sha256 of the project's path>.json``:
``{"project": path, "pinned": [cache, ...], "made": [cache, ...]}``: the caches the
project pinned at its last sync, and those sync made (or kept) for it and has not pruned.
``sync --prune`` reads them (a cache another project pins is not pruned); the MCP server
tells agents which projects pin each cache. A project whose folder is gone pins nothing.
Read as untrusted data (size-capped, type-checked); written atomically.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from ..foundation.cache_names import STAGING_DIR
from .commit import staging_root

SYNC_FOLDER = "sync"
MAX_RECORD_BYTES = 1 << 20


def records_dir(root: Path) -> Path:
    return staging_root(root) / STAGING_DIR / SYNC_FOLDER


def record_path(root: Path, project: Path) -> Path:
    digest = hashlib.sha256(os.fsencode(project)).hexdigest()[:24]
    return records_dir(root) / f"{digest}.json"


def _read_json(path: Path) -> dict[str, Any]:
    try:
        with open(path, "rb") as fh:
            data = json.loads(fh.read(MAX_RECORD_BYTES))
    except (OSError, ValueError, RecursionError):
        return {}
    return data if isinstance(data, dict) else {}


def _names(value: Any) -> list[str]:
    return [k for k in value if isinstance(k, str)] if isinstance(value, list) else []


def read_record(root: Path, project: Path) -> dict[str, Any]:
    """This project's record (``{}`` when there is none)."""
    record = _read_json(record_path(root, project))
    return record if record.get("project") == os.fsdecode(project) else {}


def made_for(root: Path, project: Path) -> set[str]:
    return set(_names(read_record(root, project).get("made")))


def pinned_by_projects(root: Path) -> dict[str, list[str]]:
    """Cache name -> the projects (paths, sorted) whose last sync pinned it, for the
    projects whose folder still exists."""
    pinned: dict[str, set[str]] = {}
    try:
        names = sorted(os.listdir(records_dir(root)))
    except OSError:
        return {}
    for name in names:
        record = _read_json(records_dir(root) / name)
        project = record.get("project")
        if not isinstance(project, str) or not os.path.isdir(project):
            continue
        for key in _names(record.get("pinned")):
            pinned.setdefault(key, set()).add(project)
    return {key: sorted(projects) for key, projects in sorted(pinned.items())}


def write_record(root: Path, project: Path, pinned: set[str], made: set[str]) -> None:
    record = {"project": os.fsdecode(project), "pinned": sorted(pinned), "made": sorted(made)}
    path = record_path(root, project)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    tmp.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(tmp, path)


__all__ = ["made_for", "pinned_by_projects", "read_record", "record_path", "write_record"]
