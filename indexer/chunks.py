"""Files without headings: ``-part-<n>`` chunks cut at paragraph boundaries near 1,000 tokens."""

from __future__ import annotations

import re
from collections.abc import Iterator

from .model import Block
from .tokens import estimate_tokens
from .versions import PART_TOKENS

_FENCE = re.compile(rb"^ {0,3}(`{3,}|~{3,})")


def _closes(marker: bytes, fence: bytes) -> bool:
    return marker[:1] == fence[:1] and len(marker) >= len(fence)


# A paragraph or code block longer than this is cut at its lines too: one chunk of a
# 10 MB paragraph was a section no budget returns. (Real parts hold at most 606 tokens.)
MAX_RUN_BYTES = 1024


def _paragraph_starts(data: bytes, start: int, fenced: bool) -> Iterator[int]:
    """Byte offsets where a paragraph begins: a non-blank line after a blank one,
    never inside a fenced code block (Markdown); a line's start too once
    ``MAX_RUN_BYTES`` have passed since the last offset given; then the end of the data.
    (Yielded as found: a list held an int a paragraph, 240 MB for 10 MB of "a\\n\\n".)"""
    yield start
    fence: bytes | None = None
    prev_blank = False
    pos = last = start
    size = len(data)
    while pos < size:
        nl = data.find(b"\n", pos)
        end = size if nl == -1 else nl + 1
        line = data[pos:end]
        blank = not line.strip()
        if pos != start and (prev_blank and not blank and fence is None
                             or pos - last >= MAX_RUN_BYTES):
            yield pos
            last = pos
        if fenced:
            m = _FENCE.match(line)
            if fence is None and m:
                fence = m.group(1)
            elif fence is not None and m and _closes(m.group(1), fence):
                fence = None
        prev_blank = blank
        pos = end
    yield size


def part_blocks(data: bytes, start: int, fenced: bool) -> list[Block]:
    """Chunks of a headingless file's body (``data[start:]``); none when it is blank."""
    if not data[start:].strip():
        return []
    bounds = _paragraph_starts(data, start, fenced)
    blocks: list[Block] = []
    chunk_start = start
    chunk_tokens = 0
    a = next(bounds)
    for b in bounds:
        para_tokens = estimate_tokens(data[a:b].decode("utf-8", "replace"))
        if chunk_tokens and chunk_tokens + para_tokens > PART_TOKENS:
            blocks.append(Block("part", "", 0, chunk_start, a))
            chunk_start, chunk_tokens = a, 0
        chunk_tokens += para_tokens
        a = b
    blocks.append(Block("part", "", 0, chunk_start, len(data)))
    return blocks
