"""The ``doc-index`` CLI's error lines for people: the spec's canonical text, then why.

The ``context`` CLI and MCP print the canonical messages of ``specs/context.resolve.md``
byte for byte (``Budget is invalid``); a person at the ``doc-index`` command also reads
what was wrong and what is accepted: ``Budget is invalid: '1_000' is not a whole number
of tokens from 0 to 10000000 (ASCII digits, e.g. --budget 2000)``. The reasons are worked
out here from the arguments, so the library's errors keep their canonical texts.
"""

from __future__ import annotations

import argparse

from ..foundation.errors import ContextError, describe, spec_message
from ..foundation.printable import printable

_SHOWN_CHARS = 40


def for_people(exc: BaseException, args: argparse.Namespace) -> str:
    """The line after ``error: `` for ``exc``, raised running the command ``args``."""
    if isinstance(exc, ContextError) and exc.message == spec_message(exc.code):
        if exc.code == "invalid_budget" and isinstance(getattr(args, "budget", None), str):
            return f"{exc.message}: {budget_problem(args.budget)}"
        if exc.code == "invalid_query" and isinstance(getattr(args, "query", None), str):
            return f"{exc.message}: {query_problem(args.query)}"
        if exc.code == "cache_missing" and isinstance(getattr(args, "name", None), str):
            return f"{exc.message}: no usable cache named {_shown(args.name)} under the root"
    return describe(exc)


def budget_problem(text: str) -> str:
    """Why the ``--budget`` text was refused, with the accepted range."""
    from ..search.budget import MAX_BUDGET

    accepted = f"a whole number of tokens from 0 to {MAX_BUDGET}"
    example = "(ASCII digits, e.g. --budget 2000)"
    try:
        value = int(text) if text.lstrip("-").isascii() and text.lstrip("-").isdigit() else None
    except ValueError:
        value = None
    if value is None:
        return f"{_shown(text)} is not {accepted} {example}"
    return f"{value} is out of range: give {accepted} {example}"


def query_problem(query: str) -> str:
    """Why the query was refused: not UTF-8, too long, empty, or no searchable term."""
    from ..search.query_limits import MAX_QUERY_BYTES

    try:
        size = len(query.encode("utf-8"))
    except UnicodeEncodeError:
        return "the query is not valid UTF-8"
    if size > MAX_QUERY_BYTES:
        return (f"the query is {size} bytes long, over the {MAX_QUERY_BYTES}-byte limit: "
                "ask a shorter question")
    if not query.strip():
        return "the query is empty: ask a question in the words the docs likely use"
    return ("the query holds no searchable term (only spaces, punctuation or symbols): ask "
            "with the words the docs likely use")


def _shown(text: str) -> str:
    cut = text if len(text) <= _SHOWN_CHARS else text[:_SHOWN_CHARS] + "..."
    return f"'{cut}'" if cut.isprintable() else printable(cut)
