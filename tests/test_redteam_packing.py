"""Red-team regressions (T2 item 1) for excerpts of oversized sections: an excerpt's
``source.excerpt.lines`` are the file's lines (only ``\\n`` ends one, as ``source.lines``
counts them) and finding the best window is linear in the section's blocks."""

from __future__ import annotations

import builtins
from pathlib import Path

import pytest
from conftest import build, write_tree
from doc_index.search import packing
from doc_index.search.native_selection import select
from doc_index.store.native_cache import load_native_cache

# Characters str.splitlines ends a line at, but no file line count does.
SEPARATORS = ["\r", "\f", "\x1c", "\x85", "\u2028", "\u2029"]


@pytest.mark.parametrize("sep", SEPARATORS, ids=[f"U+{ord(s):04X}" for s in SEPARATORS])
def test_excerpt_lines_are_the_files_lines(tmp_path: Path, sep: str) -> None:
    text = ("# Title\n\n" + "".join(f"word{i} filler{sep}" for i in range(400)) + "\n"
            + "".join(f"line {i} retry\n" for i in range(5)) + "\n# Next\n\nother\n")
    docs = write_tree(tmp_path / "docs", {"a.md": text})
    build(docs, tmp_path / "root", full=True)
    cache = load_native_cache(tmp_path / "root" / "local-docs")
    try:
        [doc] = select(cache, "retry", 300)["documents"]
    finally:
        cache.close()
    first, last = doc["source"]["excerpt"]["lines"]
    lo, hi = doc["source"]["lines"]
    assert lo <= first <= last <= hi, doc["source"]
    raw = (tmp_path / "root" / "local-docs" / "a.md").read_text()  # (a lone \r reads as \n)
    assert "".join(raw.split("\n")[first - 1:last]) == doc["content"].replace("\n", "")


def test_the_best_window_sums_each_blocks_hits_a_bounded_number_of_times(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocks = 4000
    docs = write_tree(tmp_path / "docs", {"a.md": "# Title\n\n" + "retry x\n\n" * blocks})
    build(docs, tmp_path / "root", full=True)
    summed = 0

    def counting_sum(values: object, *start: int) -> int:
        nonlocal summed
        if isinstance(values, list):
            summed += len(values)
        return builtins.sum(values, *start)  # type: ignore[call-overload]

    monkeypatch.setattr(packing, "sum", counting_sum, raising=False)
    cache = load_native_cache(tmp_path / "root" / "local-docs")
    try:
        [doc] = select(cache, "retry", 8000)["documents"]
    finally:
        cache.close()
    assert "excerpt" in doc["source"]
    assert summed <= 4 * blocks, summed  # summing every run was blocks x run length


def test_an_excerpt_is_looked_for_in_the_sections_first_512_ki_characters_only(
        tmp_path: Path) -> None:
    """A section of 600 KB whose only query term lies past its first 512 Ki characters
    gets no excerpt (an excerpt holds a query term), so a hostile 9 MB section cannot
    cost seconds of CPU on every answer; one whose term is early gets it as before."""
    filler = "".join(f"plain paragraph {i} of filler text here\n\n" for i in range(15000))
    assert 512 * 1024 < len(filler) < 10 * 1024 * 1024
    docs = write_tree(tmp_path / "docs", {
        "late.md": "# Late\n\n" + filler + "the zebrafish paragraph\n",
        "early.md": "# Early\n\nthe zebrafish paragraph\n\n" + filler})
    build(docs, tmp_path / "root", full=True)
    cache = load_native_cache(tmp_path / "root" / "local-docs")
    try:
        answer = select(cache, "zebrafish", 2000)
    finally:
        cache.close()
    assert [d["source"]["file"] for d in answer["documents"]] == ["early.md"]
    [early] = answer["documents"]
    assert early["source"]["excerpt"]["lines"][0] <= 3 and "zebrafish" in early["content"]
    assert answer["selection"]["documents_excluded_by_budget"] == 1
