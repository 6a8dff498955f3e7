"""The vector store of a root and the sidecar of a cache (``embedding.vectors``): a section
input is embedded once, the sidecar appears whole and current or not at all."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from conftest import SAFETY_TIMEOUT, wait_for

np = pytest.importorskip("numpy")

from doc_index.embedding import vectors  # noqa: E402
from doc_index.embedding.model import DIM  # noqa: E402

INFO = vectors.SidecarInfo("m" * 64, "a" * 64, "t" * 64, "recipe/1", 0)


def fake_codes(texts: list[str]) -> Any:
    """Stand-in for the model: codes derived from each text's sha256."""
    rows = [np.frombuffer(hashlib.sha256(t.encode()).digest() * 12, dtype=np.int8)
            for t in texts]
    return np.vstack(rows) if rows else np.zeros((0, DIM), dtype=np.int8)


class Counting:
    def __init__(self) -> None:
        self.texts: list[str] = []

    def __call__(self, texts: list[str]) -> Any:
        self.texts += texts
        return fake_codes(texts)


def embed(cache: Path, store: vectors.VectorStore, inputs: list[str], fn: Any = None,
          manifest: str = "m" * 64, model: str = "a" * 64) -> vectors.EmbedStats:
    cache.mkdir(parents=True, exist_ok=True)
    info = INFO._replace(manifest_sha256=manifest, model_sha256=model)
    return vectors.embed_sections(iter(inputs), len(inputs), cache, info, store,
                                  fn or Counting(), batch=4)


def test_sidecar_rows_are_the_codes_in_section_order(tmp_path: Path) -> None:
    store = vectors.VectorStore(tmp_path / "v.sqlite")
    inputs = [f"section {i}" for i in range(10)]
    stats = embed(tmp_path / "c", store, inputs)
    assert stats == vectors.EmbedStats(10, 0, 10)
    got = vectors.read_sidecar(tmp_path / "c", "m" * 64, "a" * 64)
    assert got is not None and got.shape == (10, DIM)
    assert np.array_equal(got, fake_codes(inputs))
    assert (tmp_path / "c" / vectors.SIDECAR).stat().st_size == (
        len(vectors.MAGIC) + len(vectors._header(INFO._replace(count=10))) + 10 * DIM + 32)


def test_only_inputs_never_seen_are_embedded(tmp_path: Path) -> None:
    store = vectors.VectorStore(tmp_path / "v.sqlite")
    embed(tmp_path / "first", store, ["a", "b", "c"])
    store.close()
    again = vectors.VectorStore(tmp_path / "v.sqlite")  # another build, another cache
    counting = Counting()
    stats = embed(tmp_path / "second", again, ["b", "new", "a", "c", "new"], counting)
    assert counting.texts == ["new"]  # once, though it is there twice
    assert stats == vectors.EmbedStats(5, 4, 1)
    got = vectors.read_sidecar(tmp_path / "second", "m" * 64, "a" * 64)
    assert np.array_equal(got, fake_codes(["b", "new", "a", "c", "new"]))


def test_another_model_never_reuses_a_vector(tmp_path: Path) -> None:
    store = vectors.VectorStore(tmp_path / "v.sqlite")
    embed(tmp_path / "c", store, ["a"])
    counting = Counting()
    embed(tmp_path / "c", store, ["a"], counting, model="b" * 64)
    assert counting.texts == ["a"]


@pytest.mark.parametrize("why", ["stale manifest", "other model", "flipped byte",
                                 "truncated", "not a sidecar", "absent"])
def test_a_sidecar_that_is_not_current_and_whole_is_not_used(tmp_path: Path, why: str) -> None:
    store = vectors.VectorStore(tmp_path / "v.sqlite")
    embed(tmp_path / "c", store, ["a", "b"])
    path = tmp_path / "c" / vectors.SIDECAR
    data = bytearray(path.read_bytes())
    manifest, model = "m" * 64, "a" * 64
    if why == "stale manifest":
        manifest = "n" * 64
    elif why == "other model":
        model = "b" * 64
    elif why == "flipped byte":
        data[-40] ^= 1
    elif why == "truncated":
        del data[-1]
    elif why == "not a sidecar":
        data[:4] = b"junk"
    else:
        path.unlink()
    if path.exists():
        path.write_bytes(bytes(data))
    assert vectors.read_sidecar(tmp_path / "c", manifest, model) is None


