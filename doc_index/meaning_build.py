"""The build's second step with the semantic extra: one vector per section, after the
lexical commit (docs/semantic.md).

The lexical cache is committed and answering before anything here runs. Then, holding
the cache's build lock again (a build that committed meanwhile is embedded instead: the
sidecar always belongs to the manifest it names), the live generation's sections are
embedded: each section's input (heading path and text, ``embedding.model.section_input``)
is looked up in the root's vector store (``<root>/.doc-index-tmp/.doc-index-tmp/vectors/``,
beside the parse cache), only inputs never embedded under this root are run through the
model, and the rows are streamed into ``vectors.bin`` (``embedding.vectors``), renamed into
place whole. A killed or failed embedding leaves the committed cache answering lexically
(no sidecar, or a stale one its manifest digest rules out); every batch already embedded
is kept in the store, so the next build resumes there.

Without the extra, or with ``DOC_INDEX_SEMANTIC=off``, nothing here imports anything of
the extra and the cache is what it was; with the extra but no model, the build stays
lexical (a build never downloads on its own). The summary says which in one line
(``meaning_status``).

``sync`` does the same once all its caches are committed, for every cache it synced, with
one model load for all (``embed_caches``: the caches one after the other, each under its
lock, sharing one ``Embedders`` and the root's vector store).
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

from .foundation.errors import DocIndexError, ModelError
from .meaning_status import EXTRA, MeaningStatus, extra_installed, meaning_status, missing_module

STORE_ENV = "DOC_INDEX_VECTOR_STORE_MB"
DEFAULT_STORE_MB = 256
ROW_BYTES = 448  # a stored row on disk, about: 384 codes, the 32-byte key, SQLite's share
STORE_FOLDER = "vectors"
THREADS_ENV = "DOC_INDEX_EMBED_THREADS"

Progress = Callable[[int, int], None]
__all__ = ["EXTRA", "embed_after_build", "embed_after_sync", "embed_caches", "extra_installed",
           "model_for_build"]


def model_for_build(model_dir: Path | None) -> MeaningStatus:
    """Whether a build embeds, and with which model file. A ``model_dir`` given
    (``--model``) that holds none, or given without the extra or with meaning turned off,
    is a ModelError before anything is built."""
    from .embedding.model import SEMANTIC_ENV, enabled

    if model_dir is not None:
        if not enabled():
            raise ModelError(f"--model was given but {SEMANTIC_ENV} turns answers by meaning "
                             "off: unset it, or leave --model out")
        if not extra_installed():
            raise ModelError(f"--model needs the semantic extra ({missing_module()} is "
                             "missing): pip install 'doc-index[semantic]'")
        from .embedding.model import find_model

        find_model(model_dir)  # (raises, naming the folder)
    return meaning_status(model_dir)


class MeaningStats(NamedTuple):
    """What embedding some caches did: ``sections`` of ``caches`` caches, ``reused``
    (already in a current ``vectors.bin`` or the root's store), ``embedded`` (run through
    the model), ``failed``: (cache, why) for each cache left answering lexically."""

    caches: int
    sections: int
    reused: int
    embedded: int
    failed: tuple[tuple[str, str], ...] = ()

    def text(self, seconds: float) -> str:
        """The summary's ``meaning:`` text."""
        of = f" of {self.caches} caches" if self.caches != 1 else ""
        plural = "" if self.sections == 1 else "s"
        line = (f"{self.sections:,} section{plural}{of} ({self.reused:,} reused, "
                f"{self.embedded:,} embedded), {seconds:.2f} s")
        if self.failed:
            key, why = self.failed[0]
            line += (f"; {len(self.failed)} not embedded (the first, {key}: {why}; they "
                     "answer lexically)")
        return line


def embed_after_build(store: Any, report: Any, model: MeaningStatus,
                      progress: Progress | None = None) -> None:
    """Embed the sections of the cache ``report`` built (see the module docstring);
    ``report.meaning`` says what was done, or why not. Errors other than an interrupt are
    that line, never a failed build: the lexical cache is committed."""
    if not model.on or model.model is None:
        report.meaning = f"off: {model.reason}"
        return
    started = time.perf_counter()
    try:
        stats = embed_caches(store, [report.key], model.model, progress)
    except (DocIndexError, OSError) as exc:
        stats = MeaningStats(1, 0, 0, 0, ((report.key, str(exc)),))
    except Exception as exc:  # SQLite's own errors (the vector store)
        stats = MeaningStats(1, 0, 0, 0, ((report.key, f"{type(exc).__name__}: {exc}"),))
    if stats.failed:
        report.meaning = f"not embedded: {stats.failed[0][1]} (the cache answers lexically)"
        return
    report.meaning = stats.text(time.perf_counter() - started)


