"""One test per rule of the Section ID algorithm (cache-spec + DESIGN.md)."""

from __future__ import annotations

import hashlib
from pathlib import Path

from conftest import build, manifest, write_tree

from doc_index.indexer.slug import slugify


def sections_of(docs: Path, root: Path, files: dict[str, str | bytes]) -> list[dict]:
    write_tree(docs, files)
    build(docs, root)
    return manifest(root / f"local-{docs.name}")["sections"]


def ids(sections: list[dict]) -> list[str]:
    return [s["id"] for s in sections]


def test_slugify_rules() -> None:
    assert slugify("Getting Started") == "getting-started"
    assert slugify("Über die Konfiguration!") == "über-die-konfiguration"
    assert slugify("C++ & Rust -- fast_path") == "c-rust-fast-path"
    assert slugify("Configuration ✅ checklist") == "configuration-checklist"
    assert slugify("  --  ") == "section"
    assert slugify("") == "section"
    assert slugify("Cafe\u0301") == "café"  # NFC before deciding what is a letter


def test_file_prefix_and_heading_slug(docs: Path, root: Path) -> None:
    secs = sections_of(docs, root, {"docs/Guide.v2.md": "# Install It\n\ntext\n"})
    assert ids(secs) == ["guidev2-install-it"]
    assert secs[0]["path"] == "docs/Guide.v2.md#install-it"
    assert secs[0]["parent"] is None


def test_root_section_only_with_text(docs: Path, root: Path) -> None:
    secs = sections_of(docs, root, {
        "a.md": "Intro text.\n\n# Title\n\nbody\n",
        "b.md": "\n\n   \n# Title\n\nbody\n",
    })
    assert ids(secs) == ["a-root", "a-title", "b-title"]
    assert secs[0]["depth"] == 0 and secs[0]["path"] == "a.md"
    assert secs[1]["parent"] == "a-root"  # top-level headings hang under the root


def test_front_matter_is_not_root_text(docs: Path, root: Path) -> None:
    secs = sections_of(docs, root, {"index.md": "---\ntitle: Home\n---\n# Welcome\n\nhi\n"})
    assert ids(secs) == ["index-welcome"]
    assert secs[0]["byte_offset"] == len(b"---\ntitle: Home\n---\n")


def test_headingless_file_is_cut_into_parts(docs: Path, root: Path) -> None:
    paragraph = " ".join(["word"] * 300)
    text = "\n\n".join(f"Paragraph {i}: {paragraph}" for i in range(12)) + "\n"
    secs = sections_of(docs, root, {"notes.md": text})
    assert ids(secs) == [f"notes-part-{i}" for i in range(1, len(secs) + 1)]
    assert len(secs) > 1
    raw = (root / "local-docs-src" / "notes.md").read_bytes()
    # Parts tile the file and start at paragraph boundaries.
    assert secs[0]["byte_offset"] == 0
    for a, b in zip(secs, secs[1:]):
        assert a["byte_offset"] + a["byte_length"] == b["byte_offset"]
        assert raw[b["byte_offset"] : b["byte_offset"] + 9] == b"Paragraph"
    assert secs[-1]["byte_offset"] + secs[-1]["byte_length"] == len(raw)


def test_small_headingless_file_is_one_part(docs: Path, root: Path) -> None:
    assert ids(sections_of(docs, root, {"a.md": "just text\n"})) == ["a-part-1"]


def test_in_file_collision_gets_content_hash(docs: Path, root: Path) -> None:
    text = "# Example\n\nfirst\n\n# Example\n\nsecond\n"
    secs = sections_of(docs, root, {"api.md": text})
    second = "# Example\n\nsecond\n"
    digest = hashlib.md5(second[:200].encode()).hexdigest()[:6]
    assert ids(secs) == ["api-example", f"api-example-{digest}"]


