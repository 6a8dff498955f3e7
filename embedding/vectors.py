"""Section vectors on disk: a store per root that a build reuses, and a sidecar per cache.

**The store** (``VectorStore``, one SQLite file per root): int8 codes keyed by the sha256
of (model sha256, tokenizer sha256, recipe, the section's input text). The input text is
the section's heading path and text (``model.section_input``), so a section is embedded
once whatever cache, name, ref or build it appears in: a rebuild, a second name, a
``git pull`` or a ``sync`` embeds only sections never seen, and a heading renamed above a
section (its input changes, its bytes do not) is embedded again. Rows remember the last
build that used them (``used``), so the store can be trimmed least recently used first.
SQLite gives atomic, concurrent-safe writes from the standard library; a damaged file is
set aside and a new one started (the vectors are recomputable, never the only copy).

**The sidecar** (``vectors.bin`` in the cache folder), written after the lexical commit,
atomically (a temporary file, fsync, rename), so a killed embedding leaves the cache as
it was: lexical answers, no sidecar or the previous valid one. Layout::

    MAGIC                         b"doc-index vectors 1\\n"
    header                        one line of JSON: manifest_sha256, model_sha256,
                                  tokenizer_sha256, recipe, dim, count
    rows                          count x dim int8 codes, in the manifest's section order
    digest                        32 bytes: sha256 of everything before it

It is used only when ``manifest_sha256`` is the sha256 of the cache's ``manifest.json``
as it is now (a sidecar left by an earlier build is stale, never mixed with new sections)
and ``model_sha256`` is the model the server runs; otherwise the cache answers lexically.
Size: ``dim`` bytes a section (375 KiB per 1,000 sections) plus the header.

**Embedding a cache** (``embed_sections``) streams: section inputs are taken in batches,
looked up in the store, the misses embedded and stored (each batch committed, so a killed
build keeps what it computed), and the rows written to the temporary sidecar as they
come: memory is a batch, whatever the cache's size.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from .model import DIM

MAGIC = b"doc-index vectors 1\n"
SIDECAR = "vectors.bin"
STORE = "vectors.sqlite"
BATCH = 256  # sections looked up, embedded and written at a time
MAX_HEADER = 4096


class Identity(NamedTuple):
    """What a vector is a function of, beyond its input text."""
    model_sha256: str
    tokenizer_sha256: str
    recipe: str


class SidecarInfo(NamedTuple):
    manifest_sha256: str
    model_sha256: str
    tokenizer_sha256: str
    recipe: str
    count: int  # type: ignore[assignment]  # a field named like tuple.count


def text_key(identity: Identity, text: str) -> bytes:
    """The store's key of one section input under one model."""
    sha = hashlib.sha256()
    for part in (*identity, text):
        data = part.encode("utf-8")
        sha.update(len(data).to_bytes(8, "big"))
        sha.update(data)
    return sha.digest()


