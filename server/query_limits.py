"""What a query may cost, the same for both cache kinds: its length, and what each
selected document echoes of it in ``why``.

Every selected document carries ``why.query_terms``. Echoing all of a 4 KB query's terms
in each made a budget of 2,000 tokens answer 1.4 MB (180 small sections x 8 KB of terms);
with at most ``WHY_MAX_TERMS`` terms of at most ``WHY_MAX_TERM_CHARS`` characters, a
document's ``why`` stays under about 2.3 KB, whatever the query. Ordinary questions never
reach either cap (the 50 dev questions analyze to at most 17 terms of at most 17
characters), so their output is what it always was.
"""

from __future__ import annotations

from ..errors import ContextError

MAX_QUERY_BYTES = 4096
WHY_MAX_TERMS = 32
WHY_MAX_TERM_CHARS = 64


def check_query_length(query: str) -> None:
    """invalid_query when ``query`` is longer than MAX_QUERY_BYTES in UTF-8."""
    if len(query.encode("utf-8", "surrogatepass")) > MAX_QUERY_BYTES:
        raise ContextError("invalid_query", f"query longer than {MAX_QUERY_BYTES} bytes")


def why_terms(terms: list[str]) -> list[str]:
    """The query terms a document's ``why`` names: the first WHY_MAX_TERMS, each cut to
    WHY_MAX_TERM_CHARS characters."""
    return [term[:WHY_MAX_TERM_CHARS] for term in terms[:WHY_MAX_TERMS]]
