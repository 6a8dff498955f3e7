"""Deterministic one-line summaries and keywords (no network, no model)."""

from __future__ import annotations

import re
from collections import Counter

from .analysis import STOPWORDS, WORD

SUMMARY_CHARS = 200
MAX_KEYWORDS = 20
# A summary is looked for in this much text: the inline regexes stay cheap on any input.
_SCAN_CHARS = 4000

_FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
_SKIP_LINE = re.compile(
    r"^\s*(?:\.\. |<|\{\*|///|\|[ -]|\+[-=]|:[\w -]+:|import |export |!\[|\[\^|[-=~^`#*+]{3,}\s*$)"
)
# A role, with the run of name characters before it (group 1) so that a match never starts
# inside a chain like ":a:a:a": a start there fails as the chain's first one did, and trying
# each one made a long chain quadratic. Output is what ":(?:name:)+`...`" alone gives.
_ROLE = re.compile(r"((?<![A-Za-z0-9_+.:-])[A-Za-z0-9_+.-]+|(?<![A-Za-z0-9_+.-]))"
                   r":(?:[A-Za-z0-9_+.-]+:)+`([^`]*)`")
# The two patterns below start with one character of a set in every branch, so that the
# regex engine skips to the candidates in C instead of trying each position. The link is
# "!?\[(...)\]\(...\)|`(...)\s*<...>`_{1,2}" with the "!" branch spelled out; the mark is
# "[*_`]{1,3}(?=\S)|(?<=\S)[*_`]{1,3}" with its first character taken before the branch
# (the lookbehind then reaches over it): the same matches, tried in the same order.
_LINK = re.compile(r"!\[([^\]]*)\]\([^)]*\)|\[([^\]]*)\]\([^)]*\)|`([^`<]*?)\s*<[^>]*>`_{1,2}")
_MARKS = re.compile(r"[*_`](?:[*_`]{0,2}(?=\S)|(?<=\S.)[*_`]{0,2})")
_HTML = re.compile(r"<[^>]+>")
_LIST = re.compile(r"^\s*(?:[-*+]|\d+[.)]|#\.)\s+")
# A sentence ends at a "." "!" or "?" followed by spaces and a capital, digit, quote or
# "(": the cut is where the spaces start (group 1). The stop comes first in the pattern,
# not in a lookbehind, so the engine skips to candidates in C.
_SENTENCE_END = re.compile(r"[.!?](\s+)(?=[A-Z0-9`\"'(])")
_IDENT = re.compile(r"`{1,2}([A-Za-z_][\w.]*(?:\(\))?)`{1,2}")
_KEYWORD = re.compile(r"[A-Za-z][A-Za-z0-9_]{2,}")


def _clean_inline(text: str) -> str:
    # Each substitution runs only where the text holds what every match of it must contain
    # (a role ends in ":`", a link has "](" or ">`_", a tag "<", a mark "*", "_" or "`"):
    # the same output, without scanning a paragraph that cannot match.
    if ":`" in text:
        text = _ROLE.sub(
            lambda m: m.group(1) + m.group(2).split("<")[0].strip().lstrip("~!"), text)
    if "](" in text or ">`_" in text:
        text = _LINK.sub(lambda m: (m.group(1) or m.group(2) or m.group(3) or ""), text)
    if "<" in text:
        text = _HTML.sub("", text)
    if "*" in text or "_" in text or "`" in text:
        text = _MARKS.sub("", text)
    return " ".join(text.split())


def _body_lines(text: str, headed: bool) -> list[str]:
    lines = text[:_SCAN_CHARS].split("\n", 120)[:120]
    if headed:
        # Drop the heading: an optional overline, the title line, an optional underline.
        drop = 1
        if len(lines) > 1 and re.match(r"^[-=~^`#*+:.'\"_]{3,}\s*$", lines[0]):
            drop = 2
        if len(lines) > drop and re.match(r"^[-=~^`#*+:.'\"_]{2,}\s*$", lines[drop]):
            drop += 1
        lines = lines[drop:]
    return lines


def summarize(text: str, title: str, headed: bool) -> str:
    """The first prose sentence of a section (markup, code and directives skipped),
    at most 200 characters; the title when the section has no prose."""
    paragraph: list[str] = []
    in_fence = False
    in_directive = False
    for line in _body_lines(text, headed):
        if _FENCE.match(line):
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        if in_directive:
            if line.strip() and not line[:1].isspace():
                in_directive = False
            else:
                continue
        if not line.strip():
            if paragraph:
                break
            continue
        if line.startswith(".. "):
            in_directive = True
            continue
        if line.startswith("    ") and not paragraph:
            continue
        if _SKIP_LINE.match(line):
            if paragraph:
                break
            continue
        paragraph.append(_LIST.sub("", line))
    sentence = _clean_inline(" ".join(paragraph))
    if not sentence:
        if title:
            return title
        # No prose (a root of labels and directives, say): its first non-blank line.
        sentence = next(
            (_clean_inline(ln[:_SCAN_CHARS]) for ln in text.split("\n", 50) if ln.strip()), ""
        )
    end = _SENTENCE_END.search(sentence)
    if end is not None:
        sentence = sentence[: end.start(1)]
    if len(sentence) > SUMMARY_CHARS:
        cut = sentence[: SUMMARY_CHARS - 1].rsplit(" ", 1)[0]
        sentence = cut.rstrip(",;:") + "…"
    return sentence


_keyword_cache: dict[str, str] = {}


def _keyword_form(word: str) -> str:
    """The keyword a word counts for ("" when it is too short, a stopword or not a word)."""
    form = _keyword_cache.get(word)
    if form is None:
        lower = word.lower()
        form = lower if _KEYWORD.fullmatch(word) and lower not in STOPWORDS else ""
        if len(_keyword_cache) < 500_000:
            _keyword_cache[word] = form
    return form


def keywords(text: str, word_counts: dict[str, int] | None = None) -> list[str]:
    """Up to 20 keywords: code identifiers first (in order of appearance), then the most
    frequent non-stopword words (count descending, then code-point order; lowercased).
    ``word_counts``
    (the text's ``analysis.WORD`` counts) saves a second pass over the text."""
    out: dict[str, None] = {}
    for m in _IDENT.finditer(text):
        ident = m.group(1)
        if len(ident) > 2 and ("_" in ident or "." in ident or "(" in ident or not ident.islower()):
            out.setdefault(ident, None)
            if len(out) >= MAX_KEYWORDS // 2:
                break
    if word_counts is None:
        word_counts = Counter(WORD.findall(text))
    # Count descending, then word ascending: two C-level sorts (the second is stable), of
    # the words alone (a list of str sorts faster than one of tuples).
    ranked = sorted(word_counts)
    ranked.sort(key=word_counts.__getitem__, reverse=True)
    cached = _keyword_cache.get
    for word in ranked:
        if len(out) >= MAX_KEYWORDS:
            break
        key = cached(word)
        if key is None:
            key = _keyword_form(word)
        if key:
            out.setdefault(key, None)
    return list(out)[:MAX_KEYWORDS]
