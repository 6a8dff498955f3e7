"""The indexer's memory model (``indexer/limits.py``): what a file can make a parse hold
grows with its size, never with a product of two things it controls.

Each hostile shape below is parsed at a small size, its peak memory measured with
tracemalloc and held to a bound per input byte (generous: a few times what it takes now,
far below what it took before).
"""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import manifest, run_cli, write_tree

from doc_index.indexer import limits
from doc_index.indexer.document import index_file
from doc_index.indexer.model import ParsedFile
from doc_index.indexer.versions import PART_TOKENS


def peak_of(parse: Callable[[], ParsedFile]) -> tuple[ParsedFile, int]:
    """What ``parse`` returns, and the most memory it held at once (bytes, tracemalloc)."""
    gc.collect()
    tracemalloc.start()
    try:
        parsed = parse()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return parsed, peak


def title_over_sections(words: int, sections: int) -> bytes:
    """One heading of ``words`` distinct words over ``sections`` subsections."""
    head = "# " + " ".join(f"w{i}" for i in range(words)) + "\n\n"
    return (head + "".join(f"## s{i}\n\nx\n\n" for i in range(sections))).encode()


def test_a_long_title_is_not_multiplied_by_the_sections_under_it() -> None:
    """Every section's path field held all its ancestors' title terms, and a title was
    not capped: 2,000 words over 200 sections (15 KB) held 4 KB per input byte and gave
    a million postings; each ancestor title now adds at most its capped terms."""
    data = title_over_sections(2000, 200)
    parsed, peak = peak_of(lambda: index_file("t.md", data))
    top = parsed.sections[0]
    assert len(top.title) <= limits.MAX_TITLE_CHARS and top.title.startswith("w0 w1 w2 ")
    postings = sum(len(s.terms) for s in parsed.sections)
    assert postings <= len(parsed.sections) * (limits.MAX_TITLE_CHARS + limits.MAX_PATH_TERMS)
    assert peak < 1000 * len(data), peak / len(data)  # 4,000 bytes a byte before, 330 now


@pytest.mark.parametrize("source", [
    "# " + "word " * 50_000 + "\n\nbody\n",
    "# " + "*a* " * 50_000 + "\n\nbody\n",  # markup: tokens per character for the inliner
    "Title " + "word " * 1700 + "\n" + "=" * 8600 + "\n\nbody\n",  # (docutils: <10,000)
])
def test_a_title_is_cut_where_it_enters(source: str) -> None:
    path = "t.rst" if "\n=" in source else "t.md"
    parsed, peak = peak_of(lambda: index_file(path, source.encode()))
    [section] = parsed.sections
    assert 0 < len(section.title) <= limits.MAX_TITLE_CHARS
    assert peak < 200 * len(source) + (4 << 20), peak  # (docutils: 3 MB set up)


