"""What one package may cost, where its input enters: the bytes
kept from its archive, the docs its cache holds, a chain of tar headers, its index page,
its members' names. Real ``doc-index`` subprocesses against 127.0.0.1 indexes
(tests/package_servers.py), measured by a launcher (CPU seconds, peak RSS; no wall clock).
"""

from __future__ import annotations

import gzip
import io
import json
import tarfile
from pathlib import Path

import pytest
from cli_support import measured_cli
from conftest import run_cli, write_tree
from package_servers import (
    Member,
    NpmRegistry,
    SimpleIndex,
    bulky_sdist,
    file,
    sdist,
    tar_archive,
)
from test_package_build import pkg_env  # noqa: F401 (a fixture)

MB = 1 << 20


def small_sdist(name: str, version: str) -> bytes:
    return sdist(name, version, {"README.md": f"# {name}\n\nThe {name} zebra docs.\n"})


def test_an_archive_keeping_too_much_is_refused_in_bounds(
        pkg_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    """300 MiB of kept Markdown in a 27 MB sdist (a real one kept 950 MiB from 11.6 MB, built
    with exit 0 in 120-170 s, 1.24 GB and 1 GB written): refused in one line by sync,
    the other pin built, within 1 GiB and 60 s of CPU."""
    project = write_tree(pkg_env / "project", {"requirements.txt": "big==1.0\nsmall==1.0\n"})
    with SimpleIndex() as index:
        index.add("big", "big-1.0.tar.gz", bulky_sdist("big", "1.0", 30, 10_000_000))
        index.add("small", "small-1.0.tar.gz", small_sdist("small", "1.0"))
        monkeypatch.setenv("PIP_INDEX_URL", index.index_url)
        done = measured_cli("sync", str(project))
    out = (done.stdout + done.stderr).decode()
    print(out, f"{done.cpu_seconds:.1f} s CPU, peak {done.peak_mb:.0f} MB")
    assert done.cpu_seconds < 60 and done.peak_mb < 1024, (done.cpu_seconds, done.peak_mb)
    failed = [line for line in out.splitlines() if line.startswith("failed: pypi:big")]
    assert failed == ["failed: pypi:big==1.0: big-1.0.tar.gz keeps more than 256 MiB of "
                      "documentation and source files: not read (the cap is "
                      "DOC_INDEX_ARCHIVE_KEEP_MB, in MiB)"], out
    assert "built      small@1.0" in out
    root = pkg_env / "root"
    assert sorted(p.name for p in root.iterdir() if not p.name.startswith(".")) == ["small@1.0"]


def test_docs_past_the_package_cap_are_left_out_in_one_line(
        pkg_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    pages = {f"docs/page{n}.md": f"# Page {n}\n\n" + f"zebra {n} " * 60_000 for n in range(4)}
    with SimpleIndex() as index:
        index.add("wide", "wide-1.0.tar.gz", sdist("wide", "1.0", {**pages, "docs/conf.py": ""}))
        monkeypatch.setenv("PIP_INDEX_URL", index.index_url)
        monkeypatch.setenv("DOC_INDEX_PACKAGE_DOCS_MB", "1")
        done = run_cli("build", "pypi:wide==1.0")
    err = done.stderr.decode()
    assert done.returncode == 0, err
    size = len(pages["docs/page2.md"])  # 480,010 bytes each: two fit in 1 MiB
    assert (f"  docs: 2 files ({2 * size} bytes) from docs/page2.md on left out: a package's "
            "cache holds at most 1 MiB of docs (DOC_INDEX_PACKAGE_DOCS_MB)\n") in err
    manifest = json.loads((pkg_env / "root" / "wide@1.0" / "manifest.json").read_text())
    assert manifest["doc_files"] == ["docs/page0.md", "docs/page1.md"]


def _pax_chain(count: int) -> bytes:
    """A .tar.gz whose one member follows ``count`` chained pax header records."""
    out = io.BytesIO()
    for _ in range(count):
        out.write(tarfile.TarInfo._create_pax_generic_header(  # type: ignore[attr-defined]
            {"comment": "x"}, tarfile.XHDTYPE, "utf-8"))
    info = tarfile.TarInfo("chain-1.0/README.md")
    data = b"# Chain\n\nzebra\n"
    info.size = len(data)
    out.write(info.tobuf(format=tarfile.USTAR_FORMAT) + data + bytes(-len(data) % 512))
    return gzip.compress(out.getvalue() + bytes(1024), mtime=0)


def test_a_chain_of_pax_headers_is_the_archive_error(
        pkg_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    """~300 chained pax headers ended in ``internal error (RecursionError)``, exit 7."""
    with SimpleIndex() as index:
        index.add("chain", "chain-1.0.tar.gz", _pax_chain(300))
        monkeypatch.setenv("PIP_INDEX_URL", index.index_url)
        done = run_cli("build", "pypi:chain==1.0")
    assert (done.returncode, done.stdout) == (6, b""), done.stderr
    assert done.stderr == (b"error: chain-1.0.tar.gz chains more than 16 header records "
                           b"before one member: not read\n")


def test_member_names_with_control_characters_are_skipped_and_named(
        pkg_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    data = sdist("odd", "1.0", {"README.md": "# Odd\n\nzebra\n", "docs/index.md": "# Index\n"},
                 extra=[file("odd-1.0/docs/new\nline.md", "# N\n"),
                        file("odd-1.0/docs/esc\x1b[2J.md", "# E\n"),
                        file("odd-1.0/docs/bell\x07.md", "# B\n")])
    with SimpleIndex() as index:
        index.add("odd", "odd-1.0.tar.gz", data)
        monkeypatch.setenv("PIP_INDEX_URL", index.index_url)
        done = run_cli("build", "pypi:odd==1.0")
    err = done.stderr.decode()
    assert done.returncode == 0, err
    for shown in ("'odd-1.0/docs/new\\nline.md'", "'odd-1.0/docs/esc\\x1b[2J.md'",
                  "'odd-1.0/docs/bell\\x07.md'"):
        assert f"  skipped {shown}: control character in file name\n" in err, err
    cache = pkg_env / "root" / "odd@1.0"
    names = sorted(p.relative_to(cache).as_posix() for p in cache.rglob("*"))
    assert all(name.isprintable() for name in names), names
    assert "docs/index.md" in names


class _HostileIndex(SimpleIndex):
    """A simple index whose page for ``huge`` is ``page`` (HTML)."""

    page = b""

    def route(self, path: str, accept: str) -> tuple[bytes, str] | None:
        if path.startswith("/simple/huge/"):
            return self.page, "text/html"
        return super().route(path, accept)


def _page(kind: str) -> bytes:
    if kind == "anchors":  # 60 MiB of real-looking anchors: 85-187 s to parse
        line = '<a href="../../files/huge-1.{}.tar.gz#sha256=' + "a" * 64 + '">x</a>\n'
        page = "".join(line.format(i) for i in range(60 * MB // len(line)))
        return page[:page.rindex("\n", 0, 60 * MB) + 1].encode()
    return b"<a " * (5 * MB)  # unterminated tags: html.parser rescans each one (hours)


@pytest.mark.parametrize(("kind", "code", "said"), [
    ("anchors", 6, b"over the 16777216-byte cap"),
    ("unterminated", 1, b"no release 1.0"),
])
def test_a_hostile_index_page_is_bounded(
        pkg_env: Path, monkeypatch: pytest.MonkeyPatch,  # noqa: F811
        kind: str, code: int, said: bytes) -> None:
    with _HostileIndex(json_api=False) as index:
        index.page = _page(kind)
        monkeypatch.setenv("PIP_INDEX_URL", index.index_url)
        done = measured_cli("build", "pypi:huge==1.0")
    print(done.stderr.decode(), f"{done.cpu_seconds:.1f} s CPU, peak {done.peak_mb:.0f} MB")
    assert done.returncode == code and said in done.stderr, done.stderr
    assert done.stderr.count(b"\n") == 1
    assert done.cpu_seconds < 60 and done.peak_mb < 1024


def test_a_packument_of_millions_of_values_is_refused(
        pkg_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    """60 MiB of ``{},``: json.loads made 20 million dicts (1.4 GB) of it."""
    with NpmRegistry() as registry:
        registry.add("left-pad", "1.0.0", tar_archive([Member("package/README.md", b"# L\n")]))
        document = registry.documents["left-pad"]
        document["padding"] = "@PAD@"
        body = json.dumps(document).encode().replace(
            b'"@PAD@"', b"[" + b"{}," * (20 * MB) + b"{}]")
        registry.route = lambda path, accept: (  # type: ignore[method-assign]
            (body, "application/json") if path == "/left-pad" else None)
        monkeypatch.setenv("npm_config_registry", registry.url)
        done = measured_cli("build", "npm:left-pad@1.0.0")
    print(done.stderr.decode(), f"{done.cpu_seconds:.1f} s CPU, peak {done.peak_mb:.0f} MB")
    assert done.returncode == 6, done.stderr
    assert b"the packument holds more than 4000000 JSON values: not read" in done.stderr
    assert done.stderr.count(b"\n") == 1
    assert done.cpu_seconds < 60 and done.peak_mb < 1024
