"""IndexStore: sections <-> cache directory, with incremental reindexing.

``update_index`` is the build: it compares the source's file hashes with the cache's,
parses only new and changed files, carries unchanged files' sections forward (their raw
files are copied, their postings remapped), re-runs the global id pass, writes the new
generation into a staging directory and swaps it in atomically.

Raw files are copied, not hard-linked: a cache file with a second link is refused by
readers that name caches (``server.cache_paths``: a hard link may lead outside the root),
so a hard-linked generation made ``doc-index resolve`` and the MCP server fail with
cache_missing during every incremental build and right after its swap.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import stat
import time
from array import array
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..indexer.analysis import ANALYZER_VERSION
from ..indexer.chunks import PART_TOKENS
from ..indexer.ids import IdAssigner, section_path
from ..indexer.model import ParsedFile, unpack_tf
from . import commit as commit_mod
from .lock import BuildLock
from .manifest import (
    MANIFEST_NAME,
    SEARCH_INDEX_NAME,
    CacheVersion,
    ManifestStream,
    SectionSpool,
    check_header,
    check_manifest,
    doc_file_set,
    manifest_header,
    section_problem,
    utc_timestamp,
)
from .roots import default_root
from .search_index import IndexWriter, SearchIndex, carry_forward

if TYPE_CHECKING:  # the resolve path imports this module: keep it light
    from .parallel import Job
    from .sources import Scan

CURRENT_INDEX_VERSION = 1
TOKENIZER_VERSION = 1
BUILD_CONFIG: dict[str, Any] = {
    "index_version": CURRENT_INDEX_VERSION,
    "analyzer": ANALYZER_VERSION,
    "tokens": TOKENIZER_VERSION,
    "part_tokens": PART_TOKENS,
}

Progress = Callable[[int, int], None]


class InvalidCacheKey(ValueError):
    """A cache key that is not one plain path component directly under the root."""


def check_key(key: str) -> str:
    """``key`` if it names a cache directly under the root (what readers can address by
    name, see ``server.cache_paths``); InvalidCacheKey otherwise. Without this check a
    ``--name`` like ``x/../../elsewhere`` put the lock (and more) outside the root."""
    if (
        key in ("", ".", "..", commit_mod.STAGING_DIR)
        or "/" in key or "\\" in key
        or any(ord(ch) < 0x20 or 0x7F <= ord(ch) <= 0x9F for ch in key)
    ):
        raise InvalidCacheKey(f"invalid cache name {key!r}: one path component, no control "
                              "characters")
    try:
        key.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidCacheKey(f"invalid cache name {key!r}: not UTF-8") from None
    return key


@dataclass
class BuildReport:
    """What a build did, for the one-screen summary."""

    key: str
    cache_dir: Path
    added: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    parsed: list[str] = field(default_factory=list)
    sections: int = 0
    tokens: int = 0
    seconds: float = 0.0
    written: bool = False
    full: bool = False


@dataclass
class _Old:
    """The live generation, as an incremental build uses it: the manifest's header, its
    sections as a stream (never all in memory), the search index, per-file ranges."""

    header: dict[str, Any]
    stream: ManifestStream
    index: SearchIndex
    ranges: dict[str, tuple[int, int]]
    count: int
    tokens: int


class _OldSections:
    """Walks the old manifest's sections forward, handing out one file's at a time."""

    def __init__(self, old: _Old) -> None:
        self._iter = old.stream.sections()
        self._next = 0

    def take(self, start: int, end: int) -> list[tuple[dict[str, Any], str]]:
        while self._next < start:  # sections of removed or re-parsed files
            next(self._iter)
            self._next += 1
        out = []
        for _ in range(start, end):
            out.append(next(self._iter))
            self._next += 1
        return out


class IndexStore:
    """The caches under one root: ``<root>/<key>/`` plus ``<root>/<key>.lock``."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = Path(root) if root is not None else default_root()

    def cache_dir(self, key: str) -> Path:
        return self.root / check_key(key)

    def lock(self, key: str) -> BuildLock:
        return BuildLock(self.root / f"{check_key(key)}.lock")

    def list_keys(self) -> list[str]:
        if not self.root.is_dir():
            return []
        return sorted(
            e.name for e in os.scandir(self.root)
            if e.is_dir(follow_symlinks=False) and e.name != commit_mod.STAGING_DIR
        )

    def load_index(self, key: str) -> dict[str, Any] | None:
        """The cache's manifest, or None when it is missing, damaged or stale."""
        try:
            manifest = json.loads((self.cache_dir(key) / MANIFEST_NAME).read_bytes())
        except (OSError, ValueError):
            return None
        if check_manifest(manifest) is not None:
            return None
        if manifest["index_version"] != CURRENT_INDEX_VERSION:
            return None
        return manifest

    def delete_index(self, key: str) -> bool:
        """Remove a cache directory and its lock; False when there was none."""
        live = self.cache_dir(key)
        if not os.path.lexists(live):
            return False
        self.root.mkdir(parents=True, exist_ok=True)
        with self.lock(key):
            area = commit_mod.staging_root(self.root)
            area.mkdir(exist_ok=True)
            doomed = area / f"{key}.deleted.{os.getpid()}"
            os.rename(live, doomed)
            shutil.rmtree(doomed, ignore_errors=True)
            commit_mod.clean_staging(self.root, key)
        try:
            (self.root / f"{key}.lock").unlink()
        except FileNotFoundError:
            pass
        return True

    def _load_old(self, key: str) -> _Old | None:
        """The live generation if an incremental build can trust it, else None (a full
        build follows): every section well-formed, each file's sections contiguous and
        matching the raw file's bytes, the search index in step with the manifest."""
        live = self.cache_dir(key)
        try:
            stream = ManifestStream.open((live / MANIFEST_NAME).read_bytes())
            index = SearchIndex.from_bytes((live / SEARCH_INDEX_NAME).read_bytes())
        except (OSError, ValueError, KeyError, TypeError):
            return None
        if stream is None:
            return None
        header = stream.header
        if check_header(header) is not None or header["index_version"] != CURRENT_INDEX_VERSION:
            return None
        files = doc_file_set(header["doc_files"])
        if (
            files is None or set(header["file_hashes"]) != files
            or index.cache_version != header["cache_version"]
            or index.build_config != BUILD_CONFIG
        ):
            return None
        ranges: dict[str, tuple[int, int]] = {}
        tokens = 0
        count = 0
        current: str | None = None
        spans: list[dict[str, Any]] = []
        try:
            for section, _ in stream.sections():
                if section_problem(section, files) or not isinstance(
                    section.get("title"), str
                ) or not isinstance(section.get("parent"), (str, type(None))):
                    return None
                path = section["file"]
                if path != current:
                    if path in ranges:
                        return None  # a file's sections are not contiguous
                    if current is not None and not _raw_matches(live / current, spans):
                        return None  # a raw file is missing or damaged
                    current, spans = path, []
                    ranges[path] = (count, count)
                spans.append(section)
                count += 1
                ranges[path] = (ranges[path][0], count)
                tokens += section["tokens"]
        except (ValueError, StopIteration):
            return None
        if current is not None and not _raw_matches(live / current, spans):
            return None
        for path in files - ranges.keys():  # files without sections: still raw files
            if not _raw_matches(live / path, []):
                return None
        if count != index.count or count != header["document_count"]:
            return None
        return _Old(header, stream, index, ranges, count, tokens)

    def update_index(
        self, key: str, owner: str, name: str, scan: Scan, *, full: bool = False,
        progress: Progress | None = None,
    ) -> BuildReport:
        """Build or incrementally update the cache ``key`` from ``scan``."""
        started = time.perf_counter()
        report = BuildReport(key=key, cache_dir=self.cache_dir(key), skipped=list(scan.skipped))
        scan = _without_reserved(scan, report)
        self.root.mkdir(parents=True, exist_ok=True)
        with self.lock(key):
            commit_mod.clean_staging(self.root, key)
            old = None if full else self._load_old(key)
            report.full = old is None
            old_hashes: dict[str, str] = old.header["file_hashes"] if old else {}
            current = {f.path for f in scan.files}
            report.removed = sorted(p for p in old_hashes if p not in current)
            jobs: list[Job] = []
            for f in scan.files:
                before = old_hashes.get(f.path)
                if before == f.digest:
                    report.unchanged.append(f.path)
                    continue
                (report.added if before is None else report.changed).append(f.path)
                jobs.append((f.path, f.read, f.size))
            if (
                old is not None and not jobs and not report.removed
                and old.header["commit_hash"] == scan.commit_hash
                and old.header["owner"] == owner and old.header["name"] == name
            ):
                report.sections = old.count
                report.tokens = old.tokens
                report.seconds = time.perf_counter() - started
                return report
            staging = commit_mod.new_staging_dir(self.root, key)
            try:
                header = self._write_generation(key, owner, name, scan, old, jobs, staging,
                                                report, progress)
                # Only files that are still not indexable changed: keep the live generation.
                if old is None or not _same_generation(old.header, header):
                    commit_mod.commit(staging, self.cache_dir(key))
                    report.written = True
            except BaseException:
                shutil.rmtree(staging, ignore_errors=True)
                raise
            finally:
                commit_mod.clean_staging(self.root, key)
        report.seconds = time.perf_counter() - started
        return report

    def _write_generation(
        self, key: str, owner: str, name: str, scan: Scan, old: _Old | None, jobs: list[Job],
        staging: Path, report: BuildReport, progress: Progress | None,
    ) -> dict[str, Any]:
        """Write the new generation into ``staging``; its manifest header."""
        digests = {f.path: f.digest for f in scan.files}
        from .parallel import parse_files

        parsed_iter = parse_files(jobs, staging)
        live = self.cache_dir(key)
        ids = IdAssigner()
        writer = IndexWriter()
        version = CacheVersion(BUILD_CONFIG)
        spool = SectionSpool(staging / SPOOL_NAME)
        doc_files: list[str] = []
        doc_map = array("i", [-1]) * (old.index.count if old else 0)
        total = len(scan.files)
        unchanged = set(report.unchanged)
        old_sections = _OldSections(old) if old is not None else None
        for done, source in enumerate(scan.files, 1):
            if old is not None and old_sections is not None and source.path in unchanged:
                doc_files.append(source.path)
                self._carry_file(old, old_sections, source.path, live, staging, ids, writer,
                                 doc_map, version, spool, report)
                if progress is not None:
                    progress(done, total)
                continue
            else:
                path, result = next(parsed_iter)
                assert path == source.path
                if isinstance(result, str):
                    report.skipped.append((path, result))
                    _drop(report, path)
                    continue
                report.parsed.append(path)
                entries = _fresh_file(result, ids, writer)
            doc_files.append(source.path)
            for entry in entries:
                version.add(entry["id"], entry["version"])
                report.tokens += entry["tokens"]
                spool.add(entry)
            if progress is not None:
                progress(done, total)
        if old is not None:
            del old_sections  # the old manifest text is no longer needed: free it first
            old.stream.text = ""
            carry_forward(writer, old.index, doc_map)
        report.sections = spool.count
        report.skipped.sort()
        cache_version = version.value()
        writer.write(staging / SEARCH_INDEX_NAME, cache_version, ANALYZER_VERSION, BUILD_CONFIG)
        header = manifest_header(
            cache_version=cache_version, document_count=spool.count,
            index_version=CURRENT_INDEX_VERSION, owner=owner, name=name,
            indexed_at=utc_timestamp(), commit_hash=scan.commit_hash,
            file_hashes={p: digests[p] for p in doc_files}, doc_files=doc_files,
        )
        spool.write_manifest(staging / MANIFEST_NAME, header)
        return header

    def _carry_file(
        self, old: _Old, old_sections: _OldSections, path: str, live: Path, staging: Path,
        ids: IdAssigner, writer: IndexWriter, doc_map: array, version: CacheVersion,
        spool: SectionSpool, report: BuildReport,
    ) -> None:
        """Sections of an unchanged file, taken from the old cache without parsing; their
        JSON is copied as it was unless the id pass gave them a new id or parent."""
        target = staging / path
        target.parent.mkdir(parents=True, exist_ok=True)
        _copy_raw(live / path, target)
        start, end = old.ranges.get(path, (0, 0))
        olds = old_sections.take(start, end)
        index = old.index
        local = {s["id"]: n for n, (s, _) in enumerate(olds)}
        kinds = [KIND_OF[k] for k in index.kinds[start:end]]
        dedup = index.dedup[start:end]
        new_ids = ids.assign(path, [(k, s["title"], h) for k, (s, _), h in zip(kinds, olds, dedup)])
        lens = index.lens
        for n, (section, text) in enumerate(olds):
            i = start + n
            doc_map[i] = writer.add_meta(kinds[n], dedup[n], index.words[i],
                                         (lens[0][i], lens[1][i], lens[2][i]))
            parent = section["parent"]
            new_parent = new_ids[local[parent]] if parent in local else None
            if section["id"] == new_ids[n] and parent == new_parent:
                spool.add_json(text)
            else:
                section["id"] = new_ids[n]
                section["parent"] = new_parent
                spool.add(section)
            version.add(new_ids[n], section["version"])
            report.tokens += section["tokens"]


