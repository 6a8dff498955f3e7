"""manifest.json of a native cache: field order, cache_version, loading and validation.

The manifest is the single commit point of a build: it is written last, and a cache
directory is swapped in whole (see ``store.commit``).
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import stat
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, BinaryIO

from ..foundation.errors import CacheTooLarge
from ..foundation.safe_paths import path_problem

# The largest manifest a build writes and a reader loads (a larger one is cache_invalid
# without being parsed). Loading costs about 10 bytes of memory and 60 ns per manifest
# byte; real caches hold about 630 bytes per section, so this is over 100,000 sections
# (fastapi-docs, 2,082 sections, has a 1.3 MB manifest).
MAX_MANIFEST_BYTES = 64 * 1024 * 1024
# The largest search index (search.idx) a build writes and a reader or an incremental build
# loads. Its terms come from document bodies, which the manifest does not hold, so the cap
# is a build-time check too (SearchIndexTooLarge). The corpora hold 0.68 (fastapi-docs) to
# 1.12 (sqlalchemy-docs) search.idx bytes per manifest byte, so this is four manifests.
MAX_SEARCH_INDEX_BYTES = 4 * MAX_MANIFEST_BYTES


def open_live_file(path: Path) -> BinaryIO:
    """A file of a live cache generation, for a build to read, opened as readers open one
    (``cache_files``): never through a symlink, never waiting on a FIFO, a regular
    file only (OSError otherwise). Whoever can write the root could put anything there."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(errno.EINVAL, "not a regular file", os.fspath(path))
    return open(fd, "rb")


SECTION_FIELDS = (
    "id", "file", "path", "title", "depth", "parent", "summary", "keywords", "line_count",
    "byte_offset", "byte_length", "version", "tokens",
)


def utc_timestamp() -> str:
    """``indexed_at``: UTC ``YYYY-MM-DDTHH:MM:SS.ffffff``."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")


def too_large(sections: int) -> CacheTooLarge:
    """The manifest being written would exceed MAX_MANIFEST_BYTES (at ``sections``)."""
    return CacheTooLarge(
        f"the cache would have a manifest over {MAX_MANIFEST_BYTES} bytes (the most readers "
        f"load; {sections} sections so far): build a subfolder of the source")


class CacheVersion:
    """``cache_version`` = sha256 over the build configuration, then every ``id:version``."""

    def __init__(self, build_config: dict[str, Any]) -> None:
        self._hash = hashlib.sha256(
            json.dumps(build_config, separators=(",", ":"), sort_keys=True).encode()
        )

    def add(self, section_id: str, version: str) -> None:
        self._hash.update(f"{section_id}:{version}".encode())

    def value(self) -> str:
        return "sha256:" + self._hash.hexdigest()


def dump_section(section: dict[str, Any]) -> str:
    """One section entry as compact JSON, keys in the spec's order. The manifest is pure
    ASCII (non-ASCII escaped): an incremental build then holds the old manifest as a
    one-byte-per-character string, a quarter of what one emoji in a title would cost."""
    entry = {k: section[k] for k in SECTION_FIELDS}
    if "origins" in section:  # (before version and tokens, which end every entry)
        entry = {k: v for k, v in entry.items() if k not in ("version", "tokens")}
        entry.update(origins=section["origins"], version=section["version"],
                     tokens=section["tokens"])
    return json.dumps(entry, separators=(",", ":"))


class SectionSpool:
    """Section entries of the manifest being built, spooled to a file as they come, so a
    large repository's sections never sit in memory together."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fh = open(path, "wb")  # noqa: SIM115 (closed in write_manifest)
        self.count = 0
        self.size = 0  # bytes spooled

    def add(self, section: dict[str, Any]) -> None:
        self.add_json(dump_section(section).encode("ascii"))

    def add_json(self, text: bytes, sections: int = 1) -> None:
        """Add sections already serialized by ``dump_section`` (``sections`` of them,
        comma-separated, as ``ManifestSections.chunk`` gives them)."""
        if self.count:
            self._fh.write(b",")
            self.size += 1
        self._fh.write(text)
        self.count += sections
        self.size += len(text)
        if self.size > MAX_MANIFEST_BYTES:
            raise too_large(self.count)

    def write_manifest(self, target: Path, header: dict[str, Any]) -> str:
        """Write ``target``: header fields in order, then the spooled sections; fsync.
        Returns the manifest's digest (``manifest_digest`` of the bytes written)."""
        self._fh.close()
        head = json.dumps(header, separators=(",", ":"))
        if len(head) + len(',"sections":[]}\n') + self.size > MAX_MANIFEST_BYTES:
            raise too_large(self.count)
        digest = _Digest()
        with open(target, "wb") as out, open(self.path, "rb") as spooled:

            def put(data: bytes) -> None:
                digest.update(data)
                out.write(data)

            put((head[:-1] + ',"sections":[').encode("utf-8"))
            while chunk := spooled.read(1 << 20):
                put(chunk)
            put(b"]}\n")
            out.flush()
            os.fsync(out.fileno())
        self.path.unlink()
        return digest.hexdigest()

    def discard(self) -> None:
        self._fh.close()