class VectorStore:
    """The codes of every section input embedded under a root (see the module docstring)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._db = self._open()
        self.generation = self._next_generation()

    def _open(self) -> sqlite3.Connection:
        try:
            return self._connect()
        except sqlite3.DatabaseError:
            # Not a store (damaged, or not SQLite): set aside, never deleted, start anew.
            os.replace(self.path, self.path.with_name(
                f"{self.path.name}.damaged-{secrets.token_hex(4)}"))
            return self._connect()

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=60.0, isolation_level=None)
        try:
            db.execute("CREATE TABLE IF NOT EXISTS vectors (key BLOB PRIMARY KEY, "
                       "codes BLOB NOT NULL, used INTEGER NOT NULL) WITHOUT ROWID")
            db.execute("CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value)")
            db.execute("SELECT count(*) FROM meta").fetchone()
        except sqlite3.DatabaseError:
            db.close()
            raise
        return db

    def _next_generation(self) -> int:
        with self._db:
            self._db.execute("BEGIN IMMEDIATE")
            row = self._db.execute("SELECT value FROM meta WHERE name='generation'").fetchone()
            gen = (row[0] if row and isinstance(row[0], int) else 0) + 1
            self._db.execute("INSERT OR REPLACE INTO meta VALUES ('generation', ?)", (gen,))
        return gen

    def get_many(self, keys: Sequence[bytes]) -> dict[bytes, bytes]:
        """The stored codes of ``keys`` (those that are stored, of the right length)."""
        found: dict[bytes, bytes] = {}
        for start in range(0, len(keys), 500):
            chunk = list(keys[start:start + 500])
            marks = ",".join("?" * len(chunk))
            for key, codes in self._db.execute(
                    f"SELECT key, codes FROM vectors WHERE key IN ({marks})", chunk):
                if isinstance(codes, bytes) and len(codes) == DIM:
                    found[key] = codes
            with self._db:
                self._db.execute(f"UPDATE vectors SET used=? WHERE key IN ({marks})",
                                 [self.generation, *chunk])
        return found

    def put_many(self, rows: Iterable[tuple[bytes, bytes]]) -> None:
        with self._db:
            self._db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?)",
                                 [(k, c, self.generation) for k, c in rows])

    def count(self) -> int:
        return int(self._db.execute("SELECT count(*) FROM vectors").fetchone()[0])

    def trim(self, keep: int) -> int:
        """Drop the least recently used rows beyond ``keep``; how many were dropped."""
        extra = self.count() - keep
        if extra <= 0:
            return 0
        with self._db:
            self._db.execute("DELETE FROM vectors WHERE key IN (SELECT key FROM vectors "
                             "ORDER BY used, key LIMIT ?)", (extra,))
        return extra

    def close(self) -> None:
        self._db.close()


# --- the sidecar ------------------------------------------------------------------------
def _header(info: SidecarInfo) -> bytes:
    fields = {"manifest_sha256": info.manifest_sha256, "model_sha256": info.model_sha256,
              "tokenizer_sha256": info.tokenizer_sha256, "recipe": info.recipe,
              "dim": DIM, "count": info.count}
    return json.dumps(fields, separators=(",", ":"), sort_keys=True).encode() + b"\n"


class SidecarWriter:
    """Rows written to a temporary file in the cache folder; ``commit`` renames it to
    ``vectors.bin`` once every row is there, ``abort`` (or an error) removes it."""

    def __init__(self, cache_dir: Path, info: SidecarInfo) -> None:
        # The caller holds the cache's build lock: a temporary file already there was left
        # by a killed embedding of this cache, and goes.
        for stale in cache_dir.glob(f".{SIDECAR}.*.part"):
            stale.unlink(missing_ok=True)
        self.target = cache_dir / SIDECAR
        self.part = cache_dir / f".{SIDECAR}.{secrets.token_hex(6)}.part"
        self.info = info
        self.rows = 0
        self._fh = open(self.part, "xb")  # noqa: SIM115 (closed by commit or abort)
        self._sha = hashlib.sha256()
        self._write(MAGIC + _header(info))

    def _write(self, data: bytes) -> None:
        self._sha.update(data)
        self._fh.write(data)

    def add(self, codes: bytes) -> None:
        if len(codes) != DIM:
            raise ValueError("a row is DIM bytes")
        self._write(codes)
        self.rows += 1

    def commit(self) -> None:
        if self.rows != self.info.count:
            self.abort()
            raise ValueError(f"{self.rows} rows written, {self.info.count} announced")
        self._fh.write(self._sha.digest())
        self._fh.flush()
        os.fsync(self._fh.fileno())
        self._fh.close()
        os.replace(self.part, self.target)

    def abort(self) -> None:
        if not self._fh.closed:
            self._fh.close()
        self.part.unlink(missing_ok=True)


def read_sidecar(cache_dir: Path, manifest_sha256: str, model_sha256: str) -> Any | None:
    """The codes (count x DIM int8, numpy) of a valid, current sidecar, else None: absent,
    damaged, written for another manifest (stale) or by another model."""
    try:
        data = (cache_dir / SIDECAR).read_bytes()
    except OSError:
        return None
    return sidecar_rows(data, manifest_sha256, model_sha256)


def sidecar_rows(data: bytes, manifest_sha256: str, model_sha256: str) -> Any | None:
    """:func:`read_sidecar` of a sidecar's bytes already read (through the handle of the
    cache generation they belong to)."""
    import numpy as np  # lazy: the model's libraries load only when answers use meaning

    info, start = parse_header(data)
    if info is None or info.manifest_sha256 != manifest_sha256:
        return None
    if info.model_sha256 != model_sha256:
        return None
    end = start + info.count * DIM
    if len(data) != end + 32 or hashlib.sha256(data[:end]).digest() != data[end:]:
        return None
    return np.frombuffer(data, dtype=np.int8, count=info.count * DIM,
                         offset=start).reshape(info.count, DIM)


def parse_header(data: bytes) -> tuple[SidecarInfo | None, int]:
    """The sidecar's header and where its rows start ((None, 0) if it is not one)."""
    if not data.startswith(MAGIC):
        return None, 0
    end = data.find(b"\n", len(MAGIC), len(MAGIC) + MAX_HEADER)
    if end < 0:
        return None, 0
    try:
        h = json.loads(data[len(MAGIC):end])
        info = SidecarInfo(h["manifest_sha256"], h["model_sha256"], h["tokenizer_sha256"],
                           h["recipe"], h["count"])
    except (ValueError, KeyError, TypeError):
        return None, 0
    if h.get("dim") != DIM or not isinstance(info.count, int) or info.count < 0 or not all(
            isinstance(v, str) for v in info[:4]):
        return None, 0
    return info, end + 1