def distinct_words(size: int) -> str:
    """``size`` bytes of words that are all different: a parse holds each one's terms."""
    return "".join(f"q{i:07d}z " for i in range(size // 10)) + "\n"


@pytest.mark.parametrize("small_files", [2, 6], ids=["one child", "worker pool"])
def test_a_file_past_the_worker_limit_is_skipped_and_the_build_goes_on(
        tmp_path: Path, small_files: int) -> None:
    """The last wall: a parse worker that would pass its address-space limit gets a
    MemoryError, which ends that file with a skip line naming the limit, never the build;
    the worker parses the next files as before (a few files: one forked child; more: the
    pool)."""
    files = {f"p{i}.md": "# Page\n\nretry after a timeout " + "word " * 60_000 + "\n"
             for i in range(small_files)}
    files["big.md"] = "# Big\n\n" + distinct_words(2_000_000)  # 110 MiB to parse
    src = write_tree(tmp_path / "src", files)
    root = tmp_path / "root"
    done = run_cli("build", str(src), "--root", str(root), "--name", "n",
                   env={"DOC_INDEX_PARSE_WORKER_MB": "32"})
    assert done.returncode == 0, done.stderr
    assert "skipped big.md: parsing it needed more than 32 MiB" in done.stderr.decode()
    assert manifest(root / "n")["doc_files"] == sorted(set(files) - {"big.md"})
    if small_files == 2:  # within the default limit, it is parsed
        done = run_cli("build", str(src), "--root", str(root), "--name", "m")
        assert done.returncode == 0, done.stderr
        assert "big.md" in manifest(root / "m")["doc_files"]


# --- flat and deep input ------------------------------------------------------------

SHAPES = {
    # file, text, bound on the peak in bytes per input byte (measured at 150 KB: now,
    # before). 10 MB of "a\n\n" was one parse of 4.5 GB; the heading at its end makes the
    # parser read it all, a window (16 KB here) at a time.
    "flat markdown": ("t.md", "a\n\n" * 30_000 + "# End\n", 40),  # 7, 434
    "deep block quotes": ("t.md", "".join(">" * (i % 19) + " x\n# h\n" for i in range(2500)),
                          60),
    "field list": ("t.rst", "T\n=\n\n" + "".join(f":f{i}: v\n" for i in range(9000)),
                   150),  # 63, 418
    "enumerated list": ("t.rst", "T\n=\n\n" + "#. item\n" * 10_000, 150),  # 48, 201
    "definition list": ("t.rst", "T\n=\n\n" + "".join(f"term{i}\n   def\n" for i in range(6000)),
                        150),  # 43, 291
    "transitions": ("t.rst", "T\n=\n\n" + "para\n\n----\n\n" * 7000, 150),  # 49, 250
    "deep nesting": ("t.rst", "T\n=\n\n" + "".join(" " * (i % 160) + "x\n\n" for i in range(5000)),
                     50),  # 12, 127
}


@pytest.mark.parametrize("shape", list(SHAPES))
def test_flat_and_deep_input_costs_a_bounded_multiple_of_its_size(
        shape: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from doc_index.indexer import markdown

    monkeypatch.setattr(markdown, "MARKDOWN_WINDOW_BYTES", 16 * 1024, raising=False)
    path, text, bound = SHAPES[shape]
    data = text.encode()
    parsed, peak = peak_of(lambda: index_file(path, data))
    assert parsed.sections
    assert peak < bound * len(data), f"{peak / len(data):.0f} bytes per input byte"


# --- what a capped file leaves for every resolve -----------------------------

def test_a_section_keeps_its_first_words_only() -> None:
    """A section of 45,000 distinct words (the 5,000th section of a capped file held the
    rest of the file, until that rest was cut into parts, and all its words' terms: 10 MB
    gave two million, 1.1 GiB to build, 6.9 s a cold resolve). It keeps its first
    ``MAX_SECTION_WORDS`` words, and says so."""
    data = ("# top\n\n" + " ".join(f"w{i}" for i in range(45_000)) + "\n").encode()
    parsed = index_file("h.md", data)
    assert len(parsed.sections) == 1
    assert len(parsed.sections[0].terms) <= (limits.MAX_SECTION_TERMS + limits.MAX_TITLE_CHARS
                                             + limits.MAX_PATH_TERMS)  # body, title, path
    assert "over 32768 distinct words at line 1" in parsed.note


def test_the_text_past_the_section_cap_is_cut_into_parts() -> None:
    """One distinct heading a line: past the 5,000th section the rest of the file is in
    parts near 1,000 tokens, none a section no budget returns."""
    data = "".join(f"# h{i}\n" for i in range(45_000)).encode()
    parsed = index_file("h.md", data)
    assert [s.kind for s in parsed.sections[5000:]] == ["part"] * (len(parsed.sections) - 5000)
    assert len(parsed.sections) > 5000
    assert max(s.tokens for s in parsed.sections) <= 2 * PART_TOKENS
    assert "more than 5000 sections: the rest, from line 5001, cut into" in parsed.note


def test_a_file_adds_a_bounded_number_of_terms_to_its_cache(tmp_path: Path) -> None:
    """1.1 MB of distinct words in 5,000 sections: 220,000 terms in the search index,
    which every cold resolve loads whole; a file adds at most ``MAX_FILE_TERMS``."""
    from doc_index.store.search_index import SearchIndex, read_search_index

    src = write_tree(tmp_path / "src", {"w.md": "".join(
        f"# s{s}\n\n" + " ".join(f"q{s * 22 + k:07d}z" for k in range(22)) + "\n\n"
        for s in range(5000))})
    root = tmp_path / "root"
    done = run_cli("build", str(src), "--root", str(root), "--name", "w")
    assert done.returncode == 0, done.stderr
    assert f"more than {limits.MAX_FILE_TERMS} distinct terms" in done.stderr.decode()
    index = SearchIndex.from_bytes(read_search_index(root / "w" / "search.idx"))
    assert limits.MAX_FILE_TERMS <= len(index.terms) <= limits.MAX_FILE_TERMS + 100