_INDEXED_AT = b'"indexed_at":"'


class _Digest:
    """sha256 of a manifest's bytes as they stream by, the ``indexed_at`` value left out
    (two builds of the same input differ only there, and the search index that records
    this digest must not)."""

    def __init__(self) -> None:
        self._hash = hashlib.sha256()
        self._seen = False

    def update(self, data: bytes) -> None:
        if not self._seen:
            at = data.find(_INDEXED_AT)
            if at != -1:  # the header comes first, in one piece
                self._seen = True
                value = at + len(_INDEXED_AT)
                view = memoryview(data)
                self._hash.update(view[:value])
                self._hash.update(view[data.index(b'"', value):])
                return
        self._hash.update(data)

    def hexdigest(self) -> str:
        return self._hash.hexdigest()


def manifest_digest(data: bytes) -> str:
    """sha256 hex of manifest bytes without the ``indexed_at`` value (what a build records
    in its search index, so the next build can trust the manifest without decoding it)."""
    digest = _Digest()
    digest.update(data)
    return digest.hexdigest()


def manifest_header(
    *, cache_version: str, document_count: int, index_version: int, owner: str, name: str,
    indexed_at: str, commit_hash: str, file_hashes: dict[str, str], doc_files: list[str],
    source: dict[str, Any] | None = None,
    dependencies: dict[str, dict[str, str | None]] | None = None,
    expansion: str | None = None,
) -> dict[str, Any]:
    """The header fields in order; ``source`` (``store.sources.identity``), an optional
    field, comes after the cache-spec fields and before ``sections`` (which stay last:
    an incremental build reads the header up to them)."""
    header = {
        "cache_version": cache_version,
        "document_count": document_count,
        "index_version": index_version,
        "repo": f"{owner}/{name}",
        "owner": owner,
        "name": name,
        "indexed_at": indexed_at,
        "commit_hash": commit_hash,
        "file_hashes": file_hashes,
        "doc_files": doc_files,
    }
    if source is not None:
        header["source"] = source
    if dependencies:  # pages that pulled text in: page -> {file: hash, None: not there}
        header["dependencies"] = dependencies
    if expansion is not None:  # how pages expand (``expansion.fingerprint``)
        header["expansion"] = expansion
    return header


REQUIRED = {
    "cache_version": str, "document_count": int, "index_version": int, "repo": str,
    "owner": str, "name": str, "indexed_at": str, "commit_hash": str, "file_hashes": dict,
    "doc_files": list, "sections": list,
}


def check_manifest(manifest: Any) -> str | None:
    """Why a parsed manifest is not a usable native manifest, or None when it is."""
    problem = check_header(manifest, with_sections=True)
    if problem:
        return problem
    if manifest["document_count"] != len(manifest["sections"]):
        return "document_count does not match the sections"
    return None


def check_header(manifest: Any, with_sections: bool = False) -> str | None:
    """Why the top-level fields (all but ``sections``, unless asked) are unusable, or None."""
    if not isinstance(manifest, dict):
        return "manifest is not an object"
    for key, kind in REQUIRED.items():
        if key == "sections" and not with_sections:
            continue
        value = manifest.get(key)
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            return f"manifest field {key!r} is missing or has the wrong type"
    return None


# The section fields readers rely on, with their types (all ints are >= 0).
MAX_RAW_FILE_BYTES = 1 << 30
"""The largest source file a build may index (``--max-file-bytes`` at most), so the bytes
of a section (``byte_offset + byte_length``) never reach past it: a manifest that says
otherwise is damaged, and a reader never sizes a buffer from it."""

SECTION_TYPES: dict[str, type] = {
    "id": str, "file": str, "byte_offset": int, "byte_length": int, "version": str,
    "tokens": int,
}


def is_relative_path(path: str) -> bool:
    """A repo-relative POSIX path that stays inside the cache directory
    (``safe_paths.path_problem``: the one check for paths from a source; a control
    character is accepted here, as caches written before that rule may hold one)."""
    return path_problem(path, check_controls=False) is None


def check_sections(manifest: dict[str, Any]) -> str | None:
    """Why the ``doc_files`` and ``sections`` of a checked manifest are unusable, or None:
    every section needs its fields with the right types, non-negative numbers and a file
    listed in ``doc_files``; every file a relative path inside the cache."""
    files = doc_file_set(manifest["doc_files"])
    if files is None:
        return "bad doc_files entry"
    for section in manifest["sections"]:
        problem = section_problem(section, files)
        if problem:
            return problem
    return None


