"""Text analysis shared by the index (build time) and the query (resolve time).

A word is a run of Unicode letters, digits and ``_``. Identifiers are split as well as
kept whole: ``url_for`` gives ``url_for``, ``url``; ``BackgroundTasks`` gives
``backgroundtasks``, ``background``, ``task``. Parts are lowercased, stopwords dropped,
common irregular verb forms mapped to their base form (``sent`` -> ``send``) and the rest
stemmed with the Snowball English stemmer. Everything here is deterministic and
locale-independent, and the same for documents and queries.

Stopwords are English function words plus the fragments contractions leave
(``doesn't`` -> ``doesn``, ``t``) and conversational filler that questions are made of
("I want a way to ..."): words that say nothing about which section answers.

A query is analyzed into *concepts* (:class:`Concept`), one per query word: the word's own
term, the parts of an identifier, and alternatives from a small table of generic software
abbreviations and synonyms (``config`` ~ ``configuration``, ``turn off`` ~ ``disable``).
Scoring takes the best of a concept's forms, so spelling one idea several ways never
counts it several times.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from itertools import islice
from typing import NamedTuple

import Stemmer

from .versions import ANALYZER_VERSION  # noqa: F401 (bump it when this module changes)

WORD = re.compile(r"\w+")
_CAMEL = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+|[^\W\d_A-Za-z]+")

# English function words (the list summaries use for keywords too).
STOPWORDS = frozenset([
    "a", "about", "above", "after", "again", "against", "all", "am", "an", "and", "any", "are",
    "as", "at", "be", "because", "been", "before", "being", "below", "between", "both", "but",
    "by", "can", "could", "did", "do", "does", "doing", "down", "during", "each", "few", "for",
    "from", "further", "had", "has", "have", "having", "he", "her", "here", "hers", "herself",
    "him", "himself", "his", "how", "i", "if", "in", "into", "is", "it", "its", "itself",
    "just", "me", "more", "most", "my", "myself", "no", "nor", "not", "of", "off", "on",
    "once", "only", "or", "other", "our", "ours", "ourselves", "out", "over", "own", "same",
    "she", "should", "so", "some", "such", "than", "that", "the", "their", "theirs", "them",
    "themselves", "then", "there", "these", "they", "this", "those", "through", "to", "too",
    "under", "until", "up", "very", "was", "we", "were", "what", "when", "where", "which",
    "while", "who", "whom", "why", "will", "with", "would", "you", "your", "yours", "yourself",
    "yourselves", "also", "get", "got", "let", "may", "might", "must", "shall", "us", "via"
])

# What search ignores besides: contraction fragments and conversational filler.
SEARCH_STOPWORDS = STOPWORDS | frozenset(
    ["s", "t", "d", "m", "ll", "re", "ve", "don", "doesn", "didn", "isn", "aren", "wasn",
     "weren", "hasn", "haven", "hadn", "won", "wouldn", "shouldn", "couldn", "cannot",
     "mustn", "needn", "shan", "ain", "want", "wants", "wanted", "wanting", "possible",
     "possibly", "something", "somehow", "somewhere", "anything", "anyway", "thing",
     "things", "way", "ways", "please", "like", "able", "actually", "really", "basically",
     "simply", "exactly", "even", "ever", "always", "still", "already", "instead",
     "every", "several", "whether", "etc", "e", "g", "ie", "eg", "else", "sure", "okay",
     "ok", "yes", "anymore", "somebody", "someone", "anyone", "everyone", "whatever",
     "whenever", "wherever", "however", "although", "though", "unless", "within",
     "without", "onto", "upon", "toward", "towards", "across", "around", "among"]
)

# Irregular English verb forms the stemmer leaves apart from their base.
_IRREGULAR_PAIRS = """
sent:send ran:run began:begin begun:begin built:build brought:bring bought:buy
caught:catch chose:choose chosen:choose came:come drew:draw drawn:draw drove:drive
fed:feed felt:feel found:find forgot:forget forgotten:forget froze:freeze frozen:freeze
gave:give given:give went:go gone:go grew:grow grown:grow held:hold hid:hide hidden:hide
kept:keep knew:know known:know led:lead lost:lose made:make meant:mean overrode:override
overridden:override paid:pay rewrote:rewrite rewritten:rewrite rode:ride rose:rise
risen:rise said:say saw:see seen:see sold:sell shown:show shook:shake spoke:speak
spoken:speak spent:spend stood:stand stole:steal stolen:steal struck:strike taught:teach
thought:think threw:throw thrown:throw told:tell took:take taken:take
understood:understand woke:wake wore:wear worn:wear wrote:write written:write
broke:break broken:break fell:fall fallen:fall hung:hang sought:seek slept:sleep
spun:spin swept:sweep torn:tear tore:tear
"""
IRREGULAR = dict(pair.split(":") for pair in _IRREGULAR_PAIRS.split())

# Generic software abbreviations and near-synonyms, both ways: a query word also looks
# for the other spelling of the same idea (with a lower weight, see native_selection.Params).
_ALIKE = [
    ("application", "app"), ("configuration", "config"), ("environment", "env"),
    ("database", "db"), ("authentication", "auth"), ("documentation", "docs"),
    ("parameter", "param"), ("argument", "arg"), ("directory", "dir"),
    ("directory", "folder"), ("repository", "repo"), ("information", "info"),
    ("development", "dev"), ("specification", "spec"), ("message", "msg"),
    ("response", "resp"), ("error", "err"), ("exception", "exc"), ("variable", "var"),
    ("function", "func"), ("initialize", "init"), ("asynchronous", "async"),
    ("synchronous", "sync"), ("javascript", "js"), ("websocket", "ws"),
    ("maximum", "max"), ("minimum", "min"), ("temporary", "temp"), ("temporary", "tmp"),
    ("administrator", "admin"), ("statistics", "stats"), ("utilities", "utils"),
    ("library", "lib"), ("package", "pkg"), ("command", "cmd"), ("attribute", "attr"),
    ("identifier", "id"), ("dictionary", "dict"), ("integer", "int"),
    ("boolean", "bool"), ("disable", "deactivate"), ("enable", "activate"),
    ("delete", "remove"), ("display", "show"), ("large", "big"), ("larger", "bigger"),
    ("start", "begin"), ("login", "signin"), ("logout", "signout"),
]
# Two-word verbs and their one-word form: "turn off" also looks for "disable".
PHRASES = {
    ("turn", "off"): "disable", ("switch", "off"): "disable", ("turn", "on"): "enable",
    ("switch", "on"): "enable", ("shut", "down"): "shutdown", ("start", "up"): "startup",
    ("set", "up"): "setup", ("clean", "up"): "cleanup", ("log", "in"): "login",
    ("log", "out"): "logout", ("sign", "in"): "login", ("sign", "out"): "logout",
    ("look", "up"): "lookup",
}

_stemmer = Stemmer.Stemmer("english")
_term_cache: dict[str, tuple[str, ...]] = {}
# Words remembered: at most this many, of at most this many characters. A word's entry
# holds the word and its terms, so a cap on entries alone bounded nothing: a long-lived
# server that excerpts hostile sections of 1 MB words kept every one (and a parse worker
# every such word of a build). Real words are short; a long one is rare and parsed again.
_CACHED_WORDS = 500_000
_CACHED_WORD_CHARS = 64


def _stem(lower: str) -> str:
    return _stemmer.stemWord(IRREGULAR.get(lower, lower))


def _split_identifier(word: str) -> list[str]:
    parts: list[str] = []
    for piece in word.split("_"):
        if piece:
            parts.extend(_CAMEL.findall(piece) or [piece])
    return parts


def word_terms(word: str) -> tuple[str, ...]:
    """The index terms of one word (memoized: a corpus has few distinct words).

    A plain word gives its stem; an identifier its whole lowercased form first, then the
    stems of its parts."""
    cached = _term_cache.get(word)
    if cached is not None:
        return cached
    lower = word.lower()
    if word.isascii() and word.isalpha() and word[1:].islower():
        # Most words: ASCII letters, lower case but perhaps the first: one part, the word.
        if lower in SEARCH_STOPWORDS:
            result: tuple[str, ...] = ()
        else:
            stem = _stem(lower)
            result = (stem,) if stem else ()
        if len(_term_cache) < _CACHED_WORDS and len(word) <= _CACHED_WORD_CHARS:
            _term_cache[word] = result
        return result
    parts = _split_identifier(word)
    out: list[str] = []
    if len(parts) > 1:
        out.append(lower.strip("_"))
    for part in parts:
        p = part.lower()
        if p not in SEARCH_STOPWORDS:
            out.append(_stem(p))
    if not out and lower not in SEARCH_STOPWORDS and lower.strip("_"):
        out.append(_stem(lower.strip("_")))
    result = tuple(dict.fromkeys(t for t in out if t))
    if len(_term_cache) < _CACHED_WORDS and len(word) <= _CACHED_WORD_CHARS:
        _term_cache[word] = result
    return result


# UTF-8 bytes -> the same with every ASCII byte that is not a word character (``\w``: in
# ASCII, letters, digits and "_") made a space; bytes of non-ASCII characters kept.
_ASCII_NON_WORD_TO_SPACE = bytes(
    b if b >= 0x80 or chr(b).isalnum() or b == 0x5F else 0x20 for b in range(256))


def word_counts(text: str) -> dict[str, int]:
    """``Counter(WORD.findall(text))``, in the same order, without a regex over the text.

    ``bytes.translate`` and ``str.split`` cut the text at ASCII non-word characters (and
    at Unicode spaces, never word characters either); a piece holding a non-ASCII
    character is cut further by ``WORD`` itself. Counting pieces before cutting them keeps
    each word's first occurrence, so the order is that of ``findall``."""
    pieces = Counter(
        text.encode("utf-8", "surrogatepass").translate(_ASCII_NON_WORD_TO_SPACE)
        .decode("utf-8", "surrogatepass").split())
    if text.isascii():
        return pieces
    counts: dict[str, int] = {}
    get = counts.get
    for piece, n in pieces.items():
        if piece.isascii():
            counts[piece] = get(piece, 0) + n
        else:
            for word in WORD.findall(piece):
                counts[word] = get(word, 0) + n
    return counts


