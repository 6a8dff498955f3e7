"""Files without headings: ``-part-<n>`` chunks cut at paragraph boundaries near 1,000 tokens."""

from __future__ import annotations

import re

from .model import Block
from .tokens import estimate_tokens
from .versions import PART_TOKENS

_FENCE = re.compile(rb"^ {0,3}(`{3,}|~{3,})")


def _closes(marker: bytes, fence: bytes) -> bool:
    return marker[:1] == fence[:1] and len(marker) >= len(fence)


def _paragraph_starts(data: bytes, start: int, fenced: bool) -> list[int]:
    """Byte offsets where a paragraph begins: a non-blank line after a blank one,
    never inside a fenced code block (Markdown)."""
    starts = [start]
    fence: bytes | None = None
    prev_blank = False
    pos = start
    size = len(data)
    while pos < size:
        nl = data.find(b"\n", pos)
        end = size if nl == -1 else nl + 1
        line = data[pos:end]
        blank = not line.strip()
        if prev_blank and not blank and fence is None and pos != start:
            starts.append(pos)
        if fenced:
            m = _FENCE.match(line)
            if fence is None and m:
                fence = m.group(1)
            elif fence is not None and m and _closes(m.group(1), fence):
                fence = None
        prev_blank = blank
        pos = end
    return starts


def part_blocks(data: bytes, start: int, fenced: bool) -> list[Block]:
    """Chunks of a headingless file's body (``data[start:]``); none when it is blank."""
    if not data[start:].strip():
        return []
    bounds = _paragraph_starts(data, start, fenced) + [len(data)]
    blocks: list[Block] = []
    chunk_start = start
    chunk_tokens = 0
    for a, b in zip(bounds, bounds[1:]):
        para_tokens = estimate_tokens(data[a:b].decode("utf-8", "replace"))
        if chunk_tokens and chunk_tokens + para_tokens > PART_TOKENS:
            blocks.append(Block("part", "", 0, chunk_start, a))
            chunk_start, chunk_tokens = a, 0
        chunk_tokens += para_tokens
    blocks.append(Block("part", "", 0, chunk_start, len(data)))
    return blocks