def doc_file_set(doc_files: list[Any]) -> set[str] | None:
    """``doc_files`` as a set, or None when an entry is not a relative path in the cache."""
    files = set()
    for path in doc_files:
        if not isinstance(path, str) or not is_relative_path(path):
            return None
        files.add(path)
    return files


def section_problem(section: Any, files: set[str]) -> str | None:
    """Why one section entry is unusable, or None."""
    if not isinstance(section, dict):
        return "bad section entry"
    for key, kind in SECTION_TYPES.items():
        value = section.get(key)
        if not isinstance(value, kind) or isinstance(value, bool):
            return f"section field {key!r} is missing or has the wrong type"
        if isinstance(value, int) and value < 0:
            return f"section field {key!r} is negative"
    if section["byte_offset"] + section["byte_length"] > MAX_RAW_FILE_BYTES:
        return "section bytes beyond the largest raw file"
    if section["file"] not in files:
        return "section of a file that is not in doc_files"
    return None


SECTIONS_MARK = ',"sections":['
# In the compact layout the store writes, every section starts with its id, file and path
# and ends with its version and tokens; JSON escapes every quote inside a string, so these
# marks occur at section boundaries only. Ids and slugs never hold a quote.
_ID = b'{"id":"'
_PATH = b'","path":"'
_TITLE = b'","title":"'
_VERSION = b'"version":"'
_VERSION_CHARS = len("sha256:") + 64
_TOKENS = b'","tokens":'
_STRING = rb'"([^"\\]*(?:\\.[^"\\]*)*)"'
_HEAD = re.compile(rb'\{"id":' + _STRING + rb',"file":' + _STRING + rb',"path":' + _STRING)


def manifest_head(data: bytes) -> dict[str, Any] | None:
    """The header fields (all but ``sections``) of a manifest in the store's compact
    layout, parsed without touching its sections; None when it is not in that layout."""
    mark = data.find(SECTIONS_MARK.encode())
    if mark == -1 or not data.startswith(b"{"):
        return None
    try:
        header = json.loads(data[:mark] + b"}")
    except (ValueError, RecursionError):  # (nested too deeply: not the store's layout)
        return None
    if not isinstance(header, dict) or "sections" in header:
        return None
    return header


def _unescape(value: str) -> str:
    return json.loads(f'"{value}"') if "\\" in value else value


class ManifestSections:
    """The sections of a manifest this store wrote, located without decoding them: each
    one's JSON text span, and on demand the fields an incremental build needs (id, path,
    version, tokens). Only for a manifest whose digest the search index vouches for."""

    def __init__(self, data: bytes, end: int, starts: list[int]) -> None:
        self.data = data  # the whole manifest (sections are located in it, never copied)
        self.end = end  # where the sections array's text ends
        self.starts = starts

    @classmethod
    def parse(cls, data: bytes) -> ManifestSections | None:
        """None when ``data`` is not in the store's compact layout."""
        mark = data.find(SECTIONS_MARK.encode())
        if mark == -1 or not data.endswith(b"]}\n"):
            return None
        begin, stop = mark + len(SECTIONS_MARK), len(data) - 3
        starts: list[int] = []
        find = data.find
        at = find(_ID, begin, stop)
        if at != (begin if stop > begin else -1):
            return None
        while at != -1:
            starts.append(at)
            at = find(_ID, at + len(_ID), stop)
        return cls(data, stop, starts)

    def fields(self, n: int) -> tuple[str, str, str, int]:
        """Section ``n``'s id, path, version and tokens; ValueError when its text is not in
        the store's layout."""
        data, at = self.data, self.starts[n]
        end = self.starts[n + 1] - 1 if n + 1 < len(self.starts) else self.end
        head = _HEAD.match(data, at, end)
        colon = data.rfind(b":", end - 24, end)  # "tokens":<digits>}
        version_at = colon + 1 - len(_TOKENS) - _VERSION_CHARS
        if head is None or data[version_at - len(_VERSION) : version_at] != _VERSION:
            raise ValueError("section text not in the store's layout")
        section_id, path = head.group(1, 3)
        return (
            _unescape(section_id.decode("ascii")),
            _unescape(path.decode("ascii")),
            data[version_at : version_at + _VERSION_CHARS].decode("ascii"),
            int(data[colon + 1 : end - 1]),
        )

    def chunk(self, start: int, end: int) -> bytes:
        """The JSON text of sections ``start`` to ``end`` (exclusive), comma-separated."""
        stop = self.starts[end] - 1 if end < len(self.starts) else self.end
        return self.data[self.starts[start] : stop]
