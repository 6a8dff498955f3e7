"""``doc-index resolve --format text``: an answer for a person at a terminal.

Each selected section comes under a header naming its place, then its text as stored::

    ==> 1. templating.rst, lines 140-192
        Templates > Registering Filters, Tests, and Globals
        score 1.0, 203 tokens, id templating-registering-filters-tests-and-globals

    The Flask app and blueprints provide decorators ...

and a last line says what was selected of what, within which budget. An excerpt names its
own lines and the section's. A Context Engine v0 document has no place: its header names
its id. JSON stays the default output and the spec's bytes (``render.spec_json``).

Section text comes from the documentation, so it is untrusted: a control character (ESC
drives the terminal, CR overwrites a line), a line or paragraph separator and a bidi
control are shown escaped (``\\x1b``); tabs, new lines and every printable character
(spaces of any script too) are kept.
"""

from __future__ import annotations

import re
from typing import Any

from ..foundation.printable import printable
from ..search.results import Answer

# Cc but \t and \n, Zl, Zp, the bidi controls (Cf), lone surrogates.
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u061c\u200e\u200f"
                     "\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def answer_text(answer: Answer) -> str:
    """The whole text: one block per document, best first, then the selection line."""
    blocks = [_document(n, doc) for n, doc in enumerate(answer.documents, 1)]
    return "".join(blocks) + _selection(answer.selection)


def _document(number: int, doc: Any) -> str:
    source = doc.get("source")
    lines = [f"==> {number}. {_place(source) if source else 'id ' + printable(doc['id'])}"]
    if source:
        heading = " > ".join(source["path"]) or source["title"]
        if heading:
            lines.append(f"    {printable(heading)}")
    details = f"score {_score(doc['score'])}, {doc['tokens']} tokens"
    lines.append(f"    {details}, id {printable(doc['id'])}" if source else f"    {details}")
    content = safe_text(doc["content"]).rstrip("\n")
    return "\n".join(lines) + "\n\n" + content + "\n\n"


def _place(source: Any) -> str:
    """``file, lines A-B``; an excerpt: its lines, then the section's and its size."""
    first, last = source["lines"]
    excerpt = source.get("excerpt")
    where = f"{printable(source['file'])}, lines {first}-{last}"
    if not excerpt:
        return where
    start, end = excerpt["lines"]
    return (f"{printable(source['file'])}, lines {start}-{end} (an excerpt of the section at "
            f"lines {first}-{last}, {excerpt['of_tokens']} tokens)")


def _score(score: Any) -> str:
    return f"{float(score):.2f}"  # (the JSON has every digit)


def _selection(selection: Any) -> str:
    count = selection["documents_selected"]
    text = (f"--- {count} section{'' if count == 1 else 's'} selected, "
            f"{selection['tokens_used']} tokens, budget {selection['budget']} "
            f"({selection['documents_considered']} considered")
    excluded = selection["documents_excluded_by_budget"]
    if excluded:
        text += f"; {excluded} more matched but did not fit"
    return text + ")\n"


def safe_text(text: str) -> str:
    """``text`` with every character that could drive a terminal or break a line escaped
    (``\\x1b``, ``\\u2028``); tabs and new lines kept."""
    return _UNSAFE.sub(lambda m: ascii(m.group())[1:-1], text)


__all__ = ["answer_text", "safe_text"]
