"""The packer prices a document from its parts (``packing.priced``): the same number as
``doc_charge`` (the estimate of the rendered JSON), without rendering the document, and it
reads a section's text and heading path once."""

from __future__ import annotations

import string
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from doc_index.search import packing
from doc_index.search.native_selection import select
from doc_index.search.packing import doc_charge, head_milli, priced
from doc_index.store.native_cache import NativeCache

# Characters whose estimate classes differ (letters, case, digits, rule and other
# punctuation, spaces, newlines, consonants), JSON escapes (quote, backslash, control
# characters) and the non-ASCII classes (accented, Greek, CJK, U+2000-U+2FFF by second
# byte, fullwidth, U+FE0F, emoji).
SPECIAL = ('"\\\n\r\t\b\f\x00\x1f\x7f =-*#_`' + "éßΩЖשאअ中か한\u2014\u2500\u2600\u2192"
           + "\uff21\ufe0f\U0001f600\u0301\u00a0")
TEXT = st.text(alphabet=st.sampled_from(string.printable + SPECIAL), max_size=300)
NAME = st.text(alphabet=st.sampled_from(string.ascii_letters + "-_/.\"\\ é中"), max_size=40)


@st.composite
def documents(draw: st.DrawFn) -> dict[str, Any]:
    first = draw(st.integers(1, 10**6))
    source: dict[str, Any] = {"file": draw(NAME), "title": draw(TEXT), "path": draw(
        st.lists(TEXT, max_size=3)), "lines": [first, first + draw(st.integers(0, 999))]}
    if draw(st.booleans()):
        source["excerpt"] = {"lines": [first, first + 1], "of_tokens": draw(st.integers(0))}
    return packing._document(
        draw(NAME), "sha256:" + draw(st.text("0123456789abcdef", min_size=64, max_size=64)),
        draw(TEXT), draw(st.floats(0.0, 1.0)), draw(st.integers(0, 10**7)),
        draw(st.lists(NAME, max_size=4)), draw(st.integers(0, 10**5)),
        draw(st.integers(0, 10**6)), source)


@settings(max_examples=400, deadline=None)
@given(documents())
def test_a_document_priced_from_its_parts_costs_what_its_json_costs(doc: dict) -> None:
    assert priced(doc, head_milli(doc["id"], doc["version"], doc["content"])) == doc_charge(doc)


@settings(max_examples=200, deadline=None)
@given(TEXT, TEXT, TEXT)
def test_the_seams_hold_at_any_join(a: str, content: str, b: str) -> None:
    # The head's share does not depend on what stands after it.
    doc = packing._document(a, b, content, 0.5, 3, [a], 1, 2, {"file": b, "title": a,
                                                               "path": [a, b], "lines": [1, 2]})
    assert priced(doc, head_milli(a, b, content)) == doc_charge(doc)


DOCS = {
    "index.md": (
        "# Widgets\n\nThe widget guide: every widget option explained below.\n\n"
        "```{toctree}\nsetup\nusage\n```\n\nA widget renders once per frame; the widget "
        "cache keeps the last frame.\n"
    ),
    "setup.md": "# Widget setup\n\nInstall the widget package, then configure a widget.\n",
}


def test_the_packer_never_renders_a_candidate(cache: NativeCache,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    expected = select(cache, "widget", 2000)
    assert expected["documents"]

    def metadata_only(doc: dict) -> int:
        assert doc["content"] == "", "a candidate was rendered to JSON to be priced"
        return doc_charge(doc)

    monkeypatch.setattr(packing, "doc_charge", metadata_only)
    assert select(cache, "widget", 2000) == expected


def test_a_section_is_read_once(cache: NativeCache, monkeypatch: pytest.MonkeyPatch) -> None:
    texts: list[int] = []
    paths: list[int] = []
    section_text, heading_path = cache.section_text, packing.heading_path

    def counted_text(d: int) -> str:
        texts.append(d)
        return section_text(d)

    def counted_path(c: NativeCache, d: int) -> list[str]:
        paths.append(d)
        return heading_path(c, d)

    monkeypatch.setattr(cache, "section_text", counted_text)
    monkeypatch.setattr(packing, "heading_path", counted_path)
    result = select(cache, "widget", 2000)
    ids = [doc["id"] for doc in result["documents"]]
    assert "index-widgets" in ids  # a section holding a toctree, and more: it is placed
    assert sorted(texts) == sorted(set(texts))
    assert sorted(paths) == sorted(set(paths))
