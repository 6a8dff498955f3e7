"""The byte-exact ``context build``: a Context Engine v0 cache of a directory's Markdown
files, as the reference writes it (``v0_cache`` loads such caches).

Layout (``specs/context-engine-v0.md``): ``manifest.json`` and ``index.json`` as 2-space
pretty JSON without a trailing newline, ``documents/<12hex>.json`` as compact JSON.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, NamedTuple

from ..foundation.errors import CacheInvalid, ContextError, InternalError, IoError, NotACache
from ..foundation.strict_json import parse_json
from .cache_files import read_regular
from .v0_cache import sha256_version

BUILD_CONFIG: dict[str, str] = {"version": "1", "hash_algorithm": "sha256"}
_BUILD_CONFIG_JSON = json.dumps(BUILD_CONFIG, separators=(",", ":")).encode("utf-8")





class BuiltCache(NamedTuple):
    """What ``context build`` reports: ``Built cache: N documents, version V``."""

    document_count: int
    cache_version: str


def compute_cache_version(entries: list[tuple[str, str]]) -> str:
    """``cache_version`` over the build config and ``id:version`` of each (id-sorted) entry."""
    digest = hashlib.sha256(_BUILD_CONFIG_JSON)
    for doc_id, version in entries:
        digest.update(f"{doc_id}:{version}".encode())
    return "sha256:" + digest.hexdigest()


def build_v0_cache(sources: Path, cache: Path, force: bool) -> BuiltCache:
    """Write a v0 cache of every ``*.md`` file under ``sources``, byte-identical to the reference.

    Raises ContextError with the reference's exit codes: missing sources, an unreadable
    file or directory, or an existing cache without ``force`` -> ``io_error`` (6); with
    ``force``, an existing ``cache`` that is not a v0 cache (:func:`is_v0_cache`) ->
    :class:`NotACache` (``io_error``, 6), nothing deleted;
    duplicate id -> ``cache_invalid`` (5); non-UTF-8 content or path, or two documents
    with the same file name (equal content) -> ``internal_error`` (7). The cache is
    written to a sibling temporary directory and renamed into place, so a failed or
    killed build leaves any previous cache as it was.
    """
    try:
        return _build(sources, cache, force)
    except OSError:
        raise IoError() from None


def _build(sources: Path, cache: Path, force: bool) -> BuiltCache:
    if not sources.is_dir():
        raise IoError()
    documents = [_read_source(relative, path) for relative, path in _walk_markdown(sources, ())]
    if os.path.lexists(cache) and (not force or _contains(cache, sources)):
        raise IoError()
    if os.path.lexists(cache) and not is_v0_cache(cache):
        from ..foundation.printable import printable  # lazy: only on this branch

        raise NotACache(
            f"{printable(cache)} is not a Context Engine cache (no v0 manifest.json in it); "
            "--force replaces only a cache: choose another --cache, or move it away yourself")

    documents.sort(key=lambda doc: doc["id"])
    files: dict[str, dict[str, Any]] = {}
    for previous, doc in zip(documents, documents[1:]):
        if previous["id"] == doc["id"]:
            raise CacheInvalid()
    for doc in documents:
        name = f"documents/{doc['version'][len('sha256:') :][:12]}.json"
        if name in files:
            raise InternalError()
        files[name] = doc

    entries = [{"id": d["id"], "version": d["version"], "file": n} for n, d in files.items()]
    cache_version = compute_cache_version([(e["id"], e["version"]) for e in entries])
    manifest = {
        "cache_version": cache_version,
        "build_config": dict(BUILD_CONFIG),
        "created_at": _now_rfc3339(),
        "document_count": len(entries),
        "documents": entries,
    }
    index = {entry["id"]: entry["file"] for entry in entries}
    outputs = {name: _compact(doc) for name, doc in files.items()}
    outputs["index.json"] = _pretty(index)
    outputs["manifest.json"] = _pretty(manifest)
    _write_atomically(cache, outputs)
    return BuiltCache(len(entries), cache_version)


def _walk_markdown(directory: Path, parts: tuple[str, ...]) -> Iterator[tuple[str, Path]]:
    """``(relative path, path)`` of each ``.md`` file, depth-first in file-name byte order.

    Symlinked files are followed, symlinked directories are not, hidden paths are kept;
    a file named just ``.md`` has no extension and is skipped, as in the reference.
    """
    with os.scandir(directory) as scan:
        entries = sorted(scan, key=lambda entry: os.fsencode(entry.name))
    for entry in entries:
        path = directory / entry.name
        if entry.is_dir(follow_symlinks=False):
            yield from _walk_markdown(path, (*parts, entry.name))
        elif entry.name.endswith(".md") and entry.name != ".md" and path.is_file():
            yield "/".join((*parts, entry.name)), path


def _read_source(relative: str, path: Path) -> dict[str, Any]:
    try:
        relative.encode("utf-8")
    except UnicodeEncodeError:
        raise InternalError() from None
    raw = path.read_bytes()
    try:
        content = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InternalError() from None
    doc_id = relative.replace("\\", "/")
    while doc_id.startswith("./"):
        doc_id = doc_id[2:]
    return {
        "id": doc_id.lower(),
        "version": sha256_version(raw),
        "source": relative,
        "content": content,
        "metadata": {},
    }


def is_v0_cache(path: Path) -> bool:
    """True when ``path`` is a real directory (not a symlink) holding a regular
    ``manifest.json`` that is a v0 manifest (a JSON object with ``build_config``): the
    only thing ``--force`` may replace (and so delete)."""
    try:
        dir_fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        manifest = parse_json(read_regular(dir_fd, "manifest.json"))
    except (OSError, ValueError, ContextError):
        return False
    finally:
        os.close(dir_fd)
    return isinstance(manifest, dict) and "build_config" in manifest


def _contains(cache: Path, sources: Path) -> bool:
    """True if replacing ``cache`` would delete ``sources`` (same directory or an ancestor)."""
    target = cache.resolve()
    source = sources.resolve()
    return target == source or target in source.parents


def _now_rfc3339() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _compact(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def _pretty(value: Any) -> bytes:
    return json.dumps(value, indent=2, ensure_ascii=False).encode("utf-8")


def _write_atomically(cache: Path, outputs: dict[str, bytes]) -> None:
    """Write ``outputs`` into a sibling staging dir, fsync them, then swap it in for ``cache``."""
    # lazy: defers store.commit (+12 modules) to the call
    from .commit import commit, fsync_dir  # ctypes: only a build pays for it

    parent = cache.parent
    parent.mkdir(parents=True, exist_ok=True)
    staging = parent / f".{cache.name}.tmp-{os.urandom(6).hex()}"
    os.mkdir(staging)
    try:
        os.mkdir(staging / "documents")
        for name, data in outputs.items():
            with open(staging / name, "xb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
        fsync_dir(staging / "documents")
        commit(staging, cache)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
