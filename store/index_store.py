"""IndexStore: sections <-> cache directory, with incremental reindexing.

``update_index`` is the build: it compares the source's file hashes with the cache's,
parses only new and changed files, carries unchanged files' sections forward (their raw
files moved from the spare generation or copied, their postings remapped), re-runs the
global id pass, writes the new generation into a staging directory and swaps it in
atomically.

Carrying is cheap because the old generation vouches for itself: its search index records
the manifest's digest and each raw file's sha256. When the manifest matches, its section
entries are copied as text, per file, without being decoded (only a file whose ids the id
pass changes is decoded and re-serialized); each raw file is checked by one hash as it is
carried (``store.raw_files``: moved from the spare generation, not hard-linked). Anything
that does not match turns the build into a full one.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import time
from array import array
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from ..foundation.cache_names import MANIFEST_NAME, SEARCH_INDEX_NAME, STAGING_DIR, name_problem
from ..foundation.errors import InvalidCacheKey
from ..indexer.ids import IdAssigner, heading_slug, section_path
from ..indexer.model import PageStats, ParsedFile
from ..indexer.versions import (
    ANALYZER_VERSION,
    MAX_SECTIONS_PER_FILE,
    PART_TOKENS,
    TOKENIZER_VERSION,
)
from ..sources.snapshot import Scan, SourceIdentity, other_source
from . import commit as commit_mod
from .cache_marks import delete_refused, deletion_refusal, write_mark
from .lock import CacheLock
from .manifest import (
    MAX_MANIFEST_BYTES,
    SECTIONS_MARK,
    CacheVersion,
    ManifestSections,
    SectionSpool,
    check_header,
    check_manifest,
    doc_file_set,
    manifest_digest,
    manifest_head,
    manifest_header,
    open_live_file,
    utc_timestamp,
)
from .raw_files import Untrusted as _Untrusted  # the live generation is not what the plan
from .raw_files import carry_raw, read_checked  # or its search index says: build it all
from .roots import default_root
from .search_index import KIND_NAMES, IndexWriter, SearchIndex, read_search_index

if TYPE_CHECKING:  # the resolve path imports this module (tests/test_import_rules.py)
    from typing import TypeAlias

    from .parallel import Job, ParseResults, WarmWorker

    Parsed: TypeAlias = ParseResults

CURRENT_INDEX_VERSION = 1
BUILD_CONFIG: dict[str, Any] = {
    "index_version": CURRENT_INDEX_VERSION,
    "analyzer": ANALYZER_VERSION,
    "tokens": TOKENIZER_VERSION,
    "part_tokens": PART_TOKENS,
    "max_sections": MAX_SECTIONS_PER_FILE,
    # Parts: the text past that cap is cut into parts (it was one last section), and a
    # part is cut inside a paragraph longer than 1 KB too (``indexer.chunks``). A cache
    # built before holds such text the old way, so its next build is a full one.
    "parts": 2,
    # Pages are expanded (includes, autodoc: ``store.expansion``); a cache built before
    # holds them as written, so its next build is a full one.
    "expansion": 1,
}

Progress = Callable[[int, int], None]





def check_key(key: str) -> str:
    """``key`` if it names a cache directly under the root (``cache_names``: what readers
    can address by name); InvalidCacheKey otherwise. Without this check a ``--name`` like
    ``x/../../elsewhere`` put the lock (and more) outside the root."""
    problem = name_problem(key)
    if problem is not None:
        raise InvalidCacheKey(f"invalid cache name {key!r}: {problem}")
    return key


class ExpansionCounts:
    """What expanding the pages parsed by a build did (the summary's lines): autodoc
    directives documented and not found (by reason), includes met and left as notes
    (by reason)."""

    def __init__(self) -> None:
        self.pages = 0  # pages expanded
        self.documented = 0
        self.objects = 0
        self.not_found: dict[str, int] = {}
        self.includes = 0
        self.notes: dict[str, int] = {}

    def add(self, stats: PageStats) -> None:
        self.pages += 1
        self.documented += stats.documented
        self.objects += stats.objects
        self.includes += stats.includes
        for problem in stats.unresolved:
            reason = problem.split(": ", 1)[-1].split(":")[0].split(" (")[0]
            self.not_found[reason] = self.not_found.get(reason, 0) + 1
        for note in stats.notes:
            reason = note.removeprefix("[include ").split(":")[0]
            self.notes[reason] = self.notes.get(reason, 0) + 1

    def __repr__(self) -> str:
        return f"ExpansionCounts({vars(self)!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ExpansionCounts) and vars(self) == vars(other)

    __hash__ = None  # type: ignore[assignment]  # mutable


class BuildPlan(NamedTuple):
    """What a build does, decided from the scan and the live manifest's header before
    anything is written (``plan_build``): parse ``jobs`` (the added and changed files, in
    path order), carry ``unchanged`` files from the live generation, drop ``removed`` ones.
    ``old_head`` is the header's text in the live manifest (the write checks that it still
    reads the same), None for a full build."""

    added: list[str]
    changed: list[str]
    removed: list[str]
    unchanged: list[str]
    skipped: list[tuple[str, str]]  # files the scan left out, with the reason
    jobs: list[Job]
    old_header: dict[str, Any] | None
    old_head: bytes | None
    keep_live: bool  # nothing to parse or drop, same commit and name: keep the live cache

    @property
    def full(self) -> bool:
        return self.old_header is None


class BuildReport:
    """What a build did, for the one-screen summary; filled in as the build goes and never
    read back by it (the ``BuildPlan`` decides). (Plain classes here, not dataclasses:
    tests/test_import_rules.py.)"""

    def __init__(self, key: str, cache_dir: Path, plan: BuildPlan) -> None:
        self.key = key
        self.cache_dir = cache_dir
        self.added = list(plan.added)
        self.changed = list(plan.changed)
        self.removed = list(plan.removed)
        self.unchanged = list(plan.unchanged)
        self.skipped = list(plan.skipped)
        self.parsed: list[str] = []
        self.notes: list[tuple[str, str]] = []  # (file, what the indexer did to it)
        self.about: list[str] = []  # what was chosen from the source, and why (summary)
        self.kinds: dict[str, int] = {}  # skipped documentation-like files, by kind
        self.sections = 0
        self.tokens = 0
        self.expansion = ExpansionCounts()  # what expanding the parsed pages did
        self.seconds = 0.0
        self.meaning: str | None = None  # the vectors' line (doc_index.meaning_build)
        self.written = False
        self.full = plan.full

    def __repr__(self) -> str:
        return f"BuildReport({vars(self)!r})"


def plan_build(scan: Scan, skipped: list[tuple[str, str]], owner: str, name: str,
               old: tuple[bytes, dict[str, Any]] | None,
               source: dict[str, Any] | None = None) -> BuildPlan:
    """The plan for building ``scan`` over the live manifest ``old`` (its header text and
    fields, from ``IndexStore._read_old_head``; None: a full build); ``source``: the
    manifest's ``source`` record of this build (the live cache is kept only if it has it)."""
    old_hashes: dict[str, str] = old[1]["file_hashes"] if old else {}
    old_dependencies = _dependencies_of(old[1]) if old else {}
    if old is not None and old[1].get("expansion") != scan.expansion_key():
        old_hashes = {p: "" for p in old_hashes}  # pages expand otherwise now: parse all
    state = scan.dependency_state()
    current = {f.path for f in scan.files}
    added: list[str] = []
    changed: list[str] = []
    unchanged: list[str] = []
    jobs: list[Job] = []
    for f in scan.files:
        before = old_hashes.get(f.path)
        needs = old_dependencies.get(f.path, {})
        if before == f.digest and all(state(p) == h for p, h in needs.items()):
            unchanged.append(f.path)
            continue
        (added if before is None else changed).append(f.path)
        jobs.append((f.path, f.read, f.size))
    removed = sorted(p for p in old_hashes if p not in current)
    keep_live = old is not None and not jobs and not removed and (
        old[1]["commit_hash"], old[1]["owner"], old[1]["name"], old[1].get("source")
    ) == (scan.commit_hash, owner, name, source)
    return BuildPlan(added, changed, removed, unchanged, skipped, jobs,
                     old[1] if old else None, old[0] if old else None, keep_live)


