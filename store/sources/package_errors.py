"""The one error of package sources (indexes, archives, metadata, lockfiles).

Its message is one line with every URL's credentials removed (``redact``): an index URL
from the user's configuration may carry a token, and the message may quote it.
"""

from __future__ import annotations

from ...foundation.errors import DocIndexError
from ...foundation.redact import redact


class PackageError(DocIndexError):
    """A package source failed: one line for people (credentials removed, blanks folded)
    and a code of the one table (``io_error`` unless told: exit 6; ``usage`` for a name,
    version or configuration the user must fix: exit 1)."""

    def __init__(self, message: str, code: str = "io_error") -> None:
        super().__init__(" ".join(redact(message).split()), code)


__all__ = ["PackageError"]
