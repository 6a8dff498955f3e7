"""``doc-index model fetch``: the pinned model file, from its publisher, into the user's cache.

The file is ``onnx/model_quint8_avx2.onnx`` of sentence-transformers/all-MiniLM-L6-v2 at
the pinned revision (``REVISION``): the publisher's dynamic int8 export (uint8 weights and
activations), which onnxruntime runs on any x86-64 or ARM64 CPU. One file on every machine,
so every machine computes the same vectors. The tokenizer is part of the package.

Safety: the download goes to a temporary file beside the target (same folder, so the final
rename is atomic), is hashed as it arrives and stops at the pinned size; only a file of
exactly the pinned size and sha256 is renamed into place. A mismatch, an interrupted
download or any error removes the temporary file: nothing partial is ever left under the
model's name. A file already at the target with the pinned sha256 is kept (nothing is
downloaded); one with another sha256 was not made by this command and is never overwritten.

Air-gapped machines: copy the file (from a connected machine's cache, or the publisher's
repository) into any folder and point ``--model DIR`` or ``DOC_INDEX_MODEL_DIR`` at it;
``--url`` fetches from a mirror instead (the pinned sha256 still decides).
"""

from __future__ import annotations

import argparse
import hashlib
import http.client
import os
import secrets
import sys
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

from ..foundation.errors import DocIndexError, ModelError
from .model import KNOWN_MODELS, user_model_dir

REPOSITORY = "sentence-transformers/all-MiniLM-L6-v2"
REVISION = "1110a243fdf4706b3f48f1d95db1a4f5529b4d41"
REMOTE_NAME = "onnx/model_quint8_avx2.onnx"
FILE_NAME = "model_quint8_avx2.onnx"
SHA256 = "b941bf19f1f1283680f449fa6a7336bb5600bdcd5f84d10ddc5cd72218a0fd21"
SIZE = 23_046_789
URL = f"https://huggingface.co/{REPOSITORY}/resolve/{REVISION}/{REMOTE_NAME}"
TIMEOUT = 60.0  # seconds without a byte before the download is abandoned
CHUNK = 1 << 20

assert KNOWN_MODELS[SHA256].size == SIZE  # the pin and the table agree


def fetch(dest: Path, url: str = URL, sha256: str = SHA256, size: int = SIZE,
          progress: Callable[[int], None] | None = None) -> tuple[Path, bool]:
    """Download ``url`` to ``dest/FILE_NAME``, verified; returns (path, downloaded)."""
    target = dest / FILE_NAME
    if target.exists() or target.is_symlink():
        if target.is_file() and _digest(target) == sha256:
            return target, False
        raise ModelError(f"{target} exists and is not the pinned model file (sha256 "
                         f"{sha256}): move it away, then fetch again")
    if not url.startswith(("https://", "http://")):
        raise ModelError(f"cannot fetch {url}: only http:// and https:// URLs")
    try:
        dest.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ModelError(f"cannot create {dest}: {exc.strerror}") from exc
    part = dest / f".{FILE_NAME}.{secrets.token_hex(6)}.part"
    try:
        digest = _download(url, part, size, progress)
        if digest != sha256:
            raise ModelError(f"the file at {url} is not the pinned model (sha256 {digest}, "
                             f"pinned {sha256}): not kept")
        os.replace(part, target)
    finally:
        part.unlink(missing_ok=True)
    return target, True


def _download(url: str, part: Path, size: int,
              progress: Callable[[int], None] | None) -> str:
    """Stream ``url`` into ``part`` (created new), at most ``size`` bytes; its sha256."""
    sha = hashlib.sha256()
    got = 0
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT) as response, \
                open(part, "xb") as out:
            while True:
                block = response.read1(CHUNK)  # what has arrived: progress as it comes
                if not block:
                    break
                got += len(block)
                if got > size:
                    raise ModelError(f"the file at {url} is larger than the pinned model "
                                     f"({size} bytes): not kept")
                sha.update(block)
                out.write(block)
                if progress is not None:
                    progress(got)
            out.flush()
            os.fsync(out.fileno())
    except urllib.error.HTTPError as exc:
        raise ModelError(f"cannot fetch {url}: HTTP {exc.code} {exc.reason}") from exc
    except (urllib.error.URLError, http.client.HTTPException, TimeoutError, OSError) as exc:
        reason = getattr(exc, "reason", None) or getattr(exc, "strerror", None) or exc
        raise ModelError(f"cannot fetch {url}: {reason}") from exc
    if got != size:
        raise ModelError(f"the download of {url} stopped at {got} of {size} bytes: not kept")
    return sha.hexdigest()


def _digest(path: Path) -> str:
    sha = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(CHUNK), b""):
            sha.update(block)
    return sha.hexdigest()


def main(argv: list[str] | None = None) -> int:
    """``python -m doc_index.embedding.fetch`` (``doc-index model fetch`` once wired)."""
    parser = argparse.ArgumentParser(prog="doc-index model fetch",
                                     description="Download the pinned embedding model.")
    parser.add_argument("--dest", type=Path, default=None,
                        help="folder to put it in (default: the user's cache folder)")
    parser.add_argument("--url", default=URL, help="a mirror of the pinned file")
    args = parser.parse_args(argv)
    try:
        dest = args.dest if args.dest is not None else user_model_dir()
        print(f"fetching {args.url}\n  into {dest} ({SIZE / 1e6:.1f} MB, sha256 {SHA256})",
              file=sys.stderr, flush=True)
        path, downloaded = fetch(dest, args.url)
    except DocIndexError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("error: interrupted: nothing was kept", file=sys.stderr)
        return 130
    print(f"{'fetched' if downloaded else 'already there'}: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