# --- embedding a cache --------------------------------------------------------------------
class EmbedStats(NamedTuple):
    sections: int
    reused: int
    embedded: int


def _batches(items: Iterable[str], size: int) -> Iterator[list[str]]:
    batch: list[str] = []
    for item in items:
        batch.append(item)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def embed_sections(inputs: Iterable[str], count: int, cache_dir: Path, info: SidecarInfo,
                   store: VectorStore, embed: Callable[[list[str]], Any],
                   progress: Callable[[int], None] | None = None,
                   batch: int = BATCH) -> EmbedStats:
    """Write ``cache_dir``'s sidecar from the section ``inputs`` (in section order,
    ``count`` of them): stored codes reused, the others embedded by ``embed`` (texts ->
    int8 codes, one row each) and stored. Atomic: the sidecar appears whole or not at all."""
    identity = Identity(info.model_sha256, info.tokenizer_sha256, info.recipe)
    writer = SidecarWriter(cache_dir, info._replace(count=count))
    reused = embedded = done = 0
    try:
        for texts in _batches(inputs, batch):
            keys = [text_key(identity, t) for t in texts]
            known = store.get_many(keys)
            first: dict[bytes, int] = {}
            for i, k in enumerate(keys):
                if k not in known and k not in first:
                    first[k] = i
            if first:  # each input never seen is embedded once, however often it repeats
                codes = embed([texts[i] for i in first.values()])
                new = [(k, codes[j].tobytes()) for j, k in enumerate(first)]
                store.put_many(new)
                known.update(new)
            for k in keys:
                writer.add(known[k])
            reused += len(keys) - len(first)
            embedded += len(first)
            done += len(keys)
            if progress is not None:
                progress(done)
        writer.commit()
    except BaseException:
        writer.abort()
        raise
    return EmbedStats(done, reused, embedded)


def manifest_digest(cache_dir: Path) -> str:
    """sha256 of the cache's ``manifest.json`` as it is now (what a sidecar belongs to)."""
    return hashlib.sha256((cache_dir / "manifest.json").read_bytes()).hexdigest()