def test_cross_file_collision_in_path_order(docs: Path, root: Path) -> None:
    secs = sections_of(docs, root, {
        "b/guide.md": "# Install\n\nfrom b\n",
        "a/guide.md": "# Install\n\nfrom a\n",
    })
    digest = hashlib.md5(b"# Install\n\nfrom b\n").hexdigest()[:6]
    assert [(s["file"], s["id"]) for s in secs] == [
        ("a/guide.md", "guide-install"),
        ("b/guide.md", f"guide-install-{digest}"),
    ]


def test_suffix_collision_still_unique(docs: Path, root: Path) -> None:
    secs = sections_of(docs, root, {"a.md": "# Same\n\nx\n# Same\n\nx\n# Same\n\nx\n"})
    digest = hashlib.md5(b"# Same\n\nx\n").hexdigest()[:6]
    assert ids(secs) == ["a-same", f"a-same-{digest}", f"a-same-{digest}-2"]


def test_unicode_and_punctuation_headings(docs: Path, root: Path) -> None:
    secs = sections_of(docs, root, {
        "i18n.md": "# Über die Konfiguration\n\nx\n\n## The `Client.send()` method\n\ny\n"
                   "\n## See [the FAQ](faq.md) { #faq }\n\nz\n\n## 日本語の見出し\n\nw\n",
    })
    assert [s["title"] for s in secs] == [
        "Über die Konfiguration", "The Client.send() method", "See the FAQ", "日本語の見出し",
    ]
    assert ids(secs) == [
        "i18n-über-die-konfiguration", "i18n-the-clientsend-method", "i18n-see-the-faq",
        "i18n-日本語の見出し",
    ]


def test_crlf_input_offsets_are_into_normalized_raw(docs: Path, root: Path) -> None:
    secs = sections_of(docs, root, {"win.md": b"# One\r\n\r\nalpha\r\n\r\n## Two\r\n\r\nbeta\r\n"})
    raw = (root / "local-docs-src" / "win.md").read_bytes()
    assert b"\r" not in raw
    texts = [raw[s["byte_offset"] : s["byte_offset"] + s["byte_length"]] for s in secs]
    assert texts == [b"# One\n\nalpha\n\n", b"## Two\n\nbeta\n"]
    assert [s["line_count"] for s in secs] == [4, 3]
    assert secs[1]["parent"] == "win-one"


def test_rst_titles_depth_and_overline(docs: Path, root: Path) -> None:
    text = (
        ".. _top:\n\n=====\nTitle\n=====\n\nIntro.\n\nUsing :func:`pkg.enqueue`\n"
        "-------------------------\n\nBody.\n\nDeep\n~~~~\n\nMore.\n\nSecond\n------\n\nEnd.\n"
    )
    secs = sections_of(docs, root, {"guide.rst": text})
    assert [(s["id"], s["title"], s["depth"], s["parent"]) for s in secs] == [
        ("guide-root", "", 0, None),
        ("guide-title", "Title", 1, "guide-root"),
        ("guide-using-pkgenqueue", "Using pkg.enqueue", 2, "guide-title"),
        ("guide-deep", "Deep", 3, "guide-using-pkgenqueue"),
        ("guide-second", "Second", 2, "guide-title"),
    ]
    raw = (root / "local-docs-src" / "guide.rst").read_bytes()
    title = secs[1]
    assert raw[title["byte_offset"] :].startswith(b"=====\nTitle\n=====\n")


def test_section_bytes_match_version_and_offsets(docs: Path, root: Path) -> None:
    secs = sections_of(docs, root, {"a.md": "pre\n# A\n\nü text\n## B\nmore\n"})
    raw = (root / "local-docs-src" / "a.md").read_bytes()
    for s in secs:
        chunk = raw[s["byte_offset"] : s["byte_offset"] + s["byte_length"]]
        assert s["version"] == "sha256:" + hashlib.sha256(chunk).hexdigest()
        assert s["tokens"] > 0
