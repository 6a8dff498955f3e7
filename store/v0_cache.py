"""Context Engine v0 caches, loaded strictly for resolve (``v0_build`` writes them).

Layout (``specs/context-engine-v0.md``): ``manifest.json`` and ``index.json`` as 2-space
pretty JSON without a trailing newline, ``documents/<12hex>.json`` as compact JSON.
"""

from __future__ import annotations

import hashlib
import re
from datetime import datetime
from pathlib import PurePosixPath
from typing import Any, NamedTuple

from ..foundation.errors import CacheInvalid, IoError
from ..foundation.strict_json import parse_json
from .cache_files import read_regular
from .manifest import MAX_MANIFEST_BYTES

_RFC3339 = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})", re.ASCII
)
_I64 = range(-(2**63), 2**63)
# The most document bytes a load reads, all files together: like the manifest cap, it keeps
# any cache, built or hand-made, from costing a first resolve more than about 4 s and
# 110 MB (measured at 62 MB; a manifest listing one 1 MB document 20,000 times took past
# 5 GB). fastapi-docs, the largest Markdown corpus, gives 1.5 MB of documents.
MAX_V0_DOCUMENT_BYTES = MAX_MANIFEST_BYTES


class V0Document(NamedTuple):
    """One loaded v0 document: what selection reads and echoes."""

    id: str
    version: str
    content: str


class V0Cache(NamedTuple):
    """A loaded and verified v0 cache."""

    cache_version: str
    documents: list[V0Document]


def sha256_version(data: bytes) -> str:
    """A document version: ``"sha256:"`` + hex digest."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


def load_v0_cache(dir_fd: int, manifest: Any) -> V0Cache:
    """Verify a parsed v0 ``manifest`` and load every document it lists.

    ``dir_fd`` is an open handle on the cache directory; the documents are read relative
    to it (``cache_files.read_regular``, symlinks followed as in the reference). All five
    manifest fields are required with their types (unknown fields ignored,
    ``build_config.version`` not checked); each document file must exist inside the cache,
    parse, carry the entry's id, and hash (sha256 of its content) to the entry's version.
    No two entries may share an id (nor, so, a file), and the document files hold at most
    MAX_V0_DOCUMENT_BYTES in all (both deviations from the reference, which reads a
    document as often as it is listed). Anything else is ``cache_invalid``; an unreadable
    or special file is ``io_error``.
    """
    entries = _manifest_entries(manifest)
    # A document file must carry its entry's id, so a file listed twice is an id listed
    # twice: refusing repeated ids refuses both.
    if len({doc_id for doc_id, _, _ in entries}) != len(entries):
        raise CacheInvalid(detail="a document is listed twice")
    documents = []
    left = MAX_V0_DOCUMENT_BYTES
    for doc_id, version, file in entries:
        data = _read_document(dir_fd, file, left)
        left -= len(data)
        documents.append(_parse_document(data, doc_id, version))
    return V0Cache(manifest["cache_version"], documents)


def _manifest_entries(manifest: Any) -> list[tuple[str, str, str]]:
    if not isinstance(manifest, dict):
        raise CacheInvalid()
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
        raise CacheInvalid()
    entries: list[tuple[str, str, str]] = []
    for entry in documents:
        if not isinstance(entry, dict):
            raise CacheInvalid()
        doc_id, version, file = entry.get("id"), entry.get("version"), entry.get("file")
        if not (isinstance(doc_id, str) and isinstance(version, str) and isinstance(file, str)):
            raise CacheInvalid()
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


def _read_document(dir_fd: int, file: str, left: int) -> bytes:
    """The bytes of an entry's document file; cache_invalid when it is over ``left``, what
    is left of MAX_V0_DOCUMENT_BYTES (the read stops there)."""
    relative = PurePosixPath(file)
    if relative.is_absolute() or ".." in relative.parts or "\\" in file or not relative.parts:
        raise CacheInvalid()
    try:
        return read_regular(dir_fd, "/".join(relative.parts), follow_symlinks=True,
                            max_bytes=left)
    except (FileNotFoundError, NotADirectoryError):
        raise CacheInvalid() from None
    except OSError:
        raise IoError() from None


def _parse_document(data: bytes, doc_id: str, version: str) -> V0Document:
    try:
        doc = parse_json(data)
    except ValueError:
        raise CacheInvalid() from None
    if not _is_document(doc) or doc["id"] != doc_id:
        raise CacheInvalid()
    if sha256_version(doc["content"].encode("utf-8")) != version:
        raise CacheInvalid()
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


