"""What is a heading in and next to list items: the Markdown parser runs without
markdown-it-py's list rule (see the comment in ``indexer.markdown.block_parser``)."""

from __future__ import annotations

import pytest
from doc_index.indexer.markdown import parse_markdown


def _titles(text: str) -> list[str]:
    return [b.title for b in parse_markdown(text, text.encode()) if b.kind == "heading"]


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
    assert _titles(text) == titles