def first_word_counts(text: str, limit: int, chunk: int = 1 << 20) -> dict[str, int]:
    """``word_counts(text)`` of its first ``limit`` distinct words (the others are not
    counted), a ``chunk`` of characters at a time (cut at a line break or a space): the
    counts of a 10 MB text of distinct words held a million entries at once."""
    if len(text) <= chunk:
        counts = word_counts(text)
        return counts if len(counts) <= limit else dict(islice(counts.items(), limit))
    counts = {}
    get = counts.get
    at = 0
    while at < len(text):
        end = at + chunk
        if end < len(text):
            cut = max(text.rfind("\n", at, end), text.rfind(" ", at, end))
            if cut > at:
                end = cut
            else:  # no break in it: to the next one (or the end)
                found = [i for i in (text.find("\n", end), text.find(" ", end)) if i >= 0]
                end = min(found) if found else len(text)
        for word, n in word_counts(text[at:end]).items():
            old = get(word)
            if old is not None:
                counts[word] = old + n
            elif len(counts) < limit:
                counts[word] = n
        at = end
    return counts


def term_counts(text: str) -> dict[str, int]:
    """Index terms of a text with their frequencies."""
    return terms_of_words(word_counts(text))


def terms_of_words(word_counts: dict[str, int], limit: int | None = None) -> dict[str, int]:
    """Index terms with frequencies, from a text's word counts; with ``limit``, of the
    first ``limit`` distinct terms only."""
    counts: dict[str, int] = {}
    get = counts.get
    cached = _term_cache.get
    for word, n in word_counts.items():
        terms = cached(word)
        if terms is None:
            terms = word_terms(word)
        for term in terms:
            old = get(term)
            if old is not None:
                counts[term] = old + n
            elif limit is None or len(counts) < limit:
                counts[term] = n
    return counts


