"""One file -> its sections: the pure function the store maps over a repository."""

from __future__ import annotations

import hashlib
from itertools import islice
from pathlib import PurePosixPath

from .analysis import (
    first_word_counts,
    path_text,
    section_features,
    term_counts,
    terms_of_words,
)
from .chunks import part_blocks
from .formats import format_of, is_doc_path  # noqa: F401 (is_doc_path: re-exported)
from .limits import MAX_FILE_TERMS, MAX_PATH_TERMS, MAX_SECTION_TERMS, MAX_SECTION_WORDS
from .model import Block, ParsedFile, ParsedSection
from .summary import keywords, summarize
from .text import count_lines, normalize_newlines
from .tokens import estimate_tokens
from .versions import MAX_SECTIONS_PER_FILE, PART_TOKENS


class NotIndexable(ValueError):
    """The file is not documentation text (binary, undecodable...); ``reason`` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def normalize_source(data: bytes) -> bytes:
    """Source bytes -> the raw bytes stored in the cache: UTF-8, ``\\n`` line endings,
    no byte-order mark. Raises NotIndexable for binary or undecodable input."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise NotIndexable("UTF-16 (only UTF-8 is indexed)")
    if b"\x00" in data:
        raise NotIndexable("binary (NUL bytes)")
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise NotIndexable(f"not UTF-8 (byte {exc.start})") from None
    if "\r" in text:
        return normalize_newlines(text).encode("utf-8")
    return data


def find_blocks(path: str, text: str, raw: bytes, limit: int | None = None,
                notes: list[str] | None = None) -> list[Block]:
    """The file's blocks; with ``limit``, at least its first ``limit + 1`` (see
    ``cap_blocks``), the last one's end possibly wrong. What a parser's cap left out is
    said in ``notes``. The parser is the path's format's (``indexer.formats``)."""
    return format_of(path).blocks(text, raw, limit, notes)


def cap_blocks(blocks: list[Block], raw: bytes, cap: int,
               fenced: bool = True) -> tuple[list[Block], str]:
    """At most ``cap`` sections found by headings: the text from the first block beyond
    the cap to the end of the file (``raw``) is cut into ``-part-<n>`` chunks near
    ``PART_TOKENS`` tokens at paragraph boundaries (``fenced``: not inside a Markdown code
    fence), as a file without headings is, so every block before it, and every id, stays
    what it would be without the cap, and no text past the cap sits in one section that
    no budget returns (20,000 headings made a last section of 100,000 tokens). Also the
    build's note about it."""
    if len(blocks) <= cap or blocks[cap].kind == "part":  # (parts are chunks already)
        return blocks, ""
    rest = blocks[cap].start
    line = raw.count(b"\n", 0, rest) + 1
    parts = part_blocks(raw, rest, fenced)
    note = (f"more than {cap} sections: the rest, from line {line}, cut into {len(parts)} "
            f"part{'s' if len(parts) != 1 else ''} of about {PART_TOKENS} tokens")
    return [*blocks[: cap - 1], blocks[cap - 1]._replace(end=rest), *parts], note


def index_file(path: str, data: bytes) -> ParsedFile:
    """Parse one documentation file (repo-relative POSIX ``path``, source ``data``) into
    sections, with everything but ids: offsets, lines, version, tokens, summary, keywords
    and search terms."""
    raw = normalize_source(data)
    text = raw.decode("utf-8")
    notes: list[str] = []
    blocks, note = cap_blocks(find_blocks(path, text, raw, MAX_SECTIONS_PER_FILE, notes), raw,
                              MAX_SECTIONS_PER_FILE, fenced=format_of(path).fenced)
    del text  # (the analysis decodes each section from ``raw``)
    notes += [note] if note else []
    sections = analyze_blocks(path, raw, blocks, notes)
    return ParsedFile(path=path, raw=raw, sections=sections, note="; ".join(notes))