def _dependencies_of(header: dict[str, Any]) -> dict[str, dict[str, str | None]]:
    """The header's ``dependencies`` (page -> {file: hash or None}); a damaged field is
    taken as none (then every page is carried on its own hash, as before)."""
    found = header.get("dependencies")
    if not isinstance(found, dict):
        return {}
    out: dict[str, dict[str, str | None]] = {}
    for page, needs in found.items():
        if isinstance(needs, dict) and all(
                isinstance(h, str) or h is None for h in needs.values()):
            out[page] = needs
    return out


class _Old:
    """The live generation, as an incremental build uses it: its manifest's header and
    bytes, its search index's bytes and header, each doc file's raw digest and range of
    section numbers. What carrying files needs (``Carry``) is read from the bytes only
    when there is carrying to do."""

    def __init__(self, header: dict[str, Any], manifest: bytes, sidecar: bytes,
                 sidecar_head: dict[str, Any], raw_digests: dict[str, str],
                 ranges: dict[str, tuple[int, int]], count: int, tokens: int) -> None:
        self.header, self.sidecar_head = header, sidecar_head
        self.count, self.tokens = count, tokens
        self.raw_digests, self.ranges = raw_digests, ranges
        self.manifest, self.sidecar = manifest, sidecar  # released by ``carry``

    def carry(self) -> Carry:
        """Sections and search index, located in the bytes (then released here); raises
        _Untrusted when they are not in the layout this store writes."""
        sections = ManifestSections.parse(self.manifest)
        index = SearchIndex.from_bytes(self.sidecar, self.sidecar_head)
        self.manifest = self.sidecar = b""
        if sections is None or len(sections.starts) != self.count:
            raise _Untrusted("manifest sections")
        return Carry(sections, index)


