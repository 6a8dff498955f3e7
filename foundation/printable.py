"""THE escaping of text that doc-index prints for people (names, paths, reasons).

A file or directory name from a source can hold any character but ``/`` and NUL: an ESC
sequence would drive the user's terminal, a CR would overwrite the line it is on, a NEL
or U+2028 would start a new one. Every printed line that holds such a name goes through
:func:`printable` (per field, or the whole line for an error message that embeds one).
"""

from __future__ import annotations

import os


def printable(text: str | os.PathLike[str]) -> str:
    """``text`` unchanged if every character is printable, else its ``ascii()`` form:
    quoted, one line, every control (C0, C1, DEL), separator and surrogate-escaped
    (non-UTF-8) byte escaped (``'a\\x1bb\\r'``). Printable text passes through unchanged,
    so escaping twice is the same as once."""
    text = os.fspath(text)
    return text if text.isprintable() else ascii(text)
