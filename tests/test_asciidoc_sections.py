"""AsciiDoc (``.adoc``, ``.asciidoc``): sections from its titles, as Asciidoctor reads
them, with the ids, provenance, caps and incremental builds of the other formats."""

from __future__ import annotations

import json
from importlib import import_module
from pathlib import Path

import pytest

from doc_index.indexer.document import index_file
from doc_index.indexer.versions import MAX_SECTIONS_PER_FILE
from tests.conftest import run_cli, write_tree

GUIDE = """= Widget Guide
Jane Doe
:toc:

Widgets do things.

[[install]]
== Installing widgets

Run the installer.
== not a title: paragraph text

----
== inside a listing
----

=== On *Linux* ===

Use the `apt` package, see <<install,the steps>>.

[discrete]
=== A discrete heading

Still Linux.

## Markdown-style title

////
== inside a comment block
////
"""


def titles(path: str, text: str) -> list[tuple[str, int]]:
    return [(s.title, s.depth) for s in index_file(path, text.encode()).sections
            if s.kind == "heading"]


def test_titles_as_asciidoctor_reads_them() -> None:
    assert titles("guide.adoc", GUIDE) == [
        ("Widget Guide", 1), ("Installing widgets", 2), ("On Linux", 3),
        ("Markdown-style title", 2)]
    assert titles("x.ASCIIDOC", "Intro text.\n\n== One\n\n#== no\n\n=== Two\n") == [
        ("One", 2), ("Two", 3)]


def test_root_text_and_headingless_files() -> None:
    parsed = index_file("a.adoc", b"Preamble.\n\n== Title\n\nBody.\n")
    assert [(s.kind, s.byte_offset) for s in parsed.sections] == [("root", 0), ("heading", 11)]
    parsed = index_file("b.adoc", b"Just text.\n\n----\n== in a block, never closed\n")
    assert [s.kind for s in parsed.sections] == ["part"]


def cli(root: Path, *args: str) -> str:
    done = run_cli("--root", str(root), *args)
    assert done.returncode == 0, done.stderr
    return done.stdout.decode() + done.stderr.decode()


def test_build_outline_read_and_rebuild_of_an_asciidoc_folder(tmp_path: Path) -> None:
    src = write_tree(tmp_path / "widgets", {"guide.adoc": GUIDE, "more.asciidoc": "= More\n"})
    root = tmp_path / "root"
    assert "files: 2 added" in cli(root, "build", str(src), "--name", "local-widgets")
    outline = json.loads(cli(root, "outline", "local-widgets"))
    assert [(f["file"], [(s["id"], s["depth"]) for s in f["sections"]])
            for f in outline["files"]] == [
        ("guide.adoc", [("guide-widget-guide", 1), ("guide-installing-widgets", 2),
                        ("guide-on-linux", 3), ("guide-markdown-style-title", 2)]),
        ("more.asciidoc", [("more-more", 1)])]
    read = json.loads(cli(root, "read", "local-widgets", "guide-installing-widgets"))
    document = read["documents"][0]
    assert document["content"].startswith("[[install]]\n== Installing widgets\n\nRun")
    assert "== inside a listing" in document["content"]
    assert document["source"]["path"] == ["Widget Guide", "Installing widgets"]
    assert document["source"]["lines"] == [7, 16]
    (src / "more.asciidoc").write_text("= More\n\n== Added\n")
    report = cli(root, "build", str(src), "--name", "local-widgets")
    assert "files: 0 added, 1 changed, 0 removed, 1 unchanged" in report
    outline = json.loads(cli(root, "outline", "local-widgets"))
    assert [s["id"] for s in outline["files"][1]["sections"]] == ["more-more", "more-added"]


def test_caps_sections_lines_and_titles(monkeypatch: pytest.MonkeyPatch) -> None:
    many = "".join(f"== T{n}\n\nx\n\n" for n in range(MAX_SECTIONS_PER_FILE + 10))
    parsed = index_file("many.adoc", many.encode())
    kinds = [s.kind for s in parsed.sections]
    assert kinds.count("heading") == MAX_SECTIONS_PER_FILE and kinds[-1] == "part"
    assert f"more than {MAX_SECTIONS_PER_FILE} sections" in parsed.note
    asciidoc = import_module("doc_index.indexer.formats.asciidoc")
    monkeypatch.setattr(asciidoc, "MAX_PARSE_LINES", 4)
    parsed = index_file("long.adoc", b"== A\n\ntext\n\n== B\n\nmore\n")
    assert [s.title for s in parsed.sections if s.kind == "heading"] == ["A"]
    assert "more than 4 lines: no heading looked for from line 5" in parsed.note
    assert parsed.sections[-1].kind == "part"
    monkeypatch.undo()
    long_title = "== " + "*a " * 100_000 + "\n"
    (section,) = index_file("t.adoc", long_title.encode()).sections
    assert len(section.title) == 256 and section.title.startswith("*a *a")  # (no pair)