class Carry(NamedTuple):
    """What carrying unchanged files forward reads: the old sections (as text) and the
    old search index."""

    sections: ManifestSections
    index: SearchIndex  # type: ignore[assignment]  # a field named like tuple.index


def warm_worker(store: IndexStore, key: str, full: bool) -> WarmWorker:
    """The parse worker of a build of ``key``, forked now when the build will likely be
    incremental (the cache exists): it imports the parsers while the build reads the
    source. Its one owner is the caller's ``with`` block, which stops it unless
    ``update_index`` handed it work; otherwise it is idle and does nothing."""
    from .parallel import WarmWorker

    try:
        likely = not full and (store.cache_dir(key) / MANIFEST_NAME).is_file()
    except (InvalidCacheKey, OSError):
        likely = False
    return WarmWorker(fork=likely)


class IndexStore:
    """The caches under one root: ``<root>/<key>/``; each cache's build lock and staging
    directories are in ``<root>/.doc-index-tmp/<key>/`` (``store.commit``)."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = Path(root) if root is not None else default_root()

    def cache_dir(self, key: str) -> Path:
        return self.root / check_key(key)

    def lock(self, key: str) -> CacheLock:
        return CacheLock(self.root, check_key(key))

    def list_keys(self) -> list[str]:
        if not self.root.is_dir():
            return []
        return sorted(
            e.name for e in os.scandir(self.root)
            if e.is_dir(follow_symlinks=False) and e.name != STAGING_DIR
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

    def live_header(self, key: str) -> dict[str, Any] | None:
        """The header fields of cache ``key``'s live manifest (read as an incremental
        build reads it: the sections are not), or None (no cache, no usable header)."""
        try:
            head = self._read_old_head(key)
        except InvalidCacheKey:
            return None
        return head[1] if head is not None else None

    def source_record(self, key: str) -> dict[str, Any] | None:
        """The ``source`` record of the live manifest's header, or None."""
        record = (self.live_header(key) or {}).get("source")
        return record if isinstance(record, dict) else None

    def delete_index(self, key: str) -> bool:
        """Remove a cache directory (moved into its staging directory, then deleted there),
        its spare, mark and lock; False when there was none. DeleteRefused, with nothing
        touched, when it is no directory doc-index can tell is a cache (``cache_marks``)."""
        live = self.cache_dir(key)
        if not self._deletable(key):  # (checked before the lock too: a refusal writes nothing)
            return False
        with self.lock(key), commit_mod.KeyArea(self.root, key, create=True) as area:
            if not self._deletable(key):
                return False
            doomed = f"deleted.{os.getpid()}"
            os.rename(live, doomed, dst_dir_fd=area.fd)
            area.clean(keep_spare=False)
        return True

    def _deletable(self, key: str) -> bool:
        """True when cache ``key`` is there to delete, False when it is gone; DeleteRefused
        when it is something else."""
        try:
            problem = deletion_refusal(self.root, key)
        except FileNotFoundError:
            return False
        if problem is not None:
            raise delete_refused(self.root, key, problem)
        return True

    def _refuse_unknown_cache(self, key: str, source: SourceIdentity) -> None:
        """OtherSource when ``key`` holds something without a usable manifest header that
        is not a manifest of this source written in another layout, and holds something to
        lose (not an empty folder or file, such as an old layout's lock): a Context Engine
        v0 cache (``context build``'s), or a damaged cache whose source nobody can tell;
        never replaced without ``replace``."""
        from .v0_build import is_v0_cache  # (only when there is no usable header)

        live = self.cache_dir(key)
        if is_v0_cache(live):
            raise other_source(key, "a Context Engine v0 cache", source)
        try:
            info = os.lstat(live)
        except FileNotFoundError:
            return
        held = True  # (a symlink, a special file, a folder that cannot be listed)
        if stat.S_ISDIR(info.st_mode):
            try:
                with os.scandir(live) as entries:
                    held = any(entries)
            except OSError:
                pass
        elif stat.S_ISREG(info.st_mode):
            held = info.st_size > 0
        if not held:
            return
        header = self._whole_manifest(key)
        if header is None or not source.same_as(header):
            raise other_source(key, "no readable doc-index manifest (a damaged cache, or "
                                   "not a doc-index cache)", source)

    def _whole_manifest(self, key: str) -> dict[str, Any] | None:
        """The live manifest parsed whole, when it is a JSON object (read as readers read
        it, at most ``MAX_MANIFEST_BYTES``): one rewritten in another layout still names
        its source."""
        try:
            with open_live_file(self.cache_dir(key) / MANIFEST_NAME) as fh:
                data = fh.read(MAX_MANIFEST_BYTES + 1)
        except OSError:
            return None
        if len(data) > MAX_MANIFEST_BYTES:
            return None
        try:
            manifest = json.loads(data)
        except (ValueError, RecursionError):
            return None
        return manifest if isinstance(manifest, dict) else None

    def _read_old_head(self, key: str) -> tuple[bytes, dict[str, Any]] | None:
        """The live manifest's header, as text and as fields, if it has a usable one. Only
        the header is read (in small reads: a whole manifest read here and freed made the
        allocator keep the memory of the write that follows, 8 MiB on 20,000 files)."""
        mark = SECTIONS_MARK.encode()
        head = bytearray()
        found = -1
        try:
            with open_live_file(self.cache_dir(key) / MANIFEST_NAME) as fh:
                while found == -1:
                    chunk = fh.read(64 * 1024)
                    if not chunk or len(head) > MAX_MANIFEST_BYTES:
                        return None
                    start = max(0, len(head) - len(mark))
                    head += chunk
                    found = head.find(mark, start)
        except OSError:
            return None
        del head[found + len(mark):]
        header = manifest_head(bytes(head))
        if header is None or check_header(header) is not None:
            return None
        return bytes(head[:found]), header

    def _load_old(self, key: str, plan: BuildPlan) -> _Old:
        """The live generation the plan was made from, if an incremental build can trust
        it: its manifest still has the plan's header, its search index is intact and
        records this manifest by digest, for this build configuration; _Untrusted
        otherwise. The sections are located later, when files are carried
        (``_Old.carry``); raw files are checked when they are carried (``raw_files``).
        (The plan keeps only the header: the whole manifest is held from here on, and only
        as long as carrying needs it.)"""
        header = plan.old_header
        assert header is not None and plan.old_head is not None
        try:
            with open_live_file(self.cache_dir(key) / MANIFEST_NAME) as fh:
                data = fh.read(MAX_MANIFEST_BYTES + 1)  # (over: its digest fails below)
            sidecar = read_search_index(self.cache_dir(key) / SEARCH_INDEX_NAME)
            head = SearchIndex.head(sidecar)
            files_region = SearchIndex.files_of(sidecar, head)
        except (OSError, ValueError, KeyError, TypeError):
            raise _Untrusted("search index") from None
        if (
            not data.startswith(plan.old_head)
            or not data.startswith(SECTIONS_MARK.encode(), len(plan.old_head))
            or head.get("manifest") != manifest_digest(data)
            or head.get("build_config") != BUILD_CONFIG
            or header["index_version"] != CURRENT_INDEX_VERSION
            or head.get("cache_version") != header["cache_version"]
        ):
            raise _Untrusted("search index")
        files = doc_file_set(header["doc_files"])
        count = header["document_count"]
        if (
            files is None or set(header["file_hashes"]) != files
            or head.get("sections") != count or not isinstance(head.get("tokens"), int)
            or len(files) != len(header["doc_files"])
            or not isinstance(files_region, list) or len(files_region) != len(files)
        ):
            raise _Untrusted("search index")
        raw_digests: dict[str, str] = {}
        ranges: dict[str, tuple[int, int]] = {}
        first = 0
        try:
            for path, (digest, sections) in zip(header["doc_files"], files_region):
                raw_digests[path] = digest
                ranges[path] = (first, first + sections)
                first += sections
        except (TypeError, ValueError):
            raise _Untrusted("search index") from None
        if first != count:
            raise _Untrusted("search index")
        return _Old(header, data, sidecar, head, raw_digests, ranges, count, head["tokens"])

    def update_index(
        self, key: str, owner: str, name: str, scan: Scan, *, full: bool = False,
        progress: Progress | None = None, warm: WarmWorker | None = None,
        source: SourceIdentity | None = None, replace: bool = False,
    ) -> BuildReport:
        """Build or incrementally update the cache ``key`` from ``scan``. ``warm``: a parse
        worker forked when the build started, used for a few changed files (its owner
        stops it otherwise). ``source``: recorded in the manifest; a live cache built from
        another source is refused (OtherSource, before anything is written) unless
        ``replace``. A replacing build carries the files it shares with the live cache
        (same path, same content hash, checked): the result is the full build's."""
        started = time.perf_counter()
        scan, reserved = _without_reserved(scan)
        skipped = sorted([*scan.skipped, *reserved])
        self.root.mkdir(parents=True, exist_ok=True)
        with self.lock(key):
            commit_mod.clean_staging(self.root, key)
            try:
                old = self._read_old_head(key)
                record = None if source is None else source.record(scan.commit_hash)
                if (old is not None and source is not None and not replace
                        and not source.same_as(old[1])):
                    raise other_source(key, source.shown_header(old[1]), source)
                if old is None and source is not None and not replace:
                    self._refuse_unknown_cache(key, source)
                plan = plan_build(scan, skipped, owner, name, None if full else old, record)
                try:
                    report = self._write(key, owner, name, scan, plan, progress, warm, record)
                except _Untrusted:  # the live generation is damaged: build it all again
                    plan = plan_build(scan, skipped, owner, name, None, record)
                    report = self._write(key, owner, name, scan, plan, progress, None, record)
            finally:
                commit_mod.clean_staging(self.root, key)
            write_mark(self.root, key)  # ``delete`` knows this directory for a cache
        report.seconds = time.perf_counter() - started
        return report

    def _write(
        self, key: str, owner: str, name: str, scan: Scan, plan: BuildPlan,
        progress: Progress | None, warm: WarmWorker | None,
        source_record: dict[str, Any] | None = None,
    ) -> BuildReport:
        """Execute ``plan`` into a new staging directory and swap it in (unless the live
        generation already is the result); _Untrusted when the live generation the plan
        carries from turns out damaged (the staging directory is removed)."""
        from .parallel import parse_files

        report = BuildReport(key, self.cache_dir(key), plan)
        staging = commit_mod.new_staging_dir(self.root, key)
        # The changed files start parsing now, while the old generation is checked and its
        # unchanged files are carried over.
        parsed = parse_files(plan.jobs, staging, warm=warm,
                             background=not plan.full and bool(plan.unchanged),
                             expand=scan.expand)
        try:
            old = None if plan.full else self._load_old(key, plan)
            if old is not None and plan.keep_live:
                _check_raw_files(self.cache_dir(key), old)
                report.sections = old.count
                report.tokens = old.tokens
                return report
            header = self._write_generation(key, owner, name, scan, plan, old, parsed,
                                            staging, report, progress, source_record)
            # Only files that are still not indexable changed: keep the live generation.
            if old is None or not _same_generation(old.header, header):
                commit_mod.commit(staging, self.cache_dir(key))
                report.written = True
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        finally:
            parsed.close()
        if plan.jobs:  # the parse cache grew: keep it under its cap
            from .parse_cache import trim

            trim(self.root)
        return report

    def _write_generation(
        self, key: str, owner: str, name: str, scan: Scan, plan: BuildPlan, old: _Old | None,
        parsed_iter: Parsed, staging: Path, report: BuildReport, progress: Progress | None,
        source_record: dict[str, Any] | None,
    ) -> dict[str, Any]:
        """Write the new generation into ``staging``; its manifest header. ``parsed_iter``
        gives the parse results of the files not carried from ``old``, in path order."""
        live = self.cache_dir(key)
        ids = IdAssigner()
        writer = IndexWriter()
        version = CacheVersion(BUILD_CONFIG)
        spool = SectionSpool(staging / SPOOL_NAME)
        doc_files: list[str] = []
        dependencies: dict[str, dict[str, str | None]] = {}
        old_dependencies = _dependencies_of(old.header) if old else {}
        doc_map = array("i", [-1]) * (old.count if old else 0)
        total = len(scan.files)
        unchanged = set(plan.unchanged)
        tokens = 0
        carry: Carry | None = None
        try:
            if old is not None:  # first what does not wait for the parser
                carry_raw(live, staging, [(p, old.raw_digests[p]) for p in plan.unchanged],
                          [path for path, _, _ in plan.jobs])
                carry = old.carry()
            for done, source in enumerate(scan.files, 1):
                if old is not None and carry is not None and source.path in unchanged:
                    tokens += self._carry_file(old, carry, source.path, ids, writer, doc_map,
                                               version, spool)
                    if source.path in old_dependencies:
                        dependencies[source.path] = old_dependencies[source.path]
                else:
                    path, result = next(parsed_iter)
                    assert path == source.path
                    added = _add_parsed(path, result, report, ids, writer, version, spool,
                                        dependencies)
                    if added is None:
                        continue
                    tokens += added
                doc_files.append(source.path)
                if progress is not None:
                    progress(done, total)
        except BaseException:
            parsed_iter.close()
            spool.discard()
            raise
        report.sections = spool.count
        report.tokens = tokens
        report.skipped.sort()
        header = _generation_header(scan, version.value(), spool.count, owner, name,
                                    doc_files, source_record, dependencies)
        old_index = carry.index if carry is not None else None
        del carry  # the old manifest's bytes are no longer needed: free them first
        _write_files(staging, header, spool, writer, tokens, old_index, doc_map)
        return header

    def _carry_file(
        self, old: _Old, carry: Carry, path: str, ids: IdAssigner,
        writer: IndexWriter, doc_map: array, version: CacheVersion, spool: SectionSpool,
    ) -> int:
        """Sections of an unchanged file, taken from the old cache without parsing; their
        JSON text is copied as it was unless the id pass gave them a new id (then the
        file's entries are decoded, given their new ids and parents, and re-serialized).
        Their tokens."""
        start, end = old.ranges[path]
        writer.add_file(old.raw_digests[path], end - start)
        if start == end:
            return 0
        index = carry.index
        sections = carry.sections
        try:
            fields = [sections.fields(i) for i in range(start, end)]
        except ValueError:
            raise _Untrusted(path) from None
        kinds = [KIND_NAMES[k] for k in index.kinds[start:end]]
        cut = len(path) + 1
        new_ids = ids.assign(path, [
            (kind, field[1][cut:] if kind == "heading" else "", index.dedup[i])
            for kind, field, i in zip(kinds, fields, range(start, end))
        ])
        lens = index.lens
        words = index.words
        for n, i in enumerate(range(start, end)):
            doc_map[i] = writer.add_meta(kinds[n], index.dedup[i], words[i],
                                         (lens[0][i], lens[1][i], lens[2][i]))
            version.add(new_ids[n], fields[n][2])
        tokens = sum(field[3] for field in fields)
        old_ids = [field[0] for field in fields]
        if new_ids == old_ids:
            spool.add_json(sections.chunk(start, end), end - start)
            return tokens
        renamed = dict(zip(old_ids, new_ids))
        for entry in json.loads(b"[" + sections.chunk(start, end) + b"]"):
            entry["id"] = renamed[entry["id"]]
            parent = entry["parent"]
            entry["parent"] = renamed.get(parent) if parent is not None else None
            spool.add(entry)
        return tokens


