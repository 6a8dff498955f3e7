"""The parse cache (``store.parse_cache``): a second cache of the same docs is built from
the sections parsed for the first, byte for byte what parsing gives; entries are checked
when read (damaged, foreign, planted ones are ignored and the file parsed again) and the
folder stays under its size cap."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest
from conftest import build, cache_files, run_cli, store_leftovers, write_tree
from freezegun import freeze_time

from doc_index.indexer import document
from doc_index.store import parse_cache

FILES = {
    "guide/intro.md": "# Intro\n\nRetry a request after a timeout.\n\n## Backoff\n\nWait.\n",
    "guide/setup.rst": "Setup\n=====\n\nInstall it.\n\nOptions\n-------\n\nSet them.\n",
    "api.md": "Text before.\n\n# API\n\n`client.get()` returns a response.\n",
}


class Parses:
    """The paths ``index_file`` parsed, in the parse workers forked from this process
    (each appends to one file): compares to a list; ``clear`` forgets them."""

    def __init__(self, log: Path) -> None:
        self.log = log
        log.write_bytes(b"")

    def _paths(self) -> list[str]:
        return self.log.read_text().splitlines()

    def clear(self) -> None:
        self.log.write_bytes(b"")

    def __eq__(self, other: object) -> bool:
        return self._paths() == other

    def __iter__(self):  # noqa: ANN204
        return iter(self._paths())

    def __repr__(self) -> str:
        return repr(self._paths())


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Parses:
    """The paths ``index_file`` parses from now on (in the workers this process forks)."""
    seen = Parses(tmp_path / "parses.log")
    real = document.index_file

    def counting(path: str, data: bytes):  # noqa: ANN202
        fd = os.open(seen.log, os.O_WRONLY | os.O_APPEND)
        try:
            os.write(fd, path.encode() + b"\n")
        finally:
            os.close(fd)
        return real(path, data)

    monkeypatch.setattr(document, "index_file", counting)
    return seen


def entries(root: Path) -> dict[str, Path]:
    folder = parse_cache.folder(root)
    return {p.name: p for p in folder.iterdir()} if folder.is_dir() else {}


def entry_of(root: Path, docs: Path, rel: str) -> Path:
    return parse_cache.folder(root) / parse_cache.entry_name(rel, (docs / rel).read_bytes())


def frozen_build(docs: Path, root: Path, name: str) -> dict[str, bytes]:
    with freeze_time("2026-03-01 12:00:00"):
        report = build(docs, root, name=name)
    assert report.written
    return cache_files(root / f"local-{name}")


def test_a_second_name_is_built_from_the_parse_cache_with_the_same_bytes(
        tmp_path: Path, parses: Parses) -> None:
    docs = write_tree(tmp_path / "docs", FILES)
    root = tmp_path / "root"
    frozen_build(docs, root, "one")
    assert sorted(parses) == sorted(FILES) and len(entries(root)) == len(FILES)
    # One pack for the files parsed together, each entry a name (link) of it.
    assert len({p.stat().st_ino for p in entries(root).values()}) == 1
    parses.clear()
    reused = frozen_build(docs, root, "two")
    assert parses == []  # nothing parsed: every file came from the parse cache
    parsed = frozen_build(docs, tmp_path / "fresh", "two")
    assert sorted(parses) == sorted(FILES)
    assert reused == parsed
    assert store_leftovers(root) == []


def test_a_changed_file_or_indexer_is_parsed_again(tmp_path: Path, parses: Parses,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    docs = write_tree(tmp_path / "docs", FILES)
    root = tmp_path / "root"
    build(docs, root, name="one")
    write_tree(docs, {"api.md": FILES["api.md"] + "\nMore.\n"})
    parses.clear()
    build(docs, root, name="two")
    assert parses == ["api.md"]
    monkeypatch.setattr(parse_cache, "_salt", b"another indexer")
    parses.clear()
    build(docs, root, name="three")
    assert sorted(parses) == sorted(FILES)


def entry_blob(path: Path) -> bytes:
    """The entry named ``path``, read from its pack."""
    fd = os.open(path, os.O_RDONLY)
    try:
        blob = parse_cache.read_entry(fd, path.name)
    finally:
        os.close(fd)
    assert blob is not None
    return blob


def own_pack(path: Path, blob: bytes, name: str | None = None) -> None:
    """Make ``path`` a pack of its own holding ``blob`` (as entry ``name``)."""
    path.unlink()
    path.write_bytes(parse_cache.pack([(name or path.name, blob)]))


def _rehashed(blob: bytes, change) -> bytes:  # noqa: ANN001
    """An entry whose body ``change`` rewrote, with a matching hash (a forged entry)."""
    head = len(parse_cache.MAGIC) + 65
    body = json.loads(blob[head:])
    change(body)
    data = json.dumps(body).encode()
    return parse_cache.MAGIC + hashlib.sha256(data).hexdigest().encode() + b"\n" + data


def _move_section(body: dict) -> None:
    body["sections"][0][3] += 1  # its byte range no longer holds its bytes


def _bad_dedup(body: dict) -> None:
    body["sections"][0][10] = 7  # the dedup hash is not a string


def _far_offset(p: Path, other: Path) -> None:
    blob = entry_blob(p)
    data = parse_cache.pack([(p.name, blob)])
    start = data.index(p.name.encode()) + 65
    p.unlink()
    p.write_bytes(data[:start] + b"999999999999" + data[start + 12:])


def _huge_count(p: Path, other: Path) -> None:
    data = parse_cache.pack([(p.name, entry_blob(p))])
    at = len(parse_cache.PACK_MAGIC)
    p.unlink()
    p.write_bytes(data[:at] + b"99999999" + data[at + 8:])  # rows past the end: not read


DAMAGE = {
    "truncated": lambda p, other: own_pack(p, entry_blob(p)[:-20]),
    "flipped byte": lambda p, other: own_pack(p, entry_blob(p).replace(b"Intro", b"Intrx")),
    "moved range": lambda p, other: own_pack(p, _rehashed(entry_blob(p), _move_section)),
    "bad type": lambda p, other: own_pack(p, _rehashed(entry_blob(p), _bad_dedup)),
    "another file's entry": lambda p, other: own_pack(p, entry_blob(other)),
    "a pack without it": lambda p, other: own_pack(p, entry_blob(other), other.name),
    "offset past the end": _far_offset,
    "row count past the end": _huge_count,
    "empty": lambda p, other: (p.unlink(), p.write_bytes(b"")),
    "symlink": lambda p, other: (p.unlink(), os.symlink(other, p)),
    "folder": lambda p, other: (p.unlink(), p.mkdir()),
    "fifo": lambda p, other: (p.unlink(), os.mkfifo(p)),
}


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_a_damaged_or_foreign_entry_is_ignored_and_parsed_again(
        tmp_path: Path, parses: Parses, damage: str) -> None:
    docs = write_tree(tmp_path / "docs", FILES)
    root = tmp_path / "root"
    frozen_build(docs, root, "one")
    DAMAGE[damage](entry_of(root, docs, "guide/intro.md"), entry_of(root, docs, "api.md"))
    parses.clear()
    reused = frozen_build(docs, root, "two")
    assert parses == ["guide/intro.md"]
    assert reused == frozen_build(docs, tmp_path / "fresh", "two")


def test_an_oversized_entry_is_ignored(tmp_path: Path, parses: Parses,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    docs = write_tree(tmp_path / "docs", FILES)
    root = tmp_path / "root"
    build(docs, root, name="one")
    entry = entry_of(root, docs, "guide/intro.md")
    monkeypatch.setattr(parse_cache, "MAX_ENTRY_BYTES", len(entry_blob(entry)) - 1)
    parses.clear()
    build(docs, root, name="two")
    assert parses == ["guide/intro.md"]


def test_a_planted_parse_cache_folder_is_not_used(tmp_path: Path) -> None:
    """The folder is a symlink to elsewhere: builds work, nothing is written through it."""
    docs = write_tree(tmp_path / "docs", FILES)
    root = tmp_path / "root"
    outside = tmp_path / "outside"
    outside.mkdir()
    parse_cache.folder(root).parent.mkdir(parents=True)
    os.symlink(outside, parse_cache.folder(root))
    done = run_cli("build", str(docs), "--root", str(root), "--name", "one")
    assert done.returncode == 0, done.stderr
    assert os.listdir(outside) == []


def test_the_parse_cache_stays_under_its_cap(tmp_path: Path) -> None:
    """With a cap of 1 MiB, builds that write more entries than that leave at most 1 MiB;
    a cap of 0 turns the cache off."""
    pages = {f"p{i:02d}.md": "".join(f"## Part {i} {j}\n\nterm{i}x{j} word{j}y{i} zeta{j}\n\n"
                                     for j in range(400)) for i in range(16)}
    docs = write_tree(tmp_path / "docs", pages)
    root = tmp_path / "root"
    env = {"DOC_INDEX_PARSE_CACHE_MB": "1"}
    for name in ("one", "two"):
        done = run_cli("build", str(docs), "--root", str(root), "--name", name, env=env)
        assert done.returncode == 0, done.stderr
        sizes = [p.stat().st_size for p in entries(root).values()]
        assert 0 < sum(sizes) <= 1024 * 1024
    uncapped = tmp_path / "uncapped"
    assert run_cli("build", str(docs), "--root", str(uncapped)).returncode == 0
    assert sum(p.stat().st_size for p in entries(uncapped).values()) > 1024 * 1024
    assert run_cli("build", str(docs), "--root", str(tmp_path / "off"),
                   env={"DOC_INDEX_PARSE_CACHE_MB": "0"}).returncode == 0
    assert entries(tmp_path / "off") == {}


def test_a_hit_reads_a_few_rows_of_its_pack_not_its_row_table(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Each hit read and scanned its whole pack's row table: hits were quadratic in a
    pack's entries (25,000 tiny files: a second-name build slower with the cache than
    without). A hit now reads the rows from its name's slot on."""
    blobs = [(hashlib.sha256(b"%d" % i).hexdigest(), b"entry %d" % i) for i in range(5000)]
    path = tmp_path / "pack"
    path.write_bytes(parse_cache.pack(blobs))
    read: list[int] = []
    real_pread = os.pread

    def pread(fd: int, size: int, offset: int) -> bytes:
        read.append(size)
        return real_pread(fd, size, offset)

    monkeypatch.setattr(os, "pread", pread)
    fd = os.open(path, os.O_RDONLY)
    try:
        for name, blob in blobs:
            assert parse_cache.read_entry(fd, name) == blob
        assert parse_cache.read_entry(fd, "f" * 64) is None
    finally:
        os.close(fd)
    assert sum(read) < 5000 * 2000  # a row is 91 bytes: the table alone was 455 KB a hit