def analyze_blocks(path: str, raw: bytes, blocks: list[Block],
                   notes: list[str] | None = None) -> list[ParsedSection]:
    """The sections of a file's blocks (``raw``: its normalized bytes): offsets, lines,
    version, tokens, summary, keywords and search terms. What a cap left out is said in
    ``notes`` (once a cap)."""
    sections: list[ParsedSection] = []
    stack: list[int] = []  # indexes of open ancestors, by depth
    file_words = PurePosixPath(path).as_posix()
    # The path field's terms by ancestor titles: siblings share them (read-only dicts).
    path_terms_of: dict[tuple[str, ...], dict[str, int]] = {}
    seen: set[str] = set()  # the file's distinct terms so far (``_within_file_terms``)
    capped: set[str] = set()  # the caps the notes named
    for block in blocks:
        chunk = raw[block.start : block.end]
        content = chunk.decode("utf-8")
        while stack and sections[stack[-1]].depth >= block.depth:
            stack.pop()
        parent = stack[-1] if stack and block.kind == "heading" else None
        ancestors = [sections[i].title for i in stack]
        words = first_word_counts(content, MAX_SECTION_WORDS)
        if len(words) == MAX_SECTION_WORDS and notes is not None and "words" not in capped:
            capped.add("words")
            notes.append(f"a section over {MAX_SECTION_WORDS} distinct words at line "
                         f"{_line(raw, block.start)}: the others are not indexed")
        packed, lens = _packed_terms(block.title, words, ancestors, file_words, path_terms_of)
        kept = _within_file_terms(packed, seen)
        if len(kept) < len(packed) and notes is not None and "terms" not in capped:
            capped.add("terms")
            notes.append(f"more than {MAX_FILE_TERMS} distinct terms: from line "
                         f"{_line(raw, block.start)} on, only terms of the lines before "
                         "are indexed")
        packed = kept
        sections.append(
            ParsedSection(
                file=path,
                kind=block.kind,
                title=block.title,
                depth=block.depth,
                byte_offset=block.start,
                byte_length=block.end - block.start,
                line_count=count_lines(chunk),
                version="sha256:" + hashlib.sha256(chunk).hexdigest(),
                tokens=estimate_tokens(content),
                summary=summarize(content, block.title, block.kind == "heading") or path,
                keywords=keywords(content, words),
                dedup_hash=hashlib.md5(content[:200].encode("utf-8")).hexdigest()[:6],
                parent_index=parent,
                terms=packed,
                total_words=sum(words.values()),
                lens=lens,
            )
        )
        if block.kind != "part":
            stack.append(len(sections) - 1)
    return sections


def _packed_terms(title: str, words: dict[str, int], ancestors: list[str], file_words: str,
                  path_terms_of: dict[tuple[str, ...], dict[str, int]],
                  ) -> tuple[dict[str, int], tuple[int, int, int]]:
    """A section's terms, each count packed as body | path << 16 | title << 24 (body capped
    at 0xFFFF, the others at 255), with its feature terms; and the lengths of its title,
    path and body fields. ``path_terms_of`` memoizes the path field by ancestor titles."""
    title_terms = term_counts(title)
    path_terms = path_terms_of.get(tuple(ancestors))
    if path_terms is None:
        path_terms = path_terms_of[tuple(ancestors)] = _path_terms(file_words, ancestors)
    body_terms = terms_of_words(words, MAX_SECTION_TERMS)
    body_length = sum(body_terms.values())
    if body_terms and max(body_terms.values()) >= 0xFFFF:
        packed = {term: n if n < 0xFFFF else 0xFFFF for term, n in body_terms.items()}
    else:  # nothing to cap: body_terms is this section's own dict
        packed = body_terms
    for field_terms, shift in ((title_terms, 24), (path_terms, 16)):
        for term, n in field_terms.items():
            packed[term] = packed.get(term, 0) | (min(n, 255) << shift)
    for feature in section_features(file_words, title, ancestors):
        packed[feature] = 1
    return packed, (sum(title_terms.values()), sum(path_terms.values()), body_length)


def _path_terms(file_words: str, ancestors: list[str]) -> dict[str, int]:
    """The path field's terms: the first ``MAX_PATH_TERMS`` of the file path words and the
    ancestor titles (every section below a title holds them: uncapped, a title's terms were
    multiplied by the sections under it)."""
    terms = term_counts(path_text(file_words, ancestors))
    if len(terms) <= MAX_PATH_TERMS:
        return terms
    return dict(islice(terms.items(), MAX_PATH_TERMS))


def _within_file_terms(packed: dict[str, int], seen: set[str]) -> dict[str, int]:
    """A section's terms, but those new to the file once it has ``MAX_FILE_TERMS`` (added
    to ``seen``): a file's distinct terms are what its build and every cold resolve of
    its cache hold one entry each for (10 MB of distinct words made two million)."""
    if len(seen) + len(packed) <= MAX_FILE_TERMS:
        seen.update(packed)
        return packed
    room = MAX_FILE_TERMS - len(seen)
    kept: dict[str, int] = {}
    for term, value in packed.items():
        if term in seen or term.startswith(" "):  # (a feature is no word)
            kept[term] = value
        elif room > 0:
            kept[term] = value
            seen.add(term)
            room -= 1
    return kept


def _line(raw: bytes, offset: int) -> int:
    return raw.count(b"\n", 0, offset) + 1
