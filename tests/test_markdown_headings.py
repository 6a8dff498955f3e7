"""Which lines of a Markdown file are headings, and how much of the file is looked at.

markdown-it-py's block rules decide what is a heading (a fence, an HTML block or a list
item holds none; see ``indexer.markdown.block_parser`` for the list rule left out). It
sees a window of the text at a time (``indexer.markdown._headings``), and the headings
found are those of the whole parse; parse work that a file's size rules out is not done,
and the text where no heading was looked for is cut into parts."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import build, manifest, write_tree
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from doc_index.indexer import markdown
from doc_index.indexer.document import index_file
from doc_index.indexer.versions import MAX_SECTIONS_PER_FILE


def _titles(text: str) -> list[str]:
    return [b.title for b in markdown.parse_markdown(text, text.encode())
            if b.kind == "heading"]


# --- what is a heading --------------------------------------------------------------


def test_code_fences_and_html_blocks_hold_no_headings(docs: Path, root: Path) -> None:
    text = (
        "# Real\n\n```bash\n# a shell comment\n```\n\n~~~\n# tilde fence\n~~~\n\n"
        "<div>\n# inside html\n</div>\n\nSetext\n------\n\nbody\n"
    )
    build(write_tree(docs, {"a.md": text}), root)
    secs = manifest(root / f"local-{docs.name}")["sections"]
    assert [(s["title"], s["depth"]) for s in secs] == [("Real", 1), ("Setext", 2)]


@pytest.mark.parametrize(("text", "titles"), [
    ("- item\n---\n", []),  # an item over a thematic break, not a setext heading
    ("- item\n===\n", []),
    ("- item\n  ===\n", []),  # a setext heading nested in an item is dropped too
    ("1. item\n\n   # Title\n", ["Title"]),  # an ATX heading in an item, indented 0-3
    ("- # Title\n", []),  # ... but not on the marker line
    ("1. item\n\n    # Title\n", []),  # ... nor indented 4 or more (indented code)
    ("- ```\n  # comment\n  ```\n", ["comment"]),  # a fence on the marker line is not seen
    ("- item\n# After\n", ["After"]),
])
def test_headings_around_list_items(text: str, titles: list[str]) -> None:
    """The parser runs without markdown-it-py's list rule: what is a heading in and next
    to list items."""
    assert _titles(text) == titles


# --- windows: the headings of the whole parse, at a bounded cost ---------------------


@pytest.fixture
def seen(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The texts markdown-it-py's block parser is given, during the test."""
    texts: list[str] = []
    block = markdown.block_parser().block
    real = block.parse

    def counting(src: str, *args: object) -> object:
        texts.append(src)
        return real(src, *args)

    monkeypatch.setattr(block, "parse", counting)
    return texts


def test_a_file_smaller_than_a_window_is_parsed_once(seen: list[str]) -> None:
    text = "# Title\n\n" + "## Sub\n\ntext\n\n" * 100
    blocks = markdown.parse_markdown(text, text.encode(), 5000)
    assert len(blocks) == 101
    assert seen == [text]


def test_a_file_with_more_heading_lines_than_kept_is_still_cut() -> None:
    text = "# h\n" * 30
    blocks = markdown.parse_markdown(text, text.encode(), 5)
    assert [b.title for b in blocks[:6]] == ["h"] * 6


def test_flat_text_is_parsed_in_windows(seen: list[str]) -> None:
    """markdown-it-py holds about 450 bytes per byte of flat text: 10 MB of "a\\n\\n"
    given to it whole took 4.5 GB."""
    text = "aaaaaaaa\n\n" * 100_000 + "# End\n"
    blocks = markdown.parse_markdown(text, text.encode())
    assert [(b.kind, b.title) for b in blocks] == [("root", ""), ("heading", "End")]
    assert len(seen) > 3
    assert max(map(len, seen)) <= markdown.MARKDOWN_WINDOW_BYTES + 10  # (to a line end)
    assert sum(map(len, seen)) < 1.01 * len(text)  # a window's last block is parsed again


def test_text_without_a_heading_line_is_not_parsed(seen: list[str]) -> None:
    text = "# Top\n\n" + "a\n\n> quote\n\n" * 100_000
    blocks = markdown.parse_markdown(text, text.encode())
    assert [(b.kind, b.title) for b in blocks] == [("heading", "Top")]
    assert seen == [text[:len(seen[0])]]  # one window: nothing after it could be a heading
    assert not markdown.parse_markdown("a\n\n" * 10, b"a\n\n" * 10)[0].title
    assert len(seen) == 1