def test_two_builds_in_one_process_keep_their_own_parse_cache(tmp_path: Path) -> None:
    """Opening a second build's parse cache closed the first one's (a module-level current
    cache): two threads building at once lost entries."""
    from doc_index.store.commit import new_staging_dir

    caches = []
    for n in range(2):
        (tmp_path / f"root{n}").mkdir()
        staging = str(new_staging_dir(tmp_path / f"root{n}", "k"))
        caches.append((staging, parse_cache.for_build(staging)))
    parsed = document.index_file("a.md", b"# A\n\ntext\n")
    for staging, cache in caches:
        assert parse_cache.for_build(staging) is cache and cache.fd >= 0
        cache.put("a.md", b"# A\n\ntext\n", parsed)
    for staging, _ in caches:
        parse_cache.release(staging)
    for n in range(2):
        assert len(entries(tmp_path / f"root{n}")) == 1


def test_the_key_names_the_python_and_every_file_of_the_parser_libraries(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The key held the parser libraries' ``__init__`` files only, and not the Python
    whose ``\\w`` and line breaks the parse depends on."""
    import sys

    lib = write_tree(tmp_path / "lib", {"fakeparser/__init__.py": "", "fakeparser/rules.py": "a"})
    monkeypatch.syspath_prepend(str(lib))
    monkeypatch.setattr(parse_cache, "_LIBRARIES", ("fakeparser",))
    salts = []
    for change in (lambda: None, lambda: (lib / "fakeparser" / "rules.py").write_text("ab"),
                   lambda: monkeypatch.setattr(sys, "version", sys.version + " (another)")):
        change()
        monkeypatch.setattr(parse_cache, "_salt", None)
        salts.append(parse_cache.indexer_salt())
    assert len(set(salts)) == 3


# --------------------------------------------------------------------------- forged entries
# Entries well hashed but nested too deeply, packs whose row count claims gigabytes, and
# entries another user wrote are not taken: the file is parsed.


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