SPOOL_NAME = ".sections.spool"
# A raw file under one of these top-level names would collide with the cache's own files.
RESERVED_NAMES = frozenset({MANIFEST_NAME, SEARCH_INDEX_NAME, SPOOL_NAME})


def _same_generation(old: dict[str, Any], header: dict[str, Any]) -> bool:
    """True when a new manifest ``header`` describes the same cache as ``old`` (a rebuild
    that only re-parsed files that are still skipped, e.g. too deeply nested ones)."""
    keys = ("cache_version", "owner", "name", "commit_hash", "file_hashes", "doc_files")
    return all(old[k] == header[k] for k in keys) and all(
        old.get(k) == header.get(k) for k in ("source", "dependencies"))


def _without_reserved(scan: Scan) -> tuple[Scan, list[tuple[str, str]]]:
    """``scan`` without the files under a directory named like a cache file, and those
    files as skipped ones."""
    kept = [f for f in scan.files if f.path.split("/", 1)[0] not in RESERVED_NAMES]
    if len(kept) == len(scan.files):
        return scan, []
    reserved = [(f.path, "name reserved by the cache") for f in scan.files
                if f.path.split("/", 1)[0] in RESERVED_NAMES]
    out = Scan(kept, scan.skipped, scan.commit_hash)
    out.expand = scan.expand
    return out, reserved


