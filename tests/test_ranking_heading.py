"""The heading bonus needs two of the query's concepts in the heading.

Many headings are one generic word of their domain ("Requests", "Example"); such a heading
holding one word of a longer question is weak evidence, so it gets no bonus beyond its
BM25F heading weight. A one-word query still gets the bonus.
"""

from __future__ import annotations

import dataclasses

from doc_index.search.ranking import PARAMS, rank
from doc_index.store.native_cache import NativeCache

DOCS = {
    "client.md": "# Requests\n\nThe client sends requests. Build requests with the client.\n",
    "transport.md": (
        "# Transport options\n\nA transport can retry a request that failed, up to three "
        "times, with a delay between tries.\n"
    ),
    "timeouts.md": "# Timeouts\n\nA request fails with a timeout error when the server is slow.\n",
    "retries.md": "# Retrying failed requests\n\nSet retries on the transport.\n",
}
NO_BONUS = dataclasses.replace(PARAMS, title_bonus=0.0)


def scores(cache: NativeCache, query: str, params=PARAMS) -> dict[str, float]:
    return {sid: s for s, sid, _ in rank(cache, query, params)}


def test_one_query_word_in_a_heading_gets_no_bonus(cache: NativeCache) -> None:
    # No heading holds two of the query's concepts: the bonus changes nothing.
    query = "what delay does the transport wait for a slow server"
    assert scores(cache, query) == scores(cache, query, NO_BONUS)


def test_two_query_words_in_a_heading_get_the_bonus(cache: NativeCache) -> None:
    query = "retry a request that failed"
    with_bonus, without = scores(cache, query), scores(cache, query, NO_BONUS)
    assert with_bonus["retries-retrying-failed-requests"] == 1.0
    # Scores are relative to the best, which the bonus lifts.
    assert with_bonus["transport-transport-options"] < without["transport-transport-options"]


def test_a_one_word_query_still_gets_the_bonus(cache: NativeCache) -> None:
    assert scores(cache, "requests") != scores(cache, "requests", NO_BONUS)


def test_one_concept_headings_get_it_when_asked(cache: NativeCache) -> None:
    query = "what delay does the transport wait for a slow server"
    one = dataclasses.replace(PARAMS, title_concepts=1)
    assert scores(cache, query, one) != scores(cache, query, NO_BONUS)
