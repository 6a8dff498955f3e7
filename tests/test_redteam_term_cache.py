"""Red-team regression (T2 item 2): the memo of word terms is bounded in bytes, not only
in entries: a long word (a hostile section's 1 MB identifier) is analysed, never kept."""

from __future__ import annotations

from doc_index.indexer import analysis
from doc_index.indexer.analysis import term_counts, word_terms


def test_long_words_are_analysed_the_same_and_never_remembered() -> None:
    long_words = [f"w{i}_" + "x" * 100_000 + "Yz" * 1_000 for i in range(3)]
    counts = term_counts(" ".join(long_words))
    assert len(counts) > 3
    for word in long_words:
        assert word not in analysis._term_cache
        assert word_terms(word) == word_terms(word) and word not in analysis._term_cache
    assert word_terms("Retrying") == (term_counts("Retrying").popitem()[0],)
    assert "Retrying" in analysis._term_cache  # a real word still is
