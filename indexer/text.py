"""Text helpers shared by the format parsers: normalization, line offsets, front matter."""

from __future__ import annotations

import re
from array import array

_FRONT_MATTER_END = re.compile(r"^(?:---|\.\.\.)[ \t]*$", re.MULTILINE)


def normalize_newlines(text: str) -> str:
    """``\\r\\n`` and lone ``\\r`` become ``\\n`` (raw files are stored this way)."""
    if "\r" not in text:
        return text
    return text.replace("\r\n", "\n").replace("\r", "\n")


class LineIndex:
    """Maps line numbers to byte offsets of a normalized text's UTF-8 bytes."""

    def __init__(self, data: bytes) -> None:
        # An array: 8 bytes a line (a list of ints cost 40, 100 MB on a 10 MB file of
        # short lines).
        starts = array("q", [0])
        append = starts.append
        find = data.find
        pos = find(b"\n")
        while pos != -1:
            append(pos + 1)
            pos = find(b"\n", pos + 1)
        self.starts = starts
        self.size = len(data)

    def offset(self, line: int) -> int:
        """Byte offset of the start of 0-based ``line`` (the end of the data past the last)."""
        if line >= len(self.starts):
            return self.size
        return self.starts[line]


def front_matter_lines(text: str) -> int:
    """Number of lines of a leading YAML front matter block (``---`` ... ``---``), else 0."""
    if not text.startswith("---"):
        return 0
    first_end = text.find("\n")
    if first_end == -1 or text[:first_end].rstrip() != "---":
        return 0
    match = _FRONT_MATTER_END.search(text, first_end + 1)
    if match is None:
        return 0
    return text.count("\n", 0, match.end()) + 1


def count_lines(section: bytes) -> int:
    """Lines of a section's text: newlines, plus one for a last line without one."""
    if not section:
        return 0
    return section.count(b"\n") + (0 if section.endswith(b"\n") else 1)
