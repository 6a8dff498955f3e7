"""The search sidecar of a native cache (``search.idx``): an inverted index over sections.

Written at build time so that resolve never re-reads or re-analyzes documents. Layout:

    b"doc-index search v2\\n"
    header JSON line: cache_version, analyzer, sections, avg field lengths, part sizes
    meta JSON:  per section kind (r/h/p), dedup hash, word count, field lengths
    terms JSON: {term: [posting offset, document frequency]} (keys sorted)
    postings:   per term, df little-endian uint32 section numbers then df packed tfs
    trailer:    sha256 digest (32 raw bytes) of everything before it

A packed tf is ``title << 24 | path << 16 | body`` (capped at 255, 255, 65535). Section
numbers follow the manifest's section order, so equal content gives equal bytes.

Terms that start with a space are section *features*, not words (a word never holds a
space): ``" changelog"`` marks release-notes sections (``indexer.analysis``). They ride in
the postings so that incremental builds carry them forward like any term.

``SearchIndex.memo`` holds what resolve derives once per loaded index (per-section
normalizations, file groups); it is not part of the bytes.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from array import array
from bisect import bisect_left
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MAGIC = b"doc-index search v2\n"
DIGEST_BYTES = 32  # the sha256 trailer: damage anywhere in the file is cache_invalid
KIND_CODES = {"root": "r", "heading": "h", "part": "p"}
KIND_NAMES = {v: k for k, v in KIND_CODES.items()}


def _u32(values: array) -> bytes:
    if sys.byteorder != "little":
        values = array("I", values)
        values.byteswap()
    return values.tobytes()


def _from_u32(data: bytes | memoryview) -> array:
    values = array("I")
    values.frombytes(data)
    if sys.byteorder != "little":
        values.byteswap()
    return values


class IndexWriter:
    """Accumulates sections in manifest order and serializes the sidecar."""

    def __init__(self) -> None:
        self.kinds: list[str] = []
        self.dedup: list[str] = []
        self.words: list[int] = []
        self.lens: list[list[int]] = [[], [], []]
        self.postings: dict[str, tuple[array, array]] = {}

    @property
    def count(self) -> int:
        return len(self.kinds)

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

    def write(self, target: Path, cache_version: str, analyzer: int, build_config: dict) -> None:
        """Write the sidecar to ``target`` (streamed: postings are never copied whole)."""
        n = self.count
        avg = [(sum(col) / n) if n else 0.0 for col in self.lens]
        meta = json.dumps(
            {"kind": "".join(self.kinds), "dedup": self.dedup, "words": self.words,
             "lens": self.lens},
            separators=(",", ":"),
        ).encode()
        terms: dict[str, list[int]] = {}
        offset = 0
        order = sorted(t for t, (docs, _) in self.postings.items() if docs)
        for term in order:
            df = len(self.postings[term][0])
            terms[term] = [offset, df]
            offset += 8 * df
        term_json = json.dumps(terms, separators=(",", ":"), ensure_ascii=False).encode()
        header = json.dumps(
            {"cache_version": cache_version, "analyzer": analyzer, "build_config": build_config,
             "sections": n, "avg": avg,
             "meta_bytes": len(meta), "terms_bytes": len(term_json), "postings_bytes": offset},
            separators=(",", ":"),
        ).encode()
        digest = hashlib.sha256()
        with open(target, "wb") as fh:

            def put(data: bytes) -> None:
                digest.update(data)
                fh.write(data)

            put(MAGIC + header + b"\n")
            put(meta)
            put(term_json)
            for term in order:
                docs, tfs = self.postings[term]
                put(_u32(docs))
                put(_u32(tfs))
            fh.write(digest.digest())
            fh.flush()
            os.fsync(fh.fileno())

    def to_bytes(self, cache_version: str, analyzer: int, build_config: dict) -> bytes:
        """The sidecar's bytes (tests and tools; builds stream with ``write``)."""
        import tempfile

        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "search.idx"
            self.write(path, cache_version, analyzer, build_config)
            return path.read_bytes()


@dataclass
class SearchIndex:
    """A loaded sidecar. Postings are decoded per term, on demand."""

    cache_version: str
    analyzer: int
    build_config: dict
    count: int
    avg: list[float]
    kinds: str
    dedup: list[str]
    words: list[int]
    lens: list[list[int]]
    terms: dict[str, list[int]]
    blob: memoryview
    memo: dict[Any, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_bytes(cls, data: bytes) -> SearchIndex:
        """Parse a sidecar; raises ValueError when it is not one or is damaged."""
        if not data.startswith(MAGIC) or len(data) < len(MAGIC) + DIGEST_BYTES:
            raise ValueError("not a doc-index search index")
        end = len(data) - DIGEST_BYTES
        if hashlib.sha256(memoryview(data)[:end]).digest() != data[end:]:
            raise ValueError("search index checksum mismatch")
        nl = data.index(b"\n", len(MAGIC))
        header = json.loads(data[len(MAGIC) : nl])
        pos = nl + 1
        meta_end = pos + header["meta_bytes"]
        terms_end = meta_end + header["terms_bytes"]
        if end != terms_end + header["postings_bytes"]:
            raise ValueError("search index has the wrong size")
        meta = json.loads(data[pos:meta_end])
        terms = json.loads(data[meta_end:terms_end])
        n = header["sections"]
        if len(meta["kind"]) != n or len(meta["words"]) != n:
            raise ValueError("search index metadata does not match its section count")
        return cls(
            cache_version=header["cache_version"], analyzer=header["analyzer"],
            build_config=header["build_config"], count=n,
            avg=[float(a) for a in header["avg"]], kinds=meta["kind"], dedup=meta["dedup"],
            words=meta["words"], lens=meta["lens"], terms=terms,
            blob=memoryview(data)[terms_end:end],
        )

    def postings(self, term: str) -> tuple[array, array]:
        """(section numbers, packed tfs) of a term; empty arrays when it does not occur."""
        entry = self.terms.get(term)
        if entry is None:
            return array("I"), array("I")
        offset, df = entry
        docs = _from_u32(self.blob[offset : offset + 4 * df])
        tfs = _from_u32(self.blob[offset + 4 * df : offset + 8 * df])
        return docs, tfs


def carry_forward(writer: IndexWriter, old: SearchIndex, doc_map: array) -> None:
    """Merge the postings of sections kept from ``old`` into ``writer``.

    ``doc_map[old section number]`` is its new number, or -1 when it was dropped. Call after
    every section (kept or new) has been added, so that new numbers are final. The map is
    monotonic for kept sections, so remapped postings stay sorted; only terms that also
    have postings from re-parsed sections need a merge.
    """
    postings = writer.postings
    remap = doc_map.tolist()
    dropped = -1 in remap
    for term in old.terms:
        docs, tfs = old.postings(term)
        new_docs = [remap[d] for d in docs]
        if dropped and -1 in new_docs:
            keep = [k for k, d in enumerate(new_docs) if d >= 0]
            new_docs = [new_docs[k] for k in keep]
            tfs = array("I", [tfs[k] for k in keep])
            if not new_docs:
                continue
        fresh = postings.get(term)
        if fresh is None:
            postings[term] = (array("I", new_docs), tfs)
            continue
        postings[term] = _merge(array("I", new_docs), tfs, fresh[0], fresh[1])


def _merge(docs: array, tfs: array, new_docs: array, new_tfs: array) -> tuple[array, array]:
    """Merge two disjoint sorted postings lists; the second is short (re-parsed files), so
    each of its entries is placed by bisection and the runs between are copied whole."""
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
