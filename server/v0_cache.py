"""Context Engine v0 caches: strict loading for resolve, and the byte-exact ``context build``.

Layout (``specs/context-engine-v0.md``): ``manifest.json`` and ``index.json`` as 2-space
pretty JSON without a trailing newline, ``documents/<12hex>.json`` as compact JSON.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath
from typing import Any, NamedTuple

from ..errors import ContextError
from .cache_files import read_regular
from .strict_json import parse_json
from .v0_selection import V0Document

BUILD_CONFIG: dict[str, str] = {"version": "1", "hash_algorithm": "sha256"}
_BUILD_CONFIG_JSON = json.dumps(BUILD_CONFIG, separators=(",", ":")).encode("utf-8")
_RFC3339 = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})", re.ASCII
)
_I64 = range(-(2**63), 2**63)


class NotACache(ContextError):
    """``--force`` names an existing path that is not a Context Engine cache: it is left
    alone. ``io_error`` (exit 6) as for the reference's other refusals of ``--cache``, with
    a message for people (the path and the way out) instead of the canonical one."""

    def __init__(self, cache: Path) -> None:
        from ..printable import printable

        super().__init__(
            "io_error",
            f"{printable(cache)} is not a Context Engine cache (no v0 manifest.json in it); "
            "--force replaces only a cache: choose another --cache, or move it away yourself",
        )

    @property
    def message(self) -> str:
        return self.detail or super().message


class BuiltCache(NamedTuple):
    """What ``context build`` reports: ``Built cache: N documents, version V``."""

    document_count: int
    cache_version: str


class V0Cache(NamedTuple):
    """A loaded and verified v0 cache."""

    cache_version: str
    documents: list[V0Document]


def sha256_version(data: bytes) -> str:
    """A document version: ``"sha256:"`` + hex digest."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


def compute_cache_version(entries: list[tuple[str, str]]) -> str:
    """``cache_version`` over the build config and ``id:version`` of each (id-sorted) entry."""
    digest = hashlib.sha256(_BUILD_CONFIG_JSON)
    for doc_id, version in entries:
        digest.update(f"{doc_id}:{version}".encode())
    return "sha256:" + digest.hexdigest()


# --- loading -----------------------------------------------------------------------------


def load_v0_cache(dir_fd: int, manifest: Any) -> V0Cache:
    """Verify a parsed v0 ``manifest`` and load every document it lists.

    ``dir_fd`` is an open handle on the cache directory; the documents are read relative
    to it (``cache_files.read_regular``, symlinks followed as in the reference). All five
    manifest fields are required with their types (unknown fields ignored,
    ``build_config.version`` not checked); each document file must exist inside the cache,
    parse, carry the entry's id, and hash (sha256 of its content) to the entry's version.
    Anything else is ``cache_invalid``; an unreadable or special file is ``io_error``.
    """
    entries = _manifest_entries(manifest)
    documents = [_load_document(dir_fd, *entry) for entry in entries]
    return V0Cache(manifest["cache_version"], documents)


def _manifest_entries(manifest: Any) -> list[tuple[str, str, str]]:
    if not isinstance(manifest, dict):
        raise ContextError("cache_invalid")
    config = manifest.get("build_config")
    count = manifest.get("document_count")
    documents = manifest.get("documents")
    valid = (
        isinstance(manifest.get("cache_version"), str)
        and isinstance(config, dict)
        and isinstance(config.get("version"), str)
        and isinstance(config.get("hash_algorithm"), str)
        and _is_rfc3339(manifest.get("created_at"))
        and isinstance(count, int)
        and not isinstance(count, bool)
        and count >= 0
    )
    if not valid or not isinstance(documents, list):
        raise ContextError("cache_invalid")
    entries: list[tuple[str, str, str]] = []
    for entry in documents:
        if not isinstance(entry, dict):
            raise ContextError("cache_invalid")
        doc_id, version, file = entry.get("id"), entry.get("version"), entry.get("file")
        if not (isinstance(doc_id, str) and isinstance(version, str) and isinstance(file, str)):
            raise ContextError("cache_invalid")
        entries.append((doc_id, version, file))
    return entries


def _is_rfc3339(value: Any) -> bool:
    match = _RFC3339.fullmatch(value) if isinstance(value, str) else None
    if match is None:
        return False
    offset = match.group(8)
    if offset[0] in "+-" and (int(offset[1:3]) > 23 or int(offset[4:6]) > 59):
        return False
    year, month, day, hour, minute, second = (int(group) for group in match.groups()[:6])
    try:
        datetime(year, month, day, hour, minute, second)
    except ValueError:
        return False
    return True


def _load_document(dir_fd: int, doc_id: str, version: str, file: str) -> V0Document:
    relative = PurePosixPath(file)
    if relative.is_absolute() or ".." in relative.parts or "\\" in file or not relative.parts:
        raise ContextError("cache_invalid")
    try:
        data = read_regular(dir_fd, "/".join(relative.parts), follow_symlinks=True)
    except (FileNotFoundError, NotADirectoryError):
        raise ContextError("cache_invalid") from None
    except OSError:
        raise ContextError("io_error") from None
    try:
        doc = parse_json(data)
    except ValueError:
        raise ContextError("cache_invalid") from None
    if not _is_document(doc) or doc["id"] != doc_id:
        raise ContextError("cache_invalid")
    if sha256_version(doc["content"].encode("utf-8")) != version:
        raise ContextError("cache_invalid")
    return V0Document(doc["id"], doc["version"], doc["content"])


def _is_document(doc: Any) -> bool:
    if not isinstance(doc, dict):
        return False
    if not all(isinstance(doc.get(key), str) for key in ("id", "version", "source", "content")):
        return False
    metadata = doc.get("metadata")
    return isinstance(metadata, dict) and all(
        isinstance(value, str) or (type(value) is int and value in _I64)
        for value in metadata.values()
    )


# --- building ----------------------------------------------------------------------------


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
        raise ContextError("io_error") from None


def _build(sources: Path, cache: Path, force: bool) -> BuiltCache:
    if not sources.is_dir():
        raise ContextError("io_error")
    documents = [_read_source(relative, path) for relative, path in _walk_markdown(sources, ())]
    if os.path.lexists(cache) and (not force or _contains(cache, sources)):
        raise ContextError("io_error")
    if os.path.lexists(cache) and not is_v0_cache(cache):
        raise NotACache(cache)

    documents.sort(key=lambda doc: doc["id"])
    files: dict[str, dict[str, Any]] = {}
    for previous, doc in zip(documents, documents[1:]):
        if previous["id"] == doc["id"]:
            raise ContextError("cache_invalid")
    for doc in documents:
        name = f"documents/{doc['version'][len('sha256:') :][:12]}.json"
        if name in files:
            raise ContextError("internal_error")
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
        raise ContextError("internal_error") from None
    raw = path.read_bytes()
    try:
        content = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ContextError("internal_error") from None
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
    from ..store.commit import commit, fsync_dir  # ctypes: only a build pays for it

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
