"""sources/archives.py: a package archive read as untrusted data (path rules, links, caps)."""

from __future__ import annotations

import gzip
import tarfile
import tracemalloc

import pytest
from package_servers import (
    Member,
    file,
    gzip_bomb,
    npm_tarball,
    sdist,
    tar_archive,
    zip_archive,
)

from doc_index.foundation.errors import ArchiveError, BadSource
from doc_index.sources.archives import (
    ArchiveLimits,
    SkippedMember,
    archive_kind,
    read_archive,
    wanted_for_indexing,
)

SMALL = ArchiveLimits(max_members=20, max_member_bytes=1000, max_total_bytes=1 << 20,
                      max_ratio=50, ratio_floor_bytes=64 << 10, max_header_bytes=4096)


def test_sdist_keeps_what_indexing_needs_under_its_top_folder() -> None:
    data = sdist("demo", "1.0", {
        "README.md": "# Demo\n", "docs/index.rst": "Title\n=====\n",
        "docs/conf.py": "project = 'demo'\n", "docs/_static/logo.png": b"\x89PNG",
        "docs/example.toml": "a = 1\n", "src/demo/__init__.py": '"""Demo."""\n',
        "src/demo/_speedups.c": "int x;\n", "pyproject.toml": "[project]\nname='demo'\n",
        "CHANGES.rst": "Changes\n", "tests/test_demo.py": "def test(): pass\n",
    })
    contents = read_archive(data, "demo-1.0.tar.gz")
    assert list(contents.files) == [
        "CHANGES.rst", "PKG-INFO", "README.md", "docs/conf.py", "docs/example.toml",
        "docs/index.rst", "pyproject.toml", "src/demo/__init__.py", "tests/test_demo.py"]
    assert contents.files["docs/index.rst"] == b"Title\n=====\n"
    assert contents.top_folder == "demo-1.0"
    assert contents.skipped == ()
    assert (contents.members, contents.not_wanted) == (12, 2)


def test_hostile_names_links_and_special_files_are_skipped_and_reported() -> None:
    data = tar_archive([
        file("pkg-1.0/README.md", "ok"),
        file("pkg-1.0/../evil.md", "x"), file("/etc/passwd.md", "x"),
        file("pkg-1.0/docs/../../up.md", "x"), file("pkg-1.0/a\\b.md", "x"),
        file("pkg-1.0//empty.md", "x"),
        Member("pkg-1.0/docs/link.md", kind=tarfile.SYMTYPE, link="/etc/passwd"),
        Member("pkg-1.0/docs/hard.md", kind=tarfile.LNKTYPE, link="pkg-1.0/README.md"),
        Member("pkg-1.0/docs/fifo.md", kind=tarfile.FIFOTYPE),
        Member("pkg-1.0/docs/dev.md", kind=tarfile.CHRTYPE),
    ])
    contents = read_archive(data, "pkg-1.0.tar.gz")
    assert contents.files == {"README.md": b"ok"}
    assert contents.skipped == (
        SkippedMember("pkg-1.0/../evil.md", "file name leaves its directory"),
        SkippedMember("/etc/passwd.md", "absolute file name"),
        SkippedMember("pkg-1.0/docs/../../up.md", "file name leaves its directory"),
        SkippedMember("pkg-1.0/a\\b.md", "backslash in file name"),
        SkippedMember("pkg-1.0//empty.md", "empty or '.' component"),
        SkippedMember("pkg-1.0/docs/link.md", "symbolic link (not followed)"),
        SkippedMember("pkg-1.0/docs/hard.md", "hard link (not followed)"),
        SkippedMember("pkg-1.0/docs/fifo.md", "device or FIFO"),
        SkippedMember("pkg-1.0/docs/dev.md", "device or FIFO"),
    )
    # a hostile name never counts for the top folder: one folder remains, it is removed
    assert contents.top_folder == "pkg-1.0"


def test_npm_package_folder_is_removed_and_a_leading_dot_slash_too() -> None:
    data = npm_tarball({"package.json": '{"name": "x"}', "README.md": "# X\n",
                        "lib/index.js": "module.exports = 1\n", "docs/guide.md": "# G\n"})
    contents = read_archive(data, "x-1.0.0.tgz")
    assert list(contents.files) == ["README.md", "docs/guide.md", "package.json"]
    assert contents.top_folder == "package"
    dotted = tar_archive([file("./package/README.md", "# R\n")])
    assert read_archive(dotted, "x.tgz").files == {"README.md": b"# R\n"}


def test_no_common_top_folder_keeps_paths() -> None:
    data = tar_archive([file("README.md", "r"), file("docs/a.md", "a")])
    contents = read_archive(data, "flat.tar.gz")
    assert (list(contents.files), contents.top_folder) == (["README.md", "docs/a.md"], None)


def test_duplicate_name_last_wins_and_file_folder_clash_is_dropped() -> None:
    data = tar_archive([file("p-1/docs/a.md", "first"), file("p-1/docs/a.md", "second"),
                        file("p-1/docs/b.md", "file"), file("p-1/docs/b.md/c.md", "below")])
    contents = read_archive(data, "p-1.tar.gz")
    assert contents.files == {"docs/a.md": b"second", "docs/b.md/c.md": b"below"}
    assert contents.skipped == (
        SkippedMember("p-1/docs/a.md", "replaced by a later member of the same name"),
        SkippedMember("p-1/docs/b.md", "a file and a folder of the same name"))


def test_member_over_the_size_cap_is_skipped() -> None:
    data = sdist("p", "1", {"docs/big.md": "x" * 1001, "docs/ok.md": "x" * 1000})
    contents = read_archive(data, "p-1.tar.gz", limits=SMALL)
    assert list(contents.files) == ["PKG-INFO", "docs/ok.md"]
    assert contents.skipped == (SkippedMember("p-1/docs/big.md", "over the 1000-byte cap"),)


