"""The raw files a rebuild carries (``store.raw_files``): a live or spare raw file swapped
for a FIFO or a sparse file of any size is untrusted (the build becomes a full one), never a
hang or a read of its claimed size."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import build, run_cli, write_tree

from doc_index.store import raw_files
from doc_index.store.manifest import MAX_RAW_FILE_BYTES

DOCS = {"a.md": "# A\n\nalpha\n", "b.md": "# B\n\nbeta\n"}


def test_a_raw_file_swapped_for_a_fifo_makes_a_full_build_not_a_hang(tmp_path: Path) -> None:
    docs = write_tree(tmp_path / "docs", DOCS)
    root = tmp_path / "root"
    assert run_cli("build", str(docs), "--root", str(root), "--name", "n").returncode == 0
    (root / "n" / "a.md").unlink()
    os.mkfifo(root / "n" / "a.md")
    write_tree(docs, {"b.md": "# B\n\nbeta, changed\n"})
    done = run_cli("build", str(docs), "--root", str(root), "--name", "n")  # (no writer)
    assert done.returncode == 0, done.stderr
    assert (root / "n" / "a.md").read_bytes() == DOCS["a.md"].encode()


@pytest.mark.parametrize("generation", ["live", "spare"])
def test_a_sparse_raw_file_is_not_read_for_its_claimed_size(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, generation: str) -> None:
    docs = write_tree(tmp_path / "docs", DOCS)
    root = tmp_path / "root"
    # one build: a live generation (carried from); two: a spare too (moved from first)
    for text in ("beta 1", "beta 2")[:1 if generation == "live" else 2]:
        write_tree(docs, {"b.md": f"# B\n\n{text}\n"})
        build(docs, root, name="n")
    live = root / "local-n"
    spare = root / ".doc-index-tmp" / "local-n" / raw_files.SPARE_NAME
    target = (live if generation == "live" else spare) / "a.md"
    assert target.is_file()
    target.unlink()
    with open(target, "wb") as fh:
        fh.truncate(4 * MAX_RAW_FILE_BYTES)  # no disk used
    real_read = os.read

    def read(fd: int, size: int) -> bytes:
        assert size <= MAX_RAW_FILE_BYTES + 1, f"a read of {size} bytes"
        return real_read(fd, size)

    monkeypatch.setattr(os, "read", read)
    write_tree(docs, {"b.md": "# B\n\nbeta 3\n"})
    build(docs, root, name="n")
    assert (live / "a.md").read_bytes() == DOCS["a.md"].encode()


@pytest.mark.parametrize("swap", ["manifest fifo", "manifest to /dev/zero", "index fifo"])
def test_a_live_manifest_or_index_swapped_for_a_special_file_is_not_read(
        tmp_path: Path, swap: str) -> None:
    """The build reads the live generation's manifest and search index as readers do: a
    FIFO (whose open waits for a writer) or a symlink to a device is an unusable cache,
    rebuilt in full (a manifest with no header names no source: with --replace), never a
    hang or an endless read."""
    docs = write_tree(tmp_path / "docs", DOCS)
    root = tmp_path / "root"
    assert run_cli("build", str(docs), "--root", str(root), "--name", "n").returncode == 0
    target = root / "n" / ("search.idx" if swap.startswith("index") else "manifest.json")
    target.unlink()
    if swap.endswith("fifo"):
        os.mkfifo(target)
    else:
        os.symlink("/dev/zero", target)
    write_tree(docs, {"b.md": "# B\n\nbeta, changed\n"})
    done = run_cli("build", str(docs), "--root", str(root), "--name", "n")  # (no writer)
    if swap.startswith("manifest"):  # no header to read: its source is unknown
        assert done.returncode == 1, done.stderr
        assert b"no readable doc-index manifest" in done.stderr
        done = run_cli("build", str(docs), "--root", str(root), "--name", "n", "--replace")
    assert done.returncode == 0, done.stderr
    assert run_cli("resolve", "n", "beta", "--root", str(root)).returncode == 0