def test_only_the_first_lines_are_looked_at(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(markdown, "MAX_PARSE_LINES", 100)
    text = "# A\n\n" + "a\n" * 50 + "\n# B\n\n" + "b\n\n" * 50 + "# C\n"
    notes: list[str] = []
    blocks = markdown.parse_markdown(text, text.encode(), None, notes)
    assert [b.title for b in blocks if b.kind == "heading"] == ["A", "B"]
    assert notes == ["more than 100 lines: no heading looked for from line 100"]
    # the rest, where no heading was looked for, is in parts: still answerable
    stop = len("".join(text.splitlines(keepends=True)[:99]))
    assert [(b.kind, b.start) for b in blocks[2:]] == [("part", stop)]
    assert blocks[1].end == stop and blocks[-1].end == len(text)


def test_a_block_longer_than_a_window_grows_it_up_to_the_cap(
        seen: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(markdown, "MARKDOWN_WINDOW_BYTES", 1024)
    monkeypatch.setattr(markdown, "MAX_MARKDOWN_BLOCK_BYTES", 8192)
    fence = "```\n" + "# not a heading\n" * 300 + "```\n"  # 4.8 KB: one block
    text = "# One\n\n" + fence + "\n# Two\n\n" + "```\n" + "x\n" * 8000 + "```\n# Three\n"
    notes: list[str] = []
    blocks = markdown.parse_markdown(text, text.encode(), None, notes)
    headings = [b.title for b in blocks if b.kind == "heading"]
    assert headings == ["One", "Two"]  # Three: past a block over the cap, in parts
    assert {b.kind for b in blocks[2:]} == {"part"} and blocks[2].start == text.index("```\nx")
    assert blocks[-1].end == len(text)
    line = text[:text.index("```\nx")].count("\n") + 1
    assert notes == [f"a block over 8 KiB at line {line}: no heading looked for from there"]


MD_PIECES = st.sampled_from(list("#>-*+_`~=[](){}<>!|:.\\ \t\n1aZ") + [
    "```", "~~~", "---\n", "===\n", "<div>", "</div>", "<!--", "-->", "<pre>", "</pre>",
    "# ", "## ", "\n\n", "    ", "1. ", "- ", "> ", ">> ", "[x]: /u\n", "<script>",
    "Title\n", "para\nlazy\n", "# H {#id}\n", "  # two\n", "\t# tab\n",
])


@settings(max_examples=400, deadline=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
@given(pieces=st.lists(MD_PIECES, max_size=120), window=st.integers(1, 64))
def test_windows_give_the_blocks_of_the_whole_parse(pieces: list[str], window: int) -> None:
    """With windows of a few bytes (every line a cut), the blocks are the whole parse's."""
    text = "".join(pieces)
    data = text.encode()
    whole = markdown.parse_markdown(text, data)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(markdown, "MARKDOWN_WINDOW_BYTES", window)
        assert markdown.parse_markdown(text, data) == whole
        for limit in (1, 3):
            got = markdown.parse_markdown(text, data, limit)
            assert [b[:4] for b in got[: limit + 1]] == [b[:4] for b in whole[: limit + 1]]


def test_blank_lines_are_no_block_to_grow_a_window_for(seen: list[str]) -> None:
    """A window of blank lines holds no block: the next one starts after it (it grew
    to its cap and no heading after them was looked for)."""
    text = "\n" * 400_000 + "# H\n\ntext\n"
    notes: list[str] = []
    blocks = markdown.parse_markdown(text, text.encode(), None, notes)
    assert [(b.kind, b.title) for b in blocks] == [("heading", "H")] and notes == []
    assert max(map(len, seen)) <= markdown.MARKDOWN_WINDOW_BYTES + 10


def test_a_heading_past_the_line_cap_is_said(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(markdown, "MAX_PARSE_LINES", 100)
    text = "# A\n\n" + "x\n\n" * 100 + "# B\n"
    notes: list[str] = []
    blocks = markdown.parse_markdown(text, text.encode(), None, notes)
    assert [b.title for b in blocks if b.kind == "heading"] == ["A"]
    assert {b.kind for b in blocks[1:]} == {"part"}
    assert notes == ["more than 100 lines: no heading looked for from line 99"]


def test_a_file_of_heading_lines_is_parsed_by_prefixes_only(seen: list[str]) -> None:
    """200,000 lines of ``# h`` (800 KB, past the section cap and three windows):
    markdown-it-py sees one window of them (2,000,000 lines whole cost it about 3 GB)."""
    parsed = index_file("big.md", b"# h\n" * 200_000)
    cap = MAX_SECTIONS_PER_FILE
    assert len(parsed.sections) > cap and parsed.sections[cap].kind == "part"
    assert parsed.note
    assert sum(map(len, seen)) <= 2 * markdown.MARKDOWN_WINDOW_BYTES


def test_prefix_parsing_finds_the_headings_of_the_whole_parse() -> None:
    """Blocks that can cross a prefix's end (fences, HTML blocks, setext headings, block
    quotes, paragraphs) near every cut: the first ``limit + 1`` blocks never change."""
    pieces = [
        "# A\n\ntext\n", "```\n# not a heading\n", "# still code\n```\n", "Setext\n",
        "======\n", "<div>\n# html\n\n", "> # quoted\n> more\n", "para\nlazy\n---\n",
        "## B {#b}\n", "~~~\n", "# x\n", "~~~\n", "# C\n", "text\n\n",
    ]
    text = "".join(pieces * 6)
    data = text.encode()
    whole = markdown.parse_markdown(text, data)
    for limit in range(1, len(whole) - 1):
        got = markdown.parse_markdown(text, data, limit)
        assert [b[:4] for b in got[: limit + 1]] == [b[:4] for b in whole[: limit + 1]]
