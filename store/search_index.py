"""The search sidecar of a native cache (``search.idx``): an inverted index over sections.

Written at build time so that resolve never re-reads or re-analyzes documents. Layout:

    b"doc-index search v3\\n"
    header JSON line: cache_version, analyzer, build config, sections, their tokens,
                      avg field lengths, postings count, region sizes, manifest digest
    meta JSON:  per section kind (r/h/p), dedup hash, word count, field lengths
    terms JSON: {term: [first posting, document frequency]} (keys sorted)
    docs:       every term's section numbers, little-endian uint32, terms in key order
    tfs:        the packed tfs, in the same order (posting i is docs[i], tfs[i])
    files JSON: per doc file, in manifest order: [sha256 of its raw bytes, its sections]
    trailer:    sha256 digest (32 raw bytes) of everything before it

A packed tf is ``title << 24 | path << 16 | body`` (capped at 255, 255, 65535). Section
numbers follow the manifest's section order, so equal content gives equal bytes.

The files region and the manifest digest (sha256 of manifest.json with its ``indexed_at``
value left out) are for incremental builds: a build that finds both in step trusts the
old manifest without decoding its sections (each file's sections are the next ones in
order), and checks each carried raw file by one hash.
Docs and tfs are two flat arrays so that an incremental build remaps every kept posting in
one pass and copies the runs of terms it did not touch whole.

Terms that start with a space are section *features*, not words (a word never holds a
space): ``" changelog"`` marks release-notes sections (``indexer.analysis``). They ride in
the postings so that incremental builds carry them forward like any term.

``SearchIndex.memo`` holds what resolve derives once per loaded index (per-section
normalizations, file groups); it is not part of the bytes.

In memory (a warm server holds many loaded indexes): the sidecar's bytes are kept whole and
postings are decoded per term on demand; word counts and field lengths are uint32 arrays;
the dedup hashes, which only incremental builds read, are decoded on first use.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from array import array
from bisect import bisect_left, bisect_right
from pathlib import Path
from typing import Any

from ..foundation.errors import SearchIndexTooLarge
from .manifest import MAX_SEARCH_INDEX_BYTES, open_live_file

MAGIC = b"doc-index search v3\n"
DIGEST_BYTES = 32  # the sha256 trailer: damage anywhere in the file is cache_invalid
KIND_CODES = {"root": "r", "heading": "h", "part": "p"}
KIND_NAMES = {v: k for k, v in KIND_CODES.items()}
DROPPED = 0xFFFFFFFF  # a remapped posting whose section is gone
_REMAP_CHUNK = 1 << 16  # postings remapped per step (bounds the temporary lists)


def _loads(data: bytes) -> Any:
    """A JSON region of a sidecar; ValueError when it is not JSON or nests too deep for the
    parser (a checksum only proves the file is whole, not that a build wrote it)."""
    try:
        return json.loads(data)
    except RecursionError:
        raise ValueError("search index JSON nested too deeply") from None


def _u32(values: array) -> bytes | array:
    """``values`` as little-endian uint32 bytes (the array itself where it already is)."""
    if sys.byteorder != "little":
        values = array("I", values)
        values.byteswap()
        return values.tobytes()
    return values


def _u32_array(values: Any) -> array:
    """A JSON list of counts as a uint32 array; ValueError when one is not such a count."""
    try:
        return array("I", values)
    except (OverflowError, TypeError):
        raise ValueError("search index count out of range") from None


def _from_u32(data: bytes | memoryview) -> array:
    values = array("I")
    values.frombytes(data)
    if sys.byteorder != "little":
        values.byteswap()
    return values





def read_search_index(path: Path) -> bytes:
    """The bytes of the sidecar at ``path``; ValueError when it is over
    MAX_SEARCH_INDEX_BYTES (checked by fstat before reading, so a huge or sparse file costs
    nothing), OSError when it cannot be read."""
    with open_live_file(path) as fh:
        if os.fstat(fh.fileno()).st_size > MAX_SEARCH_INDEX_BYTES:
            raise ValueError(f"search index over {MAX_SEARCH_INDEX_BYTES} bytes")
        data = fh.read(MAX_SEARCH_INDEX_BYTES + 1)
    if len(data) > MAX_SEARCH_INDEX_BYTES:  # it grew after the fstat
        raise ValueError(f"search index over {MAX_SEARCH_INDEX_BYTES} bytes")
    return data


class IndexWriter:
    """Accumulates sections in manifest order and serializes the sidecar."""

    def __init__(self) -> None:
        self.kinds: list[str] = []
        self.dedup: list[str] = []
        self.words: list[int] = []
        self.lens: list[list[int]] = [[], [], []]
        self.files: list[tuple[str, int]] = []
        self.postings: dict[str, tuple[array, array]] = {}

    @property
    def count(self) -> int:
        return len(self.kinds)

    def add_file(self, raw_digest: str, sections: int) -> None:
        """Record the next doc file (manifest order): the sha256 hex of its raw bytes and
        its number of sections."""
        self.files.append((raw_digest, sections))

    def add_meta(self, kind: str, dedup: str, words: int, lens: tuple[int, int, int]) -> int:
        self.kinds.append(KIND_CODES.get(kind, kind))
        self.dedup.append(dedup)
        self.words.append(words)
        for i in range(3):
            self.lens[i].append(lens[i])
        return len(self.kinds) - 1

    def add_section(self, kind: str, dedup: str, words: int, lens: tuple[int, int, int],
                    terms: dict[str, int]) -> int:
        """Add a freshly parsed section; ``terms`` maps term -> packed tf."""
        doc = self.add_meta(kind, dedup, words, lens)
        postings = self.postings
        for term, packed in terms.items():
            entry = postings.get(term)
            if entry is None:
                entry = postings[term] = (array("I"), array("I"))
            entry[0].append(doc)
            entry[1].append(packed)
        return doc

    def write(self, target: Path, cache_version: str, analyzer: int, build_config: dict,
              manifest_digest: str, tokens: int = 0, old: SearchIndex | None = None,
              doc_map: array | None = None) -> None:
        """Write the sidecar to ``target``.

        With ``old`` and ``doc_map`` (an incremental build), the postings of the sections
        kept from ``old`` are merged in: ``doc_map[old section number]`` is its new number,
        or -1 when it was dropped; call after every section (kept or new) has been added."""
        if old is not None and doc_map is not None:
            terms, docs, tfs = _merge_postings(self.postings, old, doc_map)
        else:
            terms, docs, tfs = _fresh_postings(self.postings)
        n = self.count
        avg = [(sum(col) / n) if n else 0.0 for col in self.lens]
        meta = json.dumps(
            {"kind": "".join(self.kinds), "dedup": self.dedup, "words": self.words,
             "lens": self.lens},
            separators=(",", ":"),
        ).encode()
        term_json = json.dumps(terms, separators=(",", ":"), ensure_ascii=False).encode()
        files = json.dumps(self.files, separators=(",", ":")).encode()
        header = json.dumps(
            {"cache_version": cache_version, "analyzer": analyzer, "build_config": build_config,
             "sections": n, "tokens": tokens, "avg": avg, "postings": len(docs),
             "meta_bytes": len(meta), "terms_bytes": len(term_json), "files_bytes": len(files),
             "manifest": manifest_digest},
            separators=(",", ":"),
        ).encode()
        size = (len(MAGIC) + len(header) + 1 + len(meta) + len(term_json) + 8 * len(docs)
                + len(files) + DIGEST_BYTES)
        if size > MAX_SEARCH_INDEX_BYTES:
            raise SearchIndexTooLarge(
                f"the cache would have a search index of {size} bytes, over "
                f"{MAX_SEARCH_INDEX_BYTES} (the most readers load): build a subfolder of the "
                "source")
        digest = hashlib.sha256()
        with open(target, "wb") as fh:
            for part in (MAGIC + header + b"\n", meta, term_json, _u32(docs), _u32(tfs), files):
                digest.update(part)
                fh.write(part)
            fh.write(digest.digest())
            fh.flush()
            os.fsync(fh.fileno())


class SearchIndex:
    """A loaded sidecar. Postings are decoded per term, on demand."""

    def __init__(
        self, *, cache_version: str, analyzer: int, build_config: dict, count: int,
        avg: list[float], kinds: str, meta: memoryview, words: array,
        lens: list[array], terms: dict[str, list[int]], docs: memoryview, tfs: memoryview,
        manifest_digest: str = "", files: memoryview | None = None,
    ) -> None:
        self.cache_version = cache_version
        self.analyzer = analyzer
        self.build_config = build_config
        self.count = count
        self.avg = avg
        self.kinds = kinds  # one code per section: r(oot), h(eading), p(art)
        self._meta = meta  # the meta region, for ``dedup``
        self._dedup: list[str] | None = None
        self.words = words
        self.lens = lens
        self.terms = terms
        self.docs = docs
        self.tfs = tfs
        self.manifest_digest = manifest_digest
        self.files = files if files is not None else memoryview(b"[]")
        self.memo: dict[Any, Any] = {}  # what resolve derives once (not part of the bytes)
        # What this holds in memory, estimated: the sidecar's bytes, the term table (about
        # 190 bytes a term as a dict entry of a string and a two-int list), the arrays.
        self.memory_bytes = (len(docs.obj) + 190 * len(terms)  # type: ignore[arg-type]
                             + 4 * len(words) * 4 + len(kinds))

    @property
    def dedup(self) -> list[str]:
        """Per section, the hash ids are deduplicated by (read by incremental builds only)."""
        if self._dedup is None:
            self._dedup = _loads(bytes(self._meta))["dedup"]
        return self._dedup
    @staticmethod
    def head(data: bytes) -> dict[str, Any]:
        """A sidecar's header fields, once its checksum and size are verified (without
        decoding its tables); raises ValueError when it is not one or is damaged."""
        if not data.startswith(MAGIC) or len(data) < len(MAGIC) + DIGEST_BYTES:
            raise ValueError("not a doc-index search index")
        end = len(data) - DIGEST_BYTES
        if hashlib.sha256(memoryview(data)[:end]).digest() != data[end:]:
            raise ValueError("search index checksum mismatch")
        nl = data.index(b"\n", len(MAGIC))
        header = _loads(data[len(MAGIC) : nl])
        header["_meta_at"] = nl + 1
        header["_files_at"] = (nl + 1 + header["meta_bytes"] + header["terms_bytes"]
                               + 8 * header["postings"])
        if end != header["_files_at"] + header["files_bytes"]:
            raise ValueError("search index has the wrong size")
        return header

    @staticmethod
    def files_of(data: bytes, head: dict[str, Any]) -> list[list[Any]]:
        """The files region of a sidecar whose ``head`` was read: per doc file, [raw
        digest, number of sections]."""
        at = head["_files_at"]
        return _loads(data[at : at + head["files_bytes"]])

    @classmethod
    def from_bytes(cls, data: bytes, head: dict[str, Any] | None = None) -> SearchIndex:
        """Parse a sidecar (``head``: its verified header, when already read); raises
        ValueError when it is not one or is damaged."""
        header = head if head is not None else cls.head(data)
        view = memoryview(data)
        pos = header["_meta_at"]
        meta_end = pos + header["meta_bytes"]
        terms_end = meta_end + header["terms_bytes"]
        docs_end = terms_end + 4 * header["postings"]
        tfs_end = docs_end + 4 * header["postings"]
        end = len(data) - DIGEST_BYTES
        meta = _loads(data[pos:meta_end])
        terms = _loads(data[meta_end:terms_end])
        n = header["sections"]
        lens = [_u32_array(col) for col in meta["lens"]]
        if (len(meta["kind"]) != n or len(meta["words"]) != n or len(meta["dedup"]) != n
                or len(lens) != 3 or any(len(col) != n for col in lens)):
            raise ValueError("search index metadata does not match its section count")
        return cls(
            cache_version=header["cache_version"], analyzer=header["analyzer"],
            build_config=header["build_config"], count=n,
            avg=[float(a) for a in header["avg"]], kinds=meta["kind"], meta=view[pos:meta_end],
            words=_u32_array(meta["words"]), lens=lens, terms=terms,
            docs=view[terms_end:docs_end], tfs=view[docs_end:tfs_end],
            manifest_digest=header["manifest"], files=view[tfs_end:end],
        )

    def postings(self, term: str) -> tuple[array, array]:
        """(section numbers, packed tfs) of a term; empty arrays when it does not occur."""
        entry = self.terms.get(term)
        if entry is None:
            return array("I"), array("I")
        start, df = entry
        return (_from_u32(self.docs[4 * start : 4 * (start + df)]),
                _from_u32(self.tfs[4 * start : 4 * (start + df)]))


def _fresh_postings(
    postings: dict[str, tuple[array, array]],
) -> tuple[dict[str, list[int]], array, array]:
    """The term table and the flat docs/tfs arrays of a build without an old index."""
    terms: dict[str, list[int]] = {}
    docs = array("I")
    tfs = array("I")
    for term in sorted(postings):
        d, f = postings.pop(term)  # freed as they are copied
        if d:
            terms[term] = [len(docs), len(d)]
            docs.extend(d)
            tfs.extend(f)
    return terms, docs, tfs


def _merge_postings(
    fresh: dict[str, tuple[array, array]], old: SearchIndex, doc_map: array,
) -> tuple[dict[str, list[int]], array, array]:
    """Term table and flat arrays of ``old``'s kept postings plus the ``fresh`` ones.

    Every old posting is remapped in one pass; the terms whose postings lost a section
    (their old sections were dropped) or gained one (``fresh``) are rebuilt one by one,
    and the runs of untouched terms between them are copied whole. ``doc_map`` is
    monotonic for kept sections, so remapped postings stay sorted. The old arrays are
    read in place; the docs are assembled (and the remapped copy freed) before the tfs."""
    old_docs_bytes, old_tfs_bytes = _le_bytes(old.docs), _le_bytes(old.tfs)
    old_docs = old_docs_bytes.cast("I")
    remapped = _remapped(old_docs, doc_map)
    gone = _dropped_ranges(doc_map)
    items = list(old.terms.items())
    touched = _touched_terms(remapped, [entry[0] for _, entry in items])
    terms, plan = _merge_plan(fresh, items, touched, remapped, old_tfs_bytes, old_docs, gone)
    docs = _assemble(plan, memoryview(remapped).cast("B"), 0)
    del remapped
    tfs = _assemble(plan, old_tfs_bytes, 1)
    return terms, docs, tfs


def _remapped(old_docs: memoryview, doc_map: array) -> array:
    """Every old posting's section number in the new numbering (``DROPPED`` if dropped)."""
    mapping = [d if d >= 0 else DROPPED for d in doc_map]
    remapped = array("I")
    for at in range(0, len(old_docs), _REMAP_CHUNK):
        remapped.fromlist([mapping[d] for d in old_docs[at : at + _REMAP_CHUNK]])
    return remapped