def _check_raw_files(live: Path, old: _Old) -> None:
    """_Untrusted unless every raw file of the live generation is intact."""
    try:
        live_fd = os.open(live, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        raise _Untrusted(str(live)) from None
    try:
        for path, digest in old.raw_digests.items():
            read_checked(live_fd, path, digest)
    finally:
        os.close(live_fd)


def _generation_header(scan: Scan, cache_version: str, count: int, owner: str, name: str,
                       doc_files: list[str], source_record: dict[str, Any] | None,
                       dependencies: dict[str, dict[str, str | None]]) -> dict[str, Any]:
    """The new generation's manifest header."""
    digests = {f.path: f.digest for f in scan.files}
    return manifest_header(
        cache_version=cache_version, document_count=count,
        index_version=CURRENT_INDEX_VERSION, owner=owner, name=name,
        indexed_at=utc_timestamp(), commit_hash=scan.commit_hash,
        file_hashes={p: digests[p] for p in doc_files}, doc_files=doc_files,
        source=source_record, dependencies=dependencies or None,
        expansion=scan.expansion_key(),
    )


def _write_files(staging: Path, header: dict[str, Any], spool: SectionSpool,
                 writer: IndexWriter, tokens: int, old_index: Any, doc_map: array) -> None:
    """The generation's manifest and search index, into ``staging``."""
    digest = spool.write_manifest(staging / MANIFEST_NAME, header)
    writer.write(staging / SEARCH_INDEX_NAME, header["cache_version"], ANALYZER_VERSION,
                 BUILD_CONFIG, digest, tokens, old_index, doc_map if old_index else None)


def _add_parsed(path: str, result: ParsedFile | str, report: BuildReport, ids: IdAssigner,
                writer: IndexWriter, version: CacheVersion, spool: SectionSpool,
                dependencies: dict[str, dict[str, str | None]]) -> int | None:
    """Add a parsed file's sections to the generation (and what its expansion read to
    ``dependencies``); their tokens. None when the parser skipped the file (reported)."""
    if isinstance(result, str):
        report.skipped.append((path, result))
        _drop(report, path)
        return None
    report.parsed.append(path)
    if result.note:
        report.notes.append((path, result.note))
    if result.dependencies:
        dependencies[path] = dict(result.dependencies)
    if result.expansion is not None:
        report.expansion.add(result.expansion)
    writer.add_file(result.raw_digest, len(result.sections))
    tokens = 0
    for entry in _fresh_file(result, ids, writer):
        version.add(entry["id"], entry["version"])
        tokens += entry["tokens"]
        spool.add(entry)
    return tokens


def _drop(report: BuildReport, path: str) -> None:
    for bucket in (report.added, report.changed):
        if path in bucket:
            bucket.remove(path)


def _fresh_file(parsed: ParsedFile, ids: IdAssigner, writer: IndexWriter) -> list[dict[str, Any]]:
    sections = parsed.sections
    slugs = [heading_slug(s.kind, s.title) for s in sections]
    new_ids = ids.assign(parsed.path, [(s.kind, slug, s.dedup_hash)
                                       for s, slug in zip(sections, slugs)])
    entries = []
    for n, s in enumerate(sections):
        writer.add_section(s.kind, s.dedup_hash, s.total_words, s.lens, s.terms)
        entries.append({
            "id": new_ids[n],
            "file": s.file,
            "path": section_path(s.file, s.kind, slugs[n]),
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
        if s.origins:
            entries[-1]["origins"] = [{"file": file, "lines": [first, last]}
                                      for file, first, last in s.origins]
    return entries


__all__ = ["CURRENT_INDEX_VERSION", "BuildPlan", "BuildReport", "IndexStore", "default_root",
           "plan_build"]