def _alike_table() -> dict[str, tuple[str, ...]]:
    table: dict[str, list[str]] = {}
    for a, b in _ALIKE:
        sa, sb = _stem(a), _stem(b)
        table.setdefault(sa, []).append(sb)
        table.setdefault(sb, []).append(sa)
    return {k: tuple(dict.fromkeys(v)) for k, v in table.items()}


ALIKE = _alike_table()


class Concept(NamedTuple):
    """One query word: its own term, identifier parts, and alternative spellings.
    (A NamedTuple, not a dataclass: tests/test_import_rules.py.)"""

    main: str
    parts: tuple[str, ...] = ()
    alts: tuple[str, ...] = ()
    related: tuple[str, ...] = ()  # stand-ins for a word the cache lacks (server.semantic)

    @property
    def terms(self) -> tuple[str, ...]:
        return (self.main, *self.parts, *self.alts, *self.related)


def query_concepts(query: str) -> list[Concept]:
    """A query's concepts in query order; a word already covered by an earlier concept
    (same main term) is not repeated."""
    tokens = WORD.findall(query)
    lowers = [t.lower() for t in tokens]
    concepts: list[Concept] = []
    seen: set[str] = set()
    for i, word in enumerate(tokens):
        terms = word_terms(word)
        phrase = PHRASES.get((lowers[i], lowers[i + 1])) if i + 1 < len(lowers) else None
        if not terms and phrase is None:
            continue
        if terms:
            main, parts = terms[0], terms[1:]
        else:
            main, parts = _stem(phrase or ""), ()
            phrase = None
        if main in seen:
            continue
        seen.add(main)
        alts: list[str] = []
        if phrase is not None:
            alts.append(_stem(phrase))
        alts.extend(ALIKE.get(main, ()))
        alts = [a for a in dict.fromkeys(alts) if a != main]
        concepts.append(Concept(main, parts, tuple(alts)))
    return concepts


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