def _touched_terms(remapped: array, starts: list[int]) -> set[int]:
    """The numbers of the terms with a dropped posting (``starts``: each term's first
    posting, ascending): one C-level scan, term by term."""
    touched: set[int] = set()
    at = 0
    while True:
        try:
            at = remapped.index(DROPPED, at)
        except ValueError:
            return touched
        term_no = bisect_right(starts, at) - 1
        touched.add(term_no)
        at = starts[term_no + 1] if term_no + 1 < len(starts) else len(remapped)


# A step of a merge plan: a run ``(first, end)`` of old postings copied whole, or the
# (docs, tfs) of one rebuilt term.
_Step = tuple[int, int] | tuple[array, array]


def _merge_plan(
    fresh: dict[str, tuple[array, array]], items: list[tuple[str, list[int]]],
    touched: set[int], remapped: array, old_tfs_bytes: memoryview, old_docs: memoryview,
    gone: list[tuple[int, int]],
) -> tuple[dict[str, list[int]], list[_Step]]:
    """The new term table, and the steps that assemble the flat arrays in term order."""
    names = [name for name, _ in items]
    special = sorted({names[i] for i in touched} | fresh.keys())
    terms: dict[str, list[int]] = {}
    plan: list[_Step] = []
    size = 0
    at = 0  # next old term not yet planned
    for term in special:
        here = bisect_left(names, term, at)
        if here > at:  # a run of untouched terms: copied whole
            last_start, last_df = items[here - 1][1]
            size = _plan_run(items[at:here], last_start + last_df, size, terms, plan)
        if here < len(names) and names[here] == term:
            start, df = items[here][1]
            kept = _without_dropped(remapped, old_tfs_bytes, old_docs, start, start + df, gone)
            at = here + 1
        else:
            kept = array("I"), array("I")
            at = here
        if term in fresh:
            kept = _merge(*kept, *fresh[term])
        if kept[0]:
            terms[term] = [size, len(kept[0])]
            plan.append(kept)
            size += len(kept[0])
    if at < len(names):
        _plan_run(items[at:], len(remapped), size, terms, plan)
    return terms, plan


