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
the extra and the build is what it was. With the extra but no model, the summary says so
in one line and the build stays lexical (a build never downloads on its own).
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable, Iterator
from importlib.util import find_spec
from pathlib import Path
from typing import Any, NamedTuple

from .foundation.errors import DocIndexError, ModelError

EXTRA = ("onnxruntime", "tokenizers", "numpy")
STORE_ENV = "DOC_INDEX_VECTOR_STORE_MB"
DEFAULT_STORE_MB = 256
ROW_BYTES = 448  # a stored row on disk, about: 384 codes, the 32-byte key, SQLite's share
STORE_FOLDER = "vectors"
THREADS_ENV = "DOC_INDEX_EMBED_THREADS"
MIN_SHARE = 16  # texts a session takes at least before a second one joins

Progress = Callable[[int, int], None]


class BuildModel(NamedTuple):
    """The model a build embeds with (``path``), or why it does not (``note``: None when
    nothing is to be said: the extra is not installed, or the user turned it off)."""

    path: Path | None
    note: str | None = None


def extra_installed() -> bool:
    """The semantic extra's modules can be imported (looked up, not imported)."""
    return all(find_spec(name) is not None for name in EXTRA)


def model_for_build(model_dir: Path | None) -> BuildModel:
    """The model file a build embeds with. A ``model_dir`` given (``--model``) that holds
    none, or given without the extra, is a ModelError before anything is built."""
    from .embedding.model import SEMANTIC_ENV, enabled

    if not enabled():
        if model_dir is not None:
            raise ModelError(f"--model was given but {SEMANTIC_ENV} turns answers by meaning "
                             "off: unset it, or leave --model out")
        return BuildModel(None)
    if not extra_installed():
        if model_dir is None:
            return BuildModel(None)
        missing = next(name for name in EXTRA if find_spec(name) is None)
        raise ModelError(f"--model needs the semantic extra ({missing} is missing): "
                         "pip install 'doc-index[semantic]'")
    from .embedding.model import find_model

    try:
        return BuildModel(find_model(model_dir))
    except ModelError as exc:
        if model_dir is not None:
            raise
        return BuildModel(None, f"off: {exc}")


def embed_after_build(store: Any, report: Any, model: BuildModel,
                      progress: Progress | None = None) -> None:
    """Embed the sections of the cache ``report`` built (see the module docstring);
    ``report.meaning`` says what was done, or why not. Errors other than an interrupt are
    that line, never a failed build: the lexical cache is committed."""
    if model.path is None:
        report.meaning = model.note
        return
    started = time.perf_counter()
    try:
        with store.lock(report.key):
            stats = embed_cache(store.root, report.cache_dir, model.path, progress)
    except (DocIndexError, OSError) as exc:
        report.meaning = f"not embedded: {exc} (the cache answers lexically)"
        return
    except Exception as exc:  # onnxruntime's and SQLite's own errors
        report.meaning = (f"not embedded: {type(exc).__name__}: {exc} (the cache answers "
                          "lexically)")
        return
    seconds = time.perf_counter() - started
    report.meaning = (f"{stats.sections:,} sections ({stats.reused:,} reused, "
                      f"{stats.embedded:,} embedded), {seconds:.2f} s")


def embed_cache(root: Path, cache_dir: Path, model_path: Path,
                progress: Progress | None = None) -> Any:
    """Write ``cache_dir``'s ``vectors.bin`` for its live generation (the caller holds
    the build lock); the ``EmbedStats``. A current sidecar is kept as it is."""
    from .embedding import vectors
    from .embedding.model import RECIPE, TOKENIZER_SHA256, read_model
    from .store.cache_files import read_regular
    from .store.manifest import MANIFEST_NAME, MAX_MANIFEST_BYTES
    from .store.native_cache import load_native_cache

    _, model_sha256 = read_model(model_path)
    cache = load_native_cache(cache_dir)
    try:
        manifest = read_regular(cache.dir_fd, MANIFEST_NAME, max_bytes=MAX_MANIFEST_BYTES)
        info = vectors.SidecarInfo(hashlib.sha256(manifest).hexdigest(), model_sha256,
                                   TOKENIZER_SHA256, RECIPE, cache.document_count)
        count = cache.document_count
        if _current(cache_dir, info):
            return vectors.EmbedStats(count, count, 0)
        embed_codes = Embedders(model_path, embed_threads())
        store = vectors.VectorStore(_store_folder(root) / vectors.STORE)
        try:
            stats = vectors.embed_sections(
                _inputs(cache), count, cache_dir, info, store, embed_codes,
                None if progress is None else lambda done: progress(done, count))
            store.trim(store_rows())
        finally:
            store.close()
            embed_codes.close()
        return stats
    finally:
        cache.close()


def embed_threads() -> int:
    """Sessions run side by side: ``DOC_INDEX_EMBED_THREADS`` (1 to 16), else 2 on a
    machine of 4 cores or more, 1 below (each session takes the model's memory again; on
    2 busy cores a second session was slower, docs/semantic.md)."""
    text = os.environ.get(THREADS_ENV, "")
    if text.isascii() and text.isdigit() and 1 <= int(text[:3]) <= 16:
        return int(text[:3])
    return 2 if (os.cpu_count() or 1) >= 4 else 1


class Embedders:
    """Texts -> int8 codes, on ``threads`` sessions of one onnxruntime thread each, run
    side by side (onnxruntime releases the GIL): a text's vector does not depend on the
    texts run with it, so the split changes no code. Each session loads at its first
    text (a build whose sections are all known loads none)."""

    def __init__(self, model_path: Path, threads: int) -> None:
        from .embedding.model import Embedder

        self.models = [Embedder(model_path) for _ in range(threads)]
        self._pool: Any = None

    def __call__(self, texts: list[str]) -> Any:
        from .embedding.codes import quantize

        n = min(len(self.models), max(1, len(texts) // MIN_SHARE))
        if n == 1:
            return quantize(self.models[0].embed(texts))
        if self._pool is None:
            from concurrent.futures import ThreadPoolExecutor

            self._pool = ThreadPoolExecutor(len(self.models))
        parts = list(self._pool.map(lambda i: self.models[i].embed(texts[i::n]), range(n)))
        import numpy as np

        out = np.empty((len(texts), parts[0].shape[1]), dtype=parts[0].dtype)
        for i, part in enumerate(parts):
            out[i::n] = part
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


def _current(cache_dir: Path, info: Any) -> bool:
    """``vectors.bin`` is whole and was written for exactly ``info``: nothing to do."""
    from .embedding.vectors import SIDECAR, parse_header

    path = cache_dir / SIDECAR
    try:
        with open(path, "rb") as fh:
            head = fh.read(4096 + 64)
        size = path.stat().st_size
    except OSError:
        return False
    found, start = parse_header(head)
    if found != info:
        return False
    from .embedding.model import DIM

    if size != start + info.count * DIM + 32:
        return False
    data = path.read_bytes()
    return hashlib.sha256(data[:-32]).digest() == data[-32:]


def _store_folder(root: Path) -> Path:
    """The root's vector store folder, each level checked as the parse cache's is."""
    from .store.cache_names import STAGING_DIR
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