SYNCED = ("kept", "built", "up to date")


def embed_after_sync(store: Any, report: Any, model: MeaningStatus,
                     progress: Progress | None = None) -> Any:
    """The sync ``report`` with its ``meaning`` line: every cache the project pins now
    (kept, built or up to date) embedded, after all of them were committed, with one
    model load (``embed_caches``); or why not."""
    if not model.on or model.model is None:
        return report._replace(meaning=f"off: {model.reason}")
    keys = [item.key for item in report.items if item.outcome in SYNCED]
    if not keys:
        return report._replace(meaning="nothing to embed (no cache was synced)")
    started = time.perf_counter()
    try:
        stats = embed_caches(store, keys, model.model, progress)
    except (DocIndexError, OSError) as exc:
        return report._replace(meaning=f"not embedded: {exc} (the caches answer lexically)")
    except Exception as exc:  # SQLite's own errors (the vector store)
        return report._replace(meaning=f"not embedded: {type(exc).__name__}: {exc} (the "
                                       "caches answer lexically)")
    return report._replace(meaning=stats.text(time.perf_counter() - started))


def embed_caches(store: Any, keys: list[str], model_path: Path,
                 progress: Progress | None = None) -> MeaningStats:
    """Write the ``vectors.bin`` of each cache ``keys`` names (its live generation, under
    its build lock), one after the other, with one model loaded once (at the first section
    never embedded under this root: a run whose sections are all known loads none).
    ``progress(done, total)`` counts sections over all of them. A cache that fails is
    listed in the result's ``failed`` and the others go on; an interrupt stops all."""
    from .embedding import vectors
    from .embedding.model import read_model

    _, model_sha256 = read_model(model_path)
    total = sum(_count(store, key) for key in keys)
    embedder = Embedders(model_path, embed_threads())
    opened: list[Any] = []  # the root's vector store, opened when a cache needs it

    def vector_store() -> Any:
        if not opened:
            opened.append(vectors.VectorStore(_store_folder(store.root) / vectors.STORE))
        return opened[0]

    sections = reused = embedded = 0
    failed: list[tuple[str, str]] = []
    try:
        for key in keys:
            base = sections
            step = None if progress is None else (lambda d, b=base: progress(b + d, total))
            try:
                with store.lock(key):
                    stats = embed_cache(store.cache_dir(key), model_sha256, vector_store,
                                        embedder, step)
            except (DocIndexError, OSError) as exc:
                failed.append((key, str(exc)))
                continue
            except Exception as exc:  # onnxruntime's and SQLite's own errors
                failed.append((key, f"{type(exc).__name__}: {exc}"))
                continue
            sections, reused, embedded = (sections + stats.sections, reused + stats.reused,
                                          embedded + stats.embedded)
        if opened:
            opened[0].trim(store_rows())
    finally:
        if opened:
            opened[0].close()
        embedder.close()
    return MeaningStats(len(keys), sections, reused, embedded, tuple(failed))


def _count(store: Any, key: str) -> int:
    """The sections of cache ``key`` (its live header), for the progress total."""
    count = (store.live_header(key) or {}).get("document_count")
    return count if isinstance(count, int) and count >= 0 else 0


def embed_cache(cache_dir: Path, model_sha256: str, store: Callable[[], Any],
                embed_codes: Any, progress: Callable[[int], None] | None = None) -> Any:
    """Write ``cache_dir``'s ``vectors.bin`` for its live generation (the caller holds
    the build lock); the ``EmbedStats``. A current sidecar is kept as it is, checked
    before the cache is loaded or the vector store (``store()``) opened: a second sync
    writes nothing."""
    from .embedding import vectors
    from .embedding.model import RECIPE, TOKENIZER_SHA256
    from .foundation.cache_names import MANIFEST_NAME
    from .store.cache_files import read_regular
    from .store.manifest import MAX_MANIFEST_BYTES
    from .store.native_cache import load_native_cache

    current = _current(cache_dir, model_sha256)
    if current is not None:
        if progress is not None:
            progress(current)
        return vectors.EmbedStats(current, current, 0)
    cache = load_native_cache(cache_dir)
    try:
        manifest = read_regular(cache.dir_fd, MANIFEST_NAME, max_bytes=MAX_MANIFEST_BYTES)
        count = cache.document_count
        info = vectors.SidecarInfo(hashlib.sha256(manifest).hexdigest(), model_sha256,
                                   TOKENIZER_SHA256, RECIPE, count)
        return vectors.embed_sections(_inputs(cache), count, cache_dir, info, store(),
                                      embed_codes, progress)
    finally:
        cache.close()