def test_member_count_cap_refuses_the_archive() -> None:
    data = tar_archive([file(f"p/docs/{i}.md", "x") for i in range(21)])
    with pytest.raises(ArchiveError, match="holds more than 20 members: not read"):
        read_archive(data, "p.tar.gz", limits=SMALL)
    zipped = zip_archive([(f"p/docs/{i}.md", "x", 0) for i in range(21)])
    with pytest.raises(ArchiveError, match="holds more than 20 members: not read"):
        read_archive(zipped, "p.zip", limits=SMALL)


def test_zip_entries_are_counted_before_zipfile_parses_them(monkeypatch) -> None:  # noqa: ANN001
    from doc_index.sources import archives

    def never(*args: object) -> None:
        raise AssertionError("zipfile parsed a central directory over the member cap")

    zipped = zip_archive([(f"p/{i}.md", "", 0) for i in range(21)])
    monkeypatch.setattr(archives.zipfile, "ZipFile", never)
    with pytest.raises(ArchiveError, match="holds more than 20 members: not read"):
        read_archive(zipped, "p.zip", limits=SMALL)


def test_default_member_cap_holds_for_a_huge_member_count() -> None:
    folder = tarfile.TarInfo("p/d")
    folder.type = tarfile.DIRTYPE
    data = gzip.compress(folder.tobuf(tarfile.USTAR_FORMAT) * 50_001 + bytes(1024))
    # the same header 50,001 times compresses past the ratio cap: lift it to see the count
    no_ratio = ArchiveLimits()._replace(max_ratio=10**6)
    with pytest.raises(ArchiveError, match="holds more than 50000 members"):
        read_archive(data, "p.tar.gz", limits=no_ratio)
    with pytest.raises(ArchiveError, match="a decompression bomb"):
        read_archive(data, "p.tar.gz")


def test_gzip_bomb_stops_early_without_inflating_into_memory() -> None:
    bomb = gzip_bomb(256 << 20)  # 256 MiB of zeros, about 250 KB compressed
    assert len(bomb) < 400_000
    tracemalloc.start()
    try:
        with pytest.raises(ArchiveError, match="a decompression bomb"):
            read_archive(bomb, "bomb-1.0.tar.gz")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # the ratio cap stops at 200 x 250 KB = 50 MB streamed; memory stays a few buffers
    assert peak < 8 << 20, peak


def test_ratio_and_total_caps_with_small_limits() -> None:
    bomb = gzip_bomb(4 << 20)
    with pytest.raises(ArchiveError, match=r"expands past \d+ bytes \(caps: 1048576 bytes, "
                                           r"50:1 compression\)"):
        read_archive(bomb, "bomb-1.0.tar.gz", limits=SMALL)


def test_oversized_pax_header_is_refused_before_it_is_read() -> None:
    data = tar_archive([file("p/" + "d" * 250 + "/" + "x" * 5000 + ".md", "x")])
    with pytest.raises(ArchiveError, match="has a .*-byte header record"):
        read_archive(data, "p.tar.gz", limits=SMALL)


def test_zip_links_traversal_and_encrypted_members() -> None:
    data = zip_archive([("pkg-2.0/README.rst", "R", 0o100644),
                        ("pkg-2.0/docs/x.md", "# X", 0),
                        ("pkg-2.0/../../evil.md", "x", 0o100644),
                        ("pkg-2.0/docs/link.md", "/etc/passwd", 0o120777),
                        ("pkg-2.0/docs/fifo.md", "", 0o010644)])
    contents = read_archive(data, "pkg-2.0.zip")
    assert contents.files == {"README.rst": b"R", "docs/x.md": b"# X"}
    assert contents.skipped == (
        SkippedMember("pkg-2.0/../../evil.md", "file name leaves its directory"),
        SkippedMember("pkg-2.0/docs/link.md", "symbolic link (not followed)"),
        SkippedMember("pkg-2.0/docs/fifo.md", "device or FIFO"))
    assert contents.top_folder == "pkg-2.0"


@pytest.mark.parametrize("compression,suffix", [("bz2", ".tar.bz2"), ("xz", ".tar.xz"),
                                                 ("", ".tar")])
def test_other_tar_compressions(compression: str, suffix: str) -> None:
    data = tar_archive([file("q-1/README.md", "hi")], compression)
    assert read_archive(data, "q-1" + suffix).files == {"README.md": b"hi"}


def test_corrupt_and_unknown_archives_are_errors() -> None:
    with pytest.raises(ArchiveError, match=r"q-1.tar.gz is not a readable archive"):
        read_archive(b"not gzip at all", "q-1.tar.gz")
    whole = sdist("q", "1", {"README.md": bytes(range(256)) * 40})
    truncated = whole[: len(whole) // 2]
    with pytest.raises(ArchiveError, match="not a readable archive"):
        read_archive(truncated, "q-1.tar.gz")
    with pytest.raises(BadSource, match="not an archive doc-index reads"):
        read_archive(b"", "q-1.whl")
    with pytest.raises(ArchiveError, match="not a readable archive"):
        read_archive(b"PK\x03\x04 not really a zip", "q.zip")


def test_archive_kind_and_wanted_files() -> None:
    assert [archive_kind(n) for n in ("a.tar.gz", "a.TGZ", "a.zip", "a.tar", "a.whl")] == [
        "gz", "gz", "zip", "", None]
    assert [wanted_for_indexing(p) for p in (
        "README", "readme.txt", "sub/README.txt", "docs/x.png", "docs/snippet.sh",
        "src/a.py", "mkdocs.yml", "lib/a.js", "doc/api/table.csv")] == [
        True, True, False, False, True, True, True, False, True]
