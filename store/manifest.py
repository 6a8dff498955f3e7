"""manifest.json of a native cache: field order, cache_version, loading and validation.

The manifest is the single commit point of a build: it is written last, and a cache
directory is swapped in whole (see ``store.commit``).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

MANIFEST_NAME = "manifest.json"
SEARCH_INDEX_NAME = "search.idx"

SECTION_FIELDS = (
    "id", "file", "path", "title", "depth", "parent", "summary", "keywords", "line_count",
    "byte_offset", "byte_length", "version", "tokens",
)


def utc_timestamp() -> str:
    """``indexed_at``: UTC ``YYYY-MM-DDTHH:MM:SS.ffffff``."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")


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
    return json.dumps({k: section[k] for k in SECTION_FIELDS}, separators=(",", ":"))


class SectionSpool:
    """Section entries of the manifest being built, spooled to a file as they come, so a
    large repository's sections never sit in memory together."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fh = open(path, "w", encoding="utf-8")  # noqa: SIM115 (closed in write_manifest)
        self.count = 0

    def add(self, section: dict[str, Any]) -> None:
        self.add_json(dump_section(section))

    def add_json(self, text: str) -> None:
        """Add a section already serialized by ``dump_section``."""
        if self.count:
            self._fh.write(",")
        self._fh.write(text)
        self.count += 1

    def write_manifest(self, target: Path, header: dict[str, Any]) -> None:
        """Write ``target``: header fields in order, then the spooled sections; fsync."""
        self._fh.close()
        head = json.dumps(header, separators=(",", ":"))
        with open(target, "wb") as out, open(self.path, "rb") as spooled:
            out.write((head[:-1] + ',"sections":[').encode("utf-8"))
            shutil.copyfileobj(spooled, out, 1 << 20)
            out.write(b"]}\n")
            out.flush()
            os.fsync(out.fileno())
        self.path.unlink()

    def discard(self) -> None:
        self._fh.close()


def manifest_header(
    *, cache_version: str, document_count: int, index_version: int, owner: str, name: str,
    indexed_at: str, commit_hash: str, file_hashes: dict[str, str], doc_files: list[str],
) -> dict[str, Any]:
    return {
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
SECTION_TYPES: dict[str, type] = {
    "id": str, "file": str, "byte_offset": int, "byte_length": int, "version": str,
    "tokens": int,
}


def is_relative_path(path: str) -> bool:
    """A repo-relative POSIX path that stays inside the cache directory."""
    parts = path.split("/")
    return "\0" not in path and all(p not in ("", ".", "..") for p in parts)


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
        if kind is int and value < 0:
            return f"section field {key!r} is negative"
    if section["file"] not in files:
        return "section of a file that is not in doc_files"
    return None


SECTIONS_MARK = ',"sections":['


class ManifestStream:
    """A manifest this store wrote, read without building every section in memory: the
    header fields parsed at once, the sections decoded one by one, in order, each with
    its exact JSON text (so an unchanged section can be copied to the next generation).

    ``open`` returns None when the text is not in the store's compact layout (a manifest
    edited by hand, say): the caller then rebuilds from scratch.
    """

    def __init__(self, text: str, header: dict[str, Any], start: int) -> None:
        self.text = text
        self.header = header
        self.start = start

    @classmethod
    def open(cls, data: bytes) -> ManifestStream | None:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            return None
        mark = text.find(SECTIONS_MARK)
        if mark == -1 or not text.startswith("{"):
            return None
        try:
            header = json.loads(text[:mark] + "}")
        except ValueError:
            return None
        if not isinstance(header, dict) or "sections" in header:
            return None
        return cls(text, header, mark + len(SECTIONS_MARK))

    def sections(self) -> Iterator[tuple[Any, str]]:
        """(decoded section, its JSON text), in manifest order. ValueError when the
        sections array is damaged or the document does not end right after it."""
        text = self.text
        decode = json.JSONDecoder().raw_decode
        pos = self.start
        if text.startswith("]", pos):
            pos += 1
        else:
            while True:
                value, end = decode(text, pos)
                yield value, text[pos:end]
                if text.startswith(",", end):
                    pos = end + 1
                    continue
                if text.startswith("]", end):
                    pos = end + 1
                    break
                raise ValueError("damaged sections array")
        if text[pos:].strip() != "}":
            raise ValueError("manifest does not end after its sections")