def _plan_run(run: list[tuple[str, list[int]]], stop: int, size: int,
              terms: dict[str, list[int]], plan: list[_Step]) -> int:
    """Plan the old terms ``run``, untouched, as one copied run of old postings (up to
    ``stop``) placed at ``size``; the size after it."""
    first = run[0][1][0]
    shift = size - first
    terms.update({name: [start + shift, df] for name, (start, df) in run})
    plan.append((first, stop))
    return size + stop - first


def _assemble(plan: list[_Step], old: memoryview, side: int) -> array:
    """One flat array (``side`` 0: docs from the remapped old docs, 1: tfs from the old
    tfs) from the steps of a merge plan."""
    out = array("I")
    for step in plan:
        if isinstance(step[0], int):
            out.frombytes(old[4 * step[0] : 4 * step[1]])
        else:
            out.extend(step[side])
    return out


def _le_bytes(region: memoryview) -> memoryview:
    """A little-endian uint32 region as native-order bytes, read in place where it can be."""
    if sys.byteorder == "little":
        return region
    return memoryview(_from_u32(region).tobytes())


def _dropped_ranges(doc_map: array) -> list[tuple[int, int]]:
    """The runs ``[a, b)`` of old section numbers that ``doc_map`` drops (-1)."""
    ranges: list[tuple[int, int]] = []
    at = 0
    while True:
        try:
            a = doc_map.index(-1, at)
        except ValueError:
            return ranges
        b = a + 1
        while b < len(doc_map) and doc_map[b] == -1:
            b += 1
        ranges.append((a, b))
        at = b