KIND_OF = {"r": "root", "h": "heading", "p": "part"}
SPOOL_NAME = ".sections.spool"
# A raw file under one of these top-level names would collide with the cache's own files.
RESERVED_NAMES = frozenset({MANIFEST_NAME, SEARCH_INDEX_NAME, SPOOL_NAME})


def _same_generation(old: dict[str, Any], header: dict[str, Any]) -> bool:
    """True when a new manifest ``header`` describes the same cache as ``old`` (a rebuild
    that only re-parsed files that are still skipped, e.g. too deeply nested ones)."""
    keys = ("cache_version", "owner", "name", "commit_hash", "file_hashes", "doc_files")
    return all(old[k] == header[k] for k in keys)


def _without_reserved(scan: Scan, report: BuildReport) -> Scan:
    """``scan`` without the files under a directory named like a cache file (reported)."""
    kept = [f for f in scan.files if f.path.split("/", 1)[0] not in RESERVED_NAMES]
    if len(kept) == len(scan.files):
        return scan
    report.skipped.extend((f.path, "name reserved by the cache") for f in scan.files
                          if f.path.split("/", 1)[0] in RESERVED_NAMES)
    report.skipped.sort()
    return dataclasses.replace(scan, files=kept)


def _raw_matches(raw: Path, sections: list[dict[str, Any]]) -> bool:
    """True when ``raw`` is a regular file (not a symlink) holding every section's bytes."""
    try:
        fd = os.open(raw, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return False
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return False
    with open(fd, "rb") as fh:
        data = fh.read()
    for section in sections:
        start = section["byte_offset"]
        chunk = data[start : start + section["byte_length"]]
        if "sha256:" + hashlib.sha256(chunk).hexdigest() != section["version"]:
            return False
    return True


def _copy_raw(source: Path, target: Path) -> None:
    """Copy a raw file of the live generation (never through a symlink; see the module
    docstring for why not a hard link)."""
    fd = os.open(source, os.O_RDONLY | os.O_NOFOLLOW)
    with open(fd, "rb") as src, open(target, "wb") as dst:
        shutil.copyfileobj(src, dst, 1 << 20)


def _drop(report: BuildReport, path: str) -> None:
    for bucket in (report.added, report.changed):
        if path in bucket:
            bucket.remove(path)


def _fresh_file(parsed: ParsedFile, ids: IdAssigner, writer: IndexWriter) -> list[dict[str, Any]]:
    sections = parsed.sections
    new_ids = ids.assign(parsed.path, [(s.kind, s.title, s.dedup_hash) for s in sections])
    entries = []
    for n, s in enumerate(sections):
        writer.add_section(s.kind, s.dedup_hash, s.total_words, s.lens, s.terms)
        entries.append({
            "id": new_ids[n],
            "file": s.file,
            "path": section_path(s.file, s.kind, s.title),
            "title": s.title,
            "depth": s.depth,
            "parent": new_ids[s.parent_index] if s.parent_index is not None else None,
            "summary": s.summary,
            "keywords": s.keywords,
            "line_count": s.line_count,
            "byte_offset": s.byte_offset,
            "byte_length": s.byte_length,
            "version": s.version,
            "tokens": s.tokens,
        })
    return entries


__all__ = ["CURRENT_INDEX_VERSION", "BuildReport", "IndexStore", "default_root", "unpack_tf"]