def embed_threads() -> int:
    """Texts embedded side by side: ``DOC_INDEX_EMBED_THREADS`` (1 to 64), else one per
    core this process may run on (``os.sched_getaffinity``, else ``os.cpu_count``)."""
    text = os.environ.get(THREADS_ENV, "")
    if text.isascii() and text.isdigit() and 1 <= int(text[:3]) <= 64:
        return int(text[:3])
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


class Embedders:
    """Texts -> int8 codes, ``threads`` onnxruntime runs side by side on ONE session (the
    model is loaded once, its weights held once): each run is one length's texts (at most
    ``model.BATCH``), on one onnxruntime thread, so runs never wait on each other's
    threads, and a text's vector does not depend on the texts run with it nor on which
    thread runs it (the codes are the same with 1 thread or 8: tests/test_embedding_model.py).
    The model loads at the first text (a build whose sections are all known loads none)."""

    def __init__(self, model_path: Path, threads: int) -> None:
        from .embedding.model import Embedder

        self.model = Embedder(model_path)
        self.threads = max(1, threads)
        self._pool: Any = None

    def __call__(self, texts: list[str]) -> Any:
        import numpy as np

        from .embedding.codes import quantize
        from .embedding.model import DIM, SECTION_PIECES, runs

        ids = self.model.pieces(texts, SECTION_PIECES)  # (loads the model, in this thread)
        out = np.zeros((len(ids), DIM), dtype=np.float32)
        batches = runs(ids)
        if self.threads == 1 or len(batches) == 1:
            for rows in batches:
                out[rows] = self.model.run(ids, rows)
            return quantize(out)
        if self._pool is None:
            from concurrent.futures import ThreadPoolExecutor

            self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix="embed")
        for rows, vectors in zip(batches, self._pool.map(
                lambda rows: self.model.run(ids, rows), batches)):
            out[rows] = vectors
        return quantize(out)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown()


def _inputs(cache: Any) -> Iterator[str]:
    """Each section's input, in section order, read one at a time."""
    from .embedding.model import section_input
    from .search.provenance import heading_path

    for d in range(cache.document_count):
        yield section_input(heading_path(cache, d), cache.section_text(d))


def _current(cache_dir: Path, model_sha256: str) -> int | None:
    """The sections of ``cache_dir``'s ``vectors.bin`` when it is whole and was written
    for its manifest as it is now, by this model, tokenizer and recipe (nothing to do);
    else None."""
    from .embedding.model import DIM, RECIPE, TOKENIZER_SHA256
    from .embedding.vectors import SIDECAR, parse_header

    try:
        data = (cache_dir / SIDECAR).read_bytes()
        manifest = (cache_dir / "manifest.json").read_bytes()
    except OSError:
        return None
    info, start = parse_header(data[:4096 + 64])
    if info is None or info[:4] != (hashlib.sha256(manifest).hexdigest(), model_sha256,
                                    TOKENIZER_SHA256, RECIPE):
        return None
    if len(data) != start + info.count * DIM + 32:
        return None
    return info.count if hashlib.sha256(data[:-32]).digest() == data[-32:] else None


def _store_folder(root: Path) -> Path:
    """The root's vector store folder, each level checked as the parse cache's is."""
    from .foundation.cache_names import STAGING_DIR
    from .store.commit import KeyArea, open_checked

    with KeyArea(root, STAGING_DIR, create=True) as area:
        fd = open_checked(area.fd, STORE_FOLDER, area.owner, area.path / STORE_FOLDER, True)
        os.close(fd)
        return area.path / STORE_FOLDER


def store_rows() -> int:
    """The rows the vector store keeps: ``DOC_INDEX_VECTOR_STORE_MB`` MiB (default 256),
    at about ``ROW_BYTES`` a row; a value that is not a whole number is the default."""
    text = os.environ.get(STORE_ENV, "")
    mb = int(text) if text.isascii() and text.isdigit() and len(text) < 8 else DEFAULT_STORE_MB
    return mb * 1024 * 1024 // ROW_BYTES
