"""What a query may cost: its length (both cache kinds), and what each selected document
echoes of it in ``why``.

Every selected document carries ``why.query_terms``. Echoing all of a 4 KB query's terms
in each made a budget of 2,000 tokens answer 1.4 MB (180 small sections x 8 KB of terms).
On native caches a document names at most ``WHY_MAX_TERMS`` terms of at most
``WHY_MAX_TERM_CHARS`` characters, so its ``why`` stays under about 2.3 KB whatever the
query (ordinary questions never reach either cap: the 50 dev questions analyze to at most
17 terms of at most 17 characters). Context Engine v0 answers must stay the reference's
bytes for every query within ``MAX_QUERY_BYTES``, so there every document echoes every
term, and the bound is on the answer instead: the echoes of one answer hold at most
``MAX_V0_WHY_BYTES`` in all (documents x the terms' JSON), which no real cache comes near
(a 4 KB query in 2,000 documents is 16 MB); past it the query is refused, never cut.
"""

from __future__ import annotations

from ..foundation.errors import QueryError

MAX_QUERY_BYTES = 4096
WHY_MAX_TERMS = 32
WHY_MAX_TERM_CHARS = 64
MAX_V0_WHY_BYTES = 64 * 1024 * 1024


def check_query_length(query: str) -> None:
    """invalid_query when ``query`` is longer than MAX_QUERY_BYTES in UTF-8."""
    if len(query.encode("utf-8", "surrogatepass")) > MAX_QUERY_BYTES:
        raise QueryError(detail=f"query longer than {MAX_QUERY_BYTES} bytes")


def why_terms(terms: list[str]) -> list[str]:
    """The query terms a document's ``why`` names: the first WHY_MAX_TERMS, each cut to
    WHY_MAX_TERM_CHARS characters."""
    return [term[:WHY_MAX_TERM_CHARS] for term in terms[:WHY_MAX_TERMS]]


def check_v0_echo(terms_json_bytes: int, documents: int) -> None:
    """invalid_query when ``documents`` echoes of a v0 query's terms (``terms_json_bytes``
    each, as JSON) would exceed MAX_V0_WHY_BYTES."""
    if terms_json_bytes * documents > MAX_V0_WHY_BYTES:
        raise QueryError(detail=(
            f"the query's terms, repeated in each of {documents} documents, would make an "
            f"answer over {MAX_V0_WHY_BYTES // (1024 * 1024)} MiB: ask with fewer words"))