# Section features are stored as pseudo-terms: a space never occurs in a term.
FEATURE_CHANGELOG = " changelog"
# A release-notes file: its name says so (``CHANGES.rst``, ``changelog_14.rst``,
# ``release-notes.md``), or it is named by a number or version alone (``6135.rst``,
# ``2.0.md``) inside a folder whose name says so. A folder's name alone does not make a
# file release notes: ``changelog/`` folders also hold upgrade guides (``migration_20``,
# ``whatsnew_20``), prose that answers "how do I move to 2.0" questions. "What's new"
# pages are such prose too, so they are not release notes.
_CHANGELOG_NAME = r"(?:change[-_ ]?log|changes|history|release[-_ ]?notes|releases?|news)"
_VERSION_SUFFIX = r"(?:[-_ ]?v?\d+(?:[._]\d+)*)?"
_CHANGELOG_FILE = re.compile(_CHANGELOG_NAME + _VERSION_SUFFIX, re.IGNORECASE)
_NUMBER_NAME = re.compile(r"v?\d+(?:[._-]\d+)*")
_VERSION_TITLE = re.compile(r"\s*(?:v|version\s+|release\s+)?\d+\.\d+(?:\.\d+)*\b", re.IGNORECASE)


def _release_notes_file(path: str) -> bool:
    *folders, name = path.split("/")
    stem = name.rsplit(".", 1)[0]
    if _CHANGELOG_FILE.fullmatch(stem):
        return True
    return bool(_NUMBER_NAME.fullmatch(stem)) and any(
        _CHANGELOG_FILE.fullmatch(f) for f in folders)


def section_features(path: str, title: str, ancestors: Iterable[str]) -> list[str]:
    """Feature pseudo-terms of a section: ``FEATURE_CHANGELOG`` for release notes (a
    release-notes file, see ``_release_notes_file``, or under a version-number heading)."""
    if _release_notes_file(path) or any(_VERSION_TITLE.match(t) for t in (title, *ancestors)):
        return [FEATURE_CHANGELOG]
    return []