def _without_dropped(
    remapped: array, tfs_bytes: memoryview, old_docs: memoryview, start: int, end: int,
    gone: list[tuple[int, int]],
) -> tuple[array, array]:
    """One term's remapped postings (``start:end`` of the flat arrays) minus the dropped
    sections, found by bisecting its old (sorted) section numbers per dropped run."""
    docs_out = array("I")
    tfs_out = array("I")
    lo = start
    for a, b in gone:
        i = bisect_left(old_docs, a, lo, end)
        if i == end:
            break
        j = bisect_left(old_docs, b, i, end)
        docs_out.extend(remapped[lo:i])
        tfs_out.frombytes(tfs_bytes[4 * lo : 4 * i])
        lo = j
    docs_out.extend(remapped[lo:end])
    tfs_out.frombytes(tfs_bytes[4 * lo : 4 * end])
    return docs_out, tfs_out


def _merge(docs: array, tfs: array, new_docs: array, new_tfs: array) -> tuple[array, array]:
    """Merge two disjoint sorted postings lists; the second is short (re-parsed files), so
    each of its entries is placed by bisection and the runs between are copied whole."""
    if not docs:
        return new_docs, new_tfs
    out_docs = array("I")
    out_tfs = array("I")
    prev = 0
    for d, tf in zip(new_docs, new_tfs):
        i = bisect_left(docs, d, prev)
        out_docs.extend(docs[prev:i])
        out_tfs.extend(tfs[prev:i])
        out_docs.append(d)
        out_tfs.append(tf)
        prev = i
    out_docs.extend(docs[prev:])
    out_tfs.extend(tfs[prev:])
    return out_docs, out_tfs
