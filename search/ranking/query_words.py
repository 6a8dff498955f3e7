"""What a query's own spelling says beyond its terms: whether it asks what changed
between versions (an upgrade, a deprecation, a removal, a version number), the one
question release notes and deprecated API answer. Read from the raw query, since the
terms have lost the dots of ``2.0`` and the case of ``Celery 5``."""

from __future__ import annotations

import re

# A question about what changed between versions: an upgrade, a deprecation, a removal or
# a rename, a version number ("Celery 5", "v1", "2.0", "1 to 2"), or the release notes
# themselves. Not "change" or "migration" alone: "without changing the code", "generate a
# migration" (of a database schema) are how-to questions; nor a number with a unit ("run
# 10 minutes from now", "a 5 second timeout").
_CHANGED = re.compile(
    r"\b(?:[Uu]pgrad\w*|[Dd]eprecat\w*|[Rr]emoved|[Rr]enamed|[Nn]o longer"
    r"|[Bb]reaking changes?|[Cc]hange ?logs?|[Rr]elease notes|[Ww]hat'?s new|[Nn]ew in"
    r"|[Cc]hanged in|[Ss]ince version|(?:v|[Vv]ersion )\d+(?:\.\d+)*"
    r"|\d+\.\d+(?:\.\d+)*(?:\.x)?|\d+\.x|\d{1,2} to \d{1,2}"
    r"|[A-Z][\w-]* \d{1,2}(?! ?(?:minutes?|seconds?|hours?|days?|%)))\b")


def asks_what_changed(query: str) -> bool:
    """The query asks what changed between versions (see ``_CHANGED``)."""
    return _CHANGED.search(query) is not None
