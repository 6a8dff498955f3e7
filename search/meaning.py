"""Answers by meaning at resolve time: the query's similarity to each section of a cache
that holds vectors (``vectors.bin``, written by the build after its lexical commit).

The lexical answer is the default and the fallback, byte for byte: a cache is answered
by meaning only when every piece is there, checked cheapest first, so a cache without
vectors costs one ``stat`` and imports nothing of the extra:

1. ``DOC_INDEX_SEMANTIC`` is not ``off`` (or ``0``, ``false``, ``no``);
2. the loaded generation holds a regular ``vectors.bin``;
3. the extra imports and a model file is found (``--model DIR``, else
   ``DOC_INDEX_MODEL_DIR``, else the user cache: ``embedding.model.find_model``) and is a
   known export;
4. the sidecar is whole, written for this generation's manifest and by that model.

A missing piece is not an error at resolve (the answer is lexical, as without the extra);
``doc-index build`` says why it did not embed. The embedder is kept per model file for the
life of the process (the MCP server loads it at its first answer by meaning, then answers
warm); the sidecar's rows are kept with the loaded cache (``index.memo``).
"""

from __future__ import annotations

import hashlib
import os
import stat
import threading
from pathlib import Path
from typing import Any

from ..embedding.model import enabled
from ..foundation.cache_names import MANIFEST_NAME
from ..store.cache_files import read_regular
from ..store.manifest import MAX_MANIFEST_BYTES
from ..store.native_cache import NativeCache

SIDECAR = "vectors.bin"  # embedding.vectors.SIDECAR (that module imports sqlite3)
_MEMO = "meaning.rows"

_lock = threading.Lock()
_embedders: dict[str, Any] = {}  # model file -> its Embedder, or False: not a usable file


def has_sidecar(cache: NativeCache) -> bool:
    """The loaded generation holds a regular ``vectors.bin`` (one ``stat``)."""
    try:
        st = os.stat(SIDECAR, dir_fd=cache.dir_fd, follow_symlinks=False)
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode)


def embedder(model_dir: Path | None) -> Any | None:
    """The loaded embedder of the model file found from ``model_dir``, or None (no extra,
    no model, an unknown file)."""
    from ..embedding.model import Embedder, find_model
    from ..foundation.errors import ModelError

    try:
        path = find_model(model_dir)
    except ModelError:
        return None
    key = os.fspath(path)
    with _lock:
        found = _embedders.get(key)
        if found is None:
            found = Embedder(path)
            try:
                found.load()
            except ModelError:
                found = False
            _embedders[key] = found
    return found or None


# Whether an answer used meaning (``Answer.meaning``), and if not, which piece was missing:
USED = "used"
TURNED_OFF = "turned off"  # DOC_INDEX_SEMANTIC=off
NO_VECTORS = "no vectors"  # the cache holds no vectors.bin
NO_MODEL = "no model"  # no extra, no model file found, or a file that is not a known export
UNUSABLE = "unusable vectors"  # an earlier build's, another model's, or damaged


def cosines(cache: NativeCache, query: str, model_dir: Path | None = None) -> Any | None:
    """The cosine of ``query`` with every section of ``cache`` (float64, section order),
    or None: the cache is answered lexically (see the module docstring)."""
    return similarity(cache, query, model_dir)[0]


def similarity(cache: NativeCache, query: str,
               model_dir: Path | None = None) -> tuple[Any | None, str]:
    """:func:`cosines`, and whether meaning was used (``USED``) or which piece was missing
    (``TURNED_OFF``, ``NO_VECTORS``, ``NO_MODEL``, ``UNUSABLE``), checked in that order."""
    if not enabled():
        return None, TURNED_OFF
    if not has_sidecar(cache):
        return None, NO_VECTORS
    model = embedder(model_dir)
    if model is None:
        return None, NO_MODEL
    table = rows(cache, model.model_sha256)
    if table is None:
        return None, UNUSABLE
    from ..embedding import codes
    from ..embedding.model import QUERY_PIECES

    with _lock:  # one tokenizer and session per model: queries embedded one at a time
        vector = model.embed([query], max_pieces=QUERY_PIECES)
    return codes.similarities(table[0], table[1], codes.quantize(vector)[0]), USED


def rows(cache: NativeCache, model_sha256: str) -> tuple[Any, Any] | None:
    """The sidecar's codes and their squared norms, read once per loaded generation and
    sidecar file; None when it is absent, damaged, stale or of another model."""
    try:
        st = os.stat(SIDECAR, dir_fd=cache.dir_fd, follow_symlinks=False)
    except OSError:
        return None
    key = (st.st_ino, st.st_size, st.st_mtime_ns, model_sha256)
    memo = cache.index.memo.get(_MEMO)
    if memo is not None and memo[0] == key:
        return memo[1]
    value = _read_rows(cache, model_sha256, st.st_size)
    cache.index.memo[_MEMO] = (key, value)
    return value


def _read_rows(cache: NativeCache, model_sha256: str, size: int) -> tuple[Any, Any] | None:
    from ..embedding import codes
    from ..embedding.model import DIM
    from ..embedding.vectors import sidecar_rows

    if size > cache.document_count * DIM + 4096 + 32 + 64:
        return None  # not this cache's sidecar: never read it whole
    try:
        data = read_regular(cache.dir_fd, SIDECAR, max_bytes=size)
        manifest = read_regular(cache.dir_fd, MANIFEST_NAME, max_bytes=MAX_MANIFEST_BYTES)
    except (OSError, ValueError):
        return None
    except Exception as exc:  # cache_invalid: over the size read
        if getattr(exc, "code", None) == "cache_invalid":
            return None
        raise
    table = sidecar_rows(data, hashlib.sha256(manifest).hexdigest(), model_sha256)
    if table is None or len(table) != cache.document_count:
        return None
    return table, codes.squared_norms(table)
