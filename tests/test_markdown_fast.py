"""Markdown parse work that a file's size rules out is not done."""

from __future__ import annotations

import pytest
from conftest import CountingPattern
from doc_index.indexer import markdown


def test_a_file_of_few_lines_is_not_scanned_for_the_section_cap(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Finding the heading at the cap needs as many lines: a shorter file is parsed whole
    without scanning its lines for heading-like ones first."""
    counting = CountingPattern(markdown._HEADING_LIKE)
    monkeypatch.setattr(markdown, "_HEADING_LIKE", counting)
    text = "# Title\n\n" + "## Sub\n\ntext\n\n" * 100
    blocks = markdown.parse_markdown(text, text.encode(), 5000)
    assert len(blocks) == 101
    assert counting.calls == 0


def test_a_file_with_more_heading_lines_than_kept_is_still_cut() -> None:
    text = "# h\n" * 30
    blocks = markdown.parse_markdown(text, text.encode(), 5)
    assert [b.title for b in blocks[:6]] == ["h"] * 6
