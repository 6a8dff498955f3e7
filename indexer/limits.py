"""The indexer's memory model: what one file can make a parse hold, capped where it enters.

A file controls two kinds of growth: with its size (tokens, nodes, lines, words), and with
a product of two things it controls (a title's terms copied into every section below it;
sections times the terms of each). The first kind is bounded per input byte by parsing in
windows; the second is cut where the input enters, so that no product is left:

- a title keeps at most ``MAX_TITLE_CHARS`` characters (its id, its title terms, and the
  path field of every section below it are made from what is kept), and only the first
  ``MAX_TITLE_SOURCE_CHARS`` characters of a heading's source line are looked at;
- a section's path field (file path words and ancestor titles) keeps its first
  ``MAX_PATH_TERMS`` distinct terms, so title and path terms cost at most
  ``MAX_TITLE_CHARS + MAX_PATH_TERMS`` postings per section, 5,000 sections per file
  (``versions.MAX_SECTIONS_PER_FILE``);
- a section's body counts its first ``MAX_SECTION_WORDS`` distinct words (a megabyte of
  text at a time) and keeps their first ``MAX_SECTION_TERMS`` distinct terms: the
  5,000th section of a file with more, which holds the rest of the file, held a
  million terms (and its cache's search index as many, loaded by every cold resolve);
- a file adds at most ``MAX_FILE_TERMS`` distinct terms: past them, its sections keep
  only terms it already has (10 MB of distinct words in 5,000 sections made two million
  terms, a gigabyte in the build and 60 MB of search index);
- a Markdown file is block-parsed in windows of ``MARKDOWN_WINDOW_BYTES`` (markdown-it-py
  holds about 100 bytes a line, and up to a token a byte, of the text it is given), a
  window growing only while one top-level block does not fit in it, up to
  ``MAX_MARKDOWN_BLOCK_BYTES``: no heading is looked for past a longer block; only the
  headings' tokens are kept;
- a reStructuredText file is parsed without the doctree nodes nothing reads (docutils
  kept about 1 KB of nodes per line of a field list);
- only a file's first ``MAX_PARSE_LINES`` lines are looked at for headings (docutils
  holds about 130 bytes a line, and either parser spends 5-20 us on one): past a cap, the
  rest of the file is part of the last section, and the build's summary says so.

The seven real corpora stay far below every cap (longest title 205 characters, at most
25 path terms per section, 4,920 distinct words and 3,390 terms in one section, files of
at most 9,421 lines), so no cap changes their sections.
"""

import re

MAX_TITLE_CHARS = 256
MAX_TITLE_SOURCE_CHARS = 4096
MAX_PATH_TERMS = 64
MAX_SECTION_WORDS = 32_768
MAX_SECTION_TERMS = 65_536
MAX_FILE_TERMS = 100_000
MAX_PARSE_LINES = 500_000
MARKDOWN_WINDOW_BYTES = 256 * 1024
MAX_MARKDOWN_BLOCK_BYTES = 1024 * 1024


def cut_title(title: str) -> str:
    """A title as kept: at most ``MAX_TITLE_CHARS`` characters, no trailing blank."""
    return title if len(title) <= MAX_TITLE_CHARS else title[:MAX_TITLE_CHARS].rstrip()


_SPACES = re.compile(r"\s+")


def source_cut(source: str) -> str:
    """A heading's source text as looked at: whole up to ``MAX_TITLE_SOURCE_CHARS``, else its
    whitespace runs made one space and the result cut to that many characters."""
    if len(source) <= MAX_TITLE_SOURCE_CHARS:
        return source
    return _SPACES.sub(" ", source)[:MAX_TITLE_SOURCE_CHARS]