def test_a_failed_embedding_keeps_the_previous_sidecar(tmp_path: Path) -> None:
    store = vectors.VectorStore(tmp_path / "v.sqlite")
    embed(tmp_path / "c", store, ["a", "b"])
    before = (tmp_path / "c" / vectors.SIDECAR).read_bytes()
    calls = Counting()

    def dies_on_second_batch(texts: list[str]) -> Any:
        if calls.texts:
            raise RuntimeError("killed")
        return calls(texts)

    with pytest.raises(RuntimeError):
        embed(tmp_path / "c", store, [f"s{i}" for i in range(8)], dies_on_second_batch,
              manifest="n" * 64)
    assert sorted(p.name for p in (tmp_path / "c").iterdir()) == [vectors.SIDECAR]
    assert (tmp_path / "c" / vectors.SIDECAR).read_bytes() == before
    # What was computed before the failure is kept: the next run embeds the rest only.
    again = Counting()
    embed(tmp_path / "c", store, [f"s{i}" for i in range(8)], again, manifest="n" * 64)
    assert again.texts == [f"s{i}" for i in range(4, 8)]


KILLED = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    import numpy as np
    from doc_index.embedding import vectors
    cache, ready = Path(sys.argv[1]), Path(sys.argv[2])
    store = vectors.VectorStore(cache.parent / "v.sqlite")
    def slow(texts):
        ready.write_text("embedding")
        time.sleep(600)
    info = vectors.SidecarInfo("n" * 64, "a" * 64, "t" * 64, "recipe/1", 0)
    vectors.embed_sections(iter(["x", "y"]), 2, cache, info, store, slow)
""")


def test_a_killed_embedding_leaves_the_cache_as_it_was(tmp_path: Path) -> None:
    store = vectors.VectorStore(tmp_path / "v.sqlite")
    cache = tmp_path / "c"
    embed(cache, store, ["a", "b"])
    before = (cache / vectors.SIDECAR).read_bytes()
    ready = tmp_path / "ready"
    proc = subprocess.Popen([sys.executable, "-c", KILLED, str(cache), str(ready)])
    wait_for(ready.exists, "the embedding to start")
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=SAFETY_TIMEOUT)
    assert (cache / vectors.SIDECAR).read_bytes() == before
    assert vectors.read_sidecar(cache, "m" * 64, "a" * 64) is not None
    # The temporary file the kill left goes with the next embedding of this cache.
    assert [p.name for p in cache.glob(".*.part")]
    embed(cache, store, ["a"])
    assert sorted(p.name for p in cache.iterdir()) == [vectors.SIDECAR]


def test_a_damaged_store_is_set_aside_and_started_anew(tmp_path: Path) -> None:
    path = tmp_path / "v.sqlite"
    path.write_bytes(b"not a database" * 100)
    store = vectors.VectorStore(path)
    counting = Counting()
    embed(tmp_path / "c", store, ["a"], counting)
    assert counting.texts == ["a"]
    assert len(list(tmp_path.glob("v.sqlite.damaged-*"))) == 1


def test_trim_keeps_the_most_recently_used(tmp_path: Path) -> None:
    embed(tmp_path / "c1", vectors.VectorStore(tmp_path / "v.sqlite"), ["old", "both"])
    embed(tmp_path / "c2", vectors.VectorStore(tmp_path / "v.sqlite"), ["both", "new"])
    store = vectors.VectorStore(tmp_path / "v.sqlite")
    assert store.trim(keep=2) == 1
    counting = Counting()
    embed(tmp_path / "c3", store, ["old", "both", "new"], counting)
    assert counting.texts == ["old"]


def test_the_sidecar_file_is_written_with_no_other_name(tmp_path: Path) -> None:
    """Nothing but ``vectors.bin`` is left in the cache folder by a good run."""
    embed(tmp_path / "c", vectors.VectorStore(tmp_path / "v.sqlite"), ["a"])
    assert os.listdir(tmp_path / "c") == [vectors.SIDECAR]
