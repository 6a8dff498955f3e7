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

The seven real corpora stay far below every cap (longest title 205 characters, at most
25 path terms per section, 3,390 terms in one section), so no cap changes their sections.
"""

import re

MAX_TITLE_CHARS = 256
MAX_TITLE_SOURCE_CHARS = 4096
MAX_PATH_TERMS = 64


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
