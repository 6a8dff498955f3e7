"""Each rewritten path of the document side gives exactly what its plain definition gives.

Analysis output is cache bytes: a faster path that changed one term, keyword or summary
would change every cache built with it. Each fast path is checked against the plain
definition it replaces, and the whole document side against digests recorded from the
code before the fast paths.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import sys
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from doc_index.indexer import analysis, summary
from doc_index.indexer.analysis import WORD, term_counts, word_counts, word_terms
from doc_index.indexer.document import NotIndexable, index_file, is_doc_path
from doc_index.indexer.ids import IdAssigner, heading_slug
from tests.conftest import SAMPLE_REPOS

# What markup and words are made of, non-ASCII letters, digits and spaces included.
_PIECES = st.sampled_from([
    "a", "Z", "_", "9", "é", "Ω", "ж", "中", "²", "٣", "\u0301", "😀", " ", "\u00a0",
    "\u2003", "\u3000", "\n", "\t", "\x1c", "*", "`", ":", "<", ">", "[", "]", "(", ")",
    "!", "?", "~", ".", "-", "A", "\"", "+", "'", "é_x", "url_for", "`x`_", "`x <a>`_z",
    "](u)", ":ref:`", "<b>",
])
TEXT = st.lists(_PIECES, max_size=60).map("".join)


@given(TEXT)
def test_word_counts_is_findall_counted_in_order(text: str) -> None:
    assert list(word_counts(text).items()) == list(Counter(WORD.findall(text)).items())


def test_no_character_is_both_a_space_and_a_word_character() -> None:
    # word_counts splits at str.split()'s spaces: none may be part of a word.
    both = [c for c in map(chr, range(sys.maxunicode + 1)) if c.isspace() and WORD.match(c)]
    assert both == []


def test_word_counts_on_every_sample_file() -> None:
    for path in sorted(SAMPLE_REPOS.rglob("*")):
        if path.is_file():
            text = path.read_bytes().decode("utf-8", "replace")
            assert list(word_counts(text).items()) == list(Counter(WORD.findall(text)).items())


# The link and mark patterns as they were before they were respelled for speed.
_PLAIN_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)|`([^`<]*?)\s*<[^>]*>`_{1,2}")
_PLAIN_MARKS = re.compile(r"[*_`]{1,3}(?=\S)|(?<=\S)[*_`]{1,3}")


def _clean_inline_plain(text: str) -> str:
    """summary._clean_inline as it was: no guards, the plain patterns."""
    text = summary._ROLE.sub(
        lambda m: m.group(1) + m.group(2).split("<")[0].strip().lstrip("~!"), text)
    text = _PLAIN_LINK.sub(lambda m: (m.group(1) or m.group(2) or ""), text)
    text = summary._HTML.sub("", text)
    text = _PLAIN_MARKS.sub("", text)
    return " ".join(text.split())


_PLAIN_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9`\"'(])")


@given(TEXT)
def test_first_sentence_cut_is_the_plain_split(text: str) -> None:
    end = summary._SENTENCE_END.search(text)
    assert (text if end is None else text[: end.start(1)]) == _PLAIN_SENTENCE.split(text, 1)[0]


@given(TEXT)
def test_fast_inline_cleaning_is_the_plain_one(text: str) -> None:
    assert summary._clean_inline(text) == _clean_inline_plain(text)


@pytest.mark.parametrize("text", [
    ":py:func:`url_for <flask.url_for>` and `docs <https://x>`_ in **bold** <i>x</i>",
    "a [link](http://x) b", "`x <a>`_z", "no markup at all", "snake_case_name", "x:`y`", "a >`_ b",
])
def test_fast_inline_cleaning_examples(text: str) -> None:
    assert summary._clean_inline(text) == _clean_inline_plain(text)


def _document_digest(docs: Path) -> str:
    """sha256 of every section ``index_file`` gives for the doc files under ``docs`` (its
    repr: every field, dict order included) and of the ids the id pass gives them."""
    digest = hashlib.sha256()
    ids = IdAssigner()
    files = sorted((p.relative_to(docs).as_posix(), p) for p in docs.rglob("*") if p.is_file())
    for rel, path in files:
        if not is_doc_path(rel):
            continue
        try:
            parsed = index_file(rel, path.read_bytes())
        except NotIndexable:
            continue
        for section in parsed.sections:  # (origins, added since, is the build's)
            digest.update(repr(section).replace(", origins=()", "").encode())
        digest.update(repr(ids.assign(rel, [(s.kind, heading_slug(s.kind, s.title),
                                             s.dedup_hash) for s in parsed.sections])).encode())
    return digest.hexdigest()


# Recorded with the code before the fast paths (main at c5f873e). A deliberate change of
# the analysis (it bumps ANALYZER_VERSION) records new ones; any other change is a bug.
_DIGESTS = {
    "mdkit-docs": "3825e9cec8fafd0b2cdb49c03b3b68aa41aa3451e6c5433888bfc34941414b62",
    "rstkit-docs": "9554a1a137073991b05e6f5082796cdb41e1c935a98598ed5e16a25aca00b58e",
}


@pytest.mark.parametrize("name", sorted(_DIGESTS))
def test_sample_repos_analyze_to_the_recorded_bytes(name: str, tmp_path: Path) -> None:
    docs = shutil.copytree(SAMPLE_REPOS / name, tmp_path / name)
    assert _document_digest(docs) == _DIGESTS[name]


@pytest.mark.parametrize("ascii_text", [False, True])
def test_word_counts_cuts_at_every_ascii_character_as_word_does(ascii_text: bool) -> None:
    """word_counts keeps its own table of the ASCII characters that end a word; each of
    the 128, between two words (and beside a non-ASCII word, the other path), is cut as
    ``WORD`` cuts it."""
    around = "" if ascii_text else " é"
    for code in range(128):
        text = f"ab{chr(code)}cd{chr(code)}ab{around}"
        assert list(word_counts(text).items()) == list(Counter(WORD.findall(text)).items()), code


def _keywords_plain(text: str) -> list[str]:
    """summary.keywords as it was: every word ranked, the keyword test on each in turn."""
    out: dict[str, None] = {}
    for m in summary._IDENT.finditer(text):
        ident = m.group(1)
        if len(ident) > 2 and ("_" in ident or "." in ident or "(" in ident or not ident.islower()):
            out.setdefault(ident, None)
            if len(out) >= summary.MAX_KEYWORDS // 2:
                break
    ranked = sorted(Counter(WORD.findall(text)).items(), key=lambda item: (-item[1], item[0]))
    for word, _ in ranked:
        if len(out) >= summary.MAX_KEYWORDS:
            break
        if summary._KEYWORD.fullmatch(word) and word.lower() not in summary.STOPWORDS:
            out.setdefault(word.lower(), None)
    return list(out)[:summary.MAX_KEYWORDS]


_KEYWORD_TEXT = st.lists(st.sampled_from([
    "the", "The", "and", "Request", "request", "REQUEST", "url_for", "`url_for`", "``App()``",
    "ab", "x1", "9lives", "café", "data", "Data", "_private", "get", "Depends", " ", "\n",
    ".", "`", "zeta", "alpha", "Alpha",
]), max_size=80).map(" ".join)


@given(_KEYWORD_TEXT)
def test_keywords_are_the_plain_ranking(text: str) -> None:
    assert summary.keywords(text, word_counts(text)) == _keywords_plain(text)



def _word_terms_plain(word: str) -> tuple[str, ...]:
    """analysis.word_terms as it was: every word split as an identifier."""
    lower = word.lower()
    parts = analysis._split_identifier(word)
    out: list[str] = []
    if len(parts) > 1:
        out.append(lower.strip("_"))
    for part in parts:
        p = part.lower()
        if p not in analysis.SEARCH_STOPWORDS:
            out.append(analysis._stem(p))
    if not out and lower not in analysis.SEARCH_STOPWORDS and lower.strip("_"):
        out.append(analysis._stem(lower.strip("_")))
    return tuple(dict.fromkeys(t for t in out if t))


_WORDS = st.text(st.sampled_from("abcXYZeé_1 sT"), min_size=1, max_size=12).filter(
    lambda w: WORD.fullmatch(w) is not None)


@given(_WORDS)
def test_word_terms_is_the_plain_split(word: str) -> None:
    analysis._term_cache.pop(word, None)
    assert analysis.word_terms(word) == _word_terms_plain(word)


def test_word_terms_of_every_sample_word() -> None:
    for path in sorted(SAMPLE_REPOS.rglob("*")):
        if path.is_file():
            for word in WORD.findall(path.read_bytes().decode("utf-8", "replace")):
                analysis._term_cache.pop(word, None)
                assert analysis.word_terms(word) == _word_terms_plain(word), word


# --------------------------------------------------------------------------- term memo bound
# The memo of word terms is bounded in bytes, not only in entries: a long word (a hostile
# section's 1 MB identifier) is analysed the same and never kept.


def test_long_words_are_analysed_the_same_and_never_remembered() -> None:
    long_words = [f"w{i}_" + "x" * 100_000 + "Yz" * 1_000 for i in range(3)]
    counts = term_counts(" ".join(long_words))
    assert len(counts) > 3
    for word in long_words:
        assert word not in analysis._term_cache
        assert word_terms(word) == word_terms(word) and word not in analysis._term_cache
    assert word_terms("Retrying") == (term_counts("Retrying").popitem()[0],)
    assert "Retrying" in analysis._term_cache  # a real word still is
