"""Text analysis shared by the index (build time) and the query (resolve time).

A word is a run of Unicode letters, digits and ``_``. Identifiers are split as well as
kept whole: ``url_for`` gives ``url_for``, ``url``; ``BackgroundTasks`` gives
``backgroundtasks``, ``background``, ``task``. Parts are lowercased, English stopwords
dropped and the rest stemmed with the Snowball English stemmer. Everything here is
deterministic and locale-independent.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

import Stemmer

ANALYZER_VERSION = 1

WORD = re.compile(r"\w+")
_CAMEL = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+|[^\W\d_A-Za-z]+")

STOPWORDS = frozenset(
    ["a", "about", "above", "after", "again", "against", "all", "am", "an", "and", "any", "are", "as", "at", "be", "because", "been", "before", "being", "below", "between", "both", "but", "by", "can", "could", "did", "do", "does", "doing", "down", "during", "each", "few", "for", "from", "further", "had", "has", "have", "having", "he", "her", "here", "hers", "herself", "him", "himself", "his", "how", "i", "if", "in", "into", "is", "it", "its", "itself", "just", "me", "more", "most", "my", "myself", "no", "nor", "not", "of", "off", "on", "once", "only", "or", "other", "our", "ours", "ourselves", "out", "over", "own", "same", "she", "should", "so", "some", "such", "than", "that", "the", "their", "theirs", "them", "themselves", "then", "there", "these", "they", "this", "those", "through", "to", "too", "under", "until", "up", "very", "was", "we", "were", "what", "when", "where", "which", "while", "who", "whom", "why", "will", "with", "would", "you", "your", "yours", "yourself", "yourselves", "also", "get", "got", "let", "may", "might", "must", "shall", "us", "via"]
)

_stemmer = Stemmer.Stemmer("english")
_term_cache: dict[str, tuple[str, ...]] = {}


def _split_identifier(word: str) -> list[str]:
    parts: list[str] = []
    for piece in word.split("_"):
        if piece:
            parts.extend(_CAMEL.findall(piece) or [piece])
    return parts


def word_terms(word: str) -> tuple[str, ...]:
    """The index terms of one word (memoized: a corpus has few distinct words)."""
    cached = _term_cache.get(word)
    if cached is not None:
        return cached
    lower = word.lower()
    parts = _split_identifier(word)
    out: list[str] = []
    if len(parts) > 1:
        out.append(lower.strip("_"))
    for part in parts:
        p = part.lower()
        if p not in STOPWORDS:
            out.append(_stemmer.stemWord(p))
    if not out and lower not in STOPWORDS and lower.strip("_"):
        out.append(_stemmer.stemWord(lower.strip("_")))
    result = tuple(t for t in out if t)
    if len(_term_cache) < 500_000:
        _term_cache[word] = result
    return result


def words(text: str) -> list[str]:
    """The words of a text, as ``why.total_words`` counts them."""
    return WORD.findall(text)


def term_counts(text: str) -> dict[str, int]:
    """Index terms of a text with their frequencies."""
    return terms_of_words(Counter(WORD.findall(text)))


def terms_of_words(word_counts: dict[str, int]) -> dict[str, int]:
    """Index terms with frequencies, from a text's word counts."""
    counts: dict[str, int] = {}
    get = counts.get
    cached = _term_cache.get
    for word, n in word_counts.items():
        terms = cached(word)
        if terms is None:
            terms = word_terms(word)
        for term in terms:
            counts[term] = get(term, 0) + n
    return counts


def query_terms(query: str) -> list[str]:
    """A query's terms in query order, duplicates removed (stopwords dropped)."""
    seen: dict[str, None] = {}
    for word in WORD.findall(query):
        for term in word_terms(word):
            seen.setdefault(term, None)
    return list(seen)


def all_stopword_terms(query: str) -> list[str]:
    """Fallback terms for a query made only of stopwords: the words themselves, stemmed."""
    seen: dict[str, None] = {}
    for word in WORD.findall(query):
        seen.setdefault(_stemmer.stemWord(word.lower()), None)
    return list(seen)


def path_text(path: str, ancestors: Iterable[str]) -> str:
    """The text of a section's path field: its file path words and ancestor titles."""
    stem = path.rsplit(".", 1)[0].replace("/", " ").replace("-", " ")
    return " ".join([stem, *ancestors])
