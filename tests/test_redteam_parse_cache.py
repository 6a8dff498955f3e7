"""Red-team regressions for the parse cache (``store.parse_cache``): forged entries that
are well hashed but nested too deeply, and packs whose row count claims gigabytes."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest
from conftest import write_tree
from doc_index.indexer import document
from doc_index.store import parse_cache
from test_parse_cache import FILES, entry_blob, entry_of, frozen_build, own_pack, parses

__all__ = ["parses"]  # the fixture, used by name


def test_an_entry_nested_too_deeply_is_ignored_and_the_file_parsed(
        tmp_path: Path, parses: list[str]) -> None:
    docs = write_tree(tmp_path / "docs", FILES)
    root = tmp_path / "root"
    frozen_build(docs, root, "one")
    body = b"[" * 100_000 + b"]" * 100_000
    forged = parse_cache.MAGIC + hashlib.sha256(body).hexdigest().encode() + b"\n" + body
    own_pack(entry_of(root, docs, "guide/intro.md"), forged)
    parses.clear()
    reused = frozen_build(docs, root, "two")
    assert parses == ["guide/intro.md"]  # parsed, not skipped as "too deeply nested"
    assert reused == frozen_build(docs, tmp_path / "fresh", "two")


def test_a_sparse_pack_claiming_a_huge_row_table_is_not_read(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    name = "a" * 64
    pack = tmp_path / name
    with open(pack, "wb") as fh:
        fh.write(parse_cache.PACK_MAGIC + b"99999999\n")
        fh.truncate(10 * 1024**3)  # sparse: its size covers the rows it claims
    asked: list[int] = []
    real_pread = os.pread

    def pread(fd: int, size: int, offset: int) -> bytes:
        asked.append(size)
        assert size <= parse_cache.MAX_ENTRY_BYTES, f"a read of {size} bytes"
        return real_pread(fd, size, offset)

    monkeypatch.setattr(os, "pread", pread)
    fd = os.open(pack, os.O_RDONLY)
    try:
        assert parse_cache.read_entry(fd, name) is None
    finally:
        os.close(fd)
    assert asked  # the head was read


@pytest.mark.needs_root
def test_an_entry_another_user_wrote_is_not_taken(tmp_path: Path, parses: list[str]) -> None:
    """Whoever can write the folder can compute an entry's name and hash; an entry with
    the right bytes but lies elsewhere (tokens 0: selected whatever the budget) is taken
    only from the root's owner or the user building."""
    docs = write_tree(tmp_path / "docs", FILES)
    root = tmp_path / "root"
    frozen_build(docs, root, "one")
    entry = entry_of(root, docs, "guide/intro.md")
    data = (docs / "guide/intro.md").read_bytes()
    honest = parse_cache.decode(entry_blob(entry), entry.name, "guide/intro.md",
                                document.normalize_source(data))
    assert honest is not None
    lied = honest._replace(sections=[s._replace(tokens=0) for s in honest.sections])
    forged = parse_cache.encode(entry.name, lied)
    assert forged is not None
    own_pack(entry, forged)
    os.chown(entry, 12345, 12345)
    parses.clear()
    reused = frozen_build(docs, root, "two")
    assert parses == ["guide/intro.md"]
    assert reused == frozen_build(docs, tmp_path / "fresh", "two")
