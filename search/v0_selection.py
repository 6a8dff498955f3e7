"""Context Engine v0 selection: term-frequency scores in f32, greedy budget, exact output bytes.

Everything here mirrors the reference (``specs/context-engine-v0.md`` "Selection"): the
Unicode White_Space split, f32 arithmetic through ``struct`` round-trips, the shortest
round-trip f32 text of the score, ``ceil(utf8_bytes / 4)`` tokens.
"""

from __future__ import annotations

import json
import re
import struct
from collections import Counter
from collections.abc import Sequence
from decimal import ROUND_HALF_UP, Decimal, localcontext
from typing import Any

from ..foundation.errors import QueryError
from ..store.v0_cache import V0Document
from .query_limits import check_query_length, check_v0_echo

# Unicode White_Space, exactly. str.split() would also split on U+001C..U+001F.
WHITE_SPACE = (
    "\t\n\x0b\x0c\r \x85\xa0\u1680"
    "\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)
_WORD = re.compile("[^" + re.escape(WHITE_SPACE) + "]+")
_F32 = struct.Struct("<f")


class F32(float):
    """A float holding an exact f32 value; ``jsonout`` prints it the reference's way."""


def split_white_space(text: str) -> list[str]:
    """Split on runs of Unicode White_Space, dropping empty pieces (Rust ``split_whitespace``)."""
    return _WORD.findall(text)


def to_f32(value: float) -> float:
    """Round a float to the nearest f32 (round half to even) and return it as a float."""
    return _F32.unpack(_F32.pack(value))[0]


def format_f32(value: float) -> str:
    """The shortest decimal that round-trips to the f32 ``value``, in the reference's layout.

    Fixed notation when the decimal exponent of the first digit is in [-6, 12] (``0.5``,
    ``1.0``, ``0.000001``), else ``d.ddde-N`` (``5e-7``, ``3.3333333e-7``).
    """
    if value == 0.0:
        return "0.0"
    sign = "-" if value < 0 else ""
    exact = Decimal(abs(value))  # exact: every float is a finite binary fraction
    for precision in range(9):
        # The nearest decimal of precision + 1 digits, a tie rounded up, as the reference
        # (Rust's shortest float formatting: 257/256 is 1.0039063); Python's own
        # formatting rounds a tie to even (1.0039062).
        with localcontext() as ctx:
            ctx.prec, ctx.rounding = precision + 1, ROUND_HALF_UP
            text = f"{+exact:.{precision}e}"
        if to_f32(float(text)) == abs(value):
            break
    mantissa, exponent_text = text.split("e")
    digits = mantissa.replace(".", "")
    exponent = int(exponent_text)
    if -6 <= exponent <= 12:
        if exponent >= len(digits) - 1:
            body = digits + "0" * (exponent - len(digits) + 1) + ".0"
        elif exponent >= 0:
            body = digits[: exponent + 1] + "." + digits[exponent + 1 :]
        else:
            body = "0." + "0" * (-exponent - 1) + digits
    else:
        fraction = "." + digits[1:] if len(digits) > 1 else ""
        body = f"{digits[0]}{fraction}e{exponent}"
    return sign + body


def estimate_tokens(content: str) -> int:
    """v0 token estimate: ``ceil(len(utf8) / 4)``."""
    return (len(content.encode("utf-8")) + 3) // 4


def _scored(documents: Sequence[V0Document], terms: list[str],
            ) -> list[tuple[float, str, V0Document, int, int]]:
    """(score, id, document, term matches, words) of every document, best first (ties by
    id): the share of its words that are query terms, in float32 as the reference."""
    scored: list[tuple[float, str, V0Document, int, int]] = []
    for doc in documents:
        words = split_white_space(doc.content.lower())
        matches = 0
        if terms and words:
            counts = Counter(words)
            matches = sum(counts[term] for term in terms)
        score = 0.0 if not words else to_f32(to_f32(matches) / to_f32(len(words)))
        scored.append((score, doc.id, doc, matches, len(words)))
    scored.sort(key=lambda item: (-item[0], item[1]))
    return scored


def select_v0(documents: Sequence[V0Document], query: str, budget: int) -> dict[str, Any]:
    """The v0 SelectionResult for ``query`` under ``budget`` (scores as :class:`F32`).

    Any string is a valid query, the empty one included, as long as it is Unicode text
    that UTF-8 can encode, of at most ``MAX_QUERY_BYTES`` (the cap of native caches);
    otherwise ``invalid_query``. ``why`` names every term, as the reference does; an
    answer whose echoes of them would pass ``MAX_V0_WHY_BYTES`` is ``invalid_query``
    (both caps: ``query_limits``; the reference has neither).
    """
    try:
        query.encode("utf-8")
    except UnicodeEncodeError:
        raise QueryError() from None
    check_query_length(query)
    terms = split_white_space(query.lower())
    shown = terms  # one list, shared by every document's ``why``
    echo = len(json.dumps(shown, ensure_ascii=False, separators=(",", ":")))
    scored = _scored(documents, terms)
    selected: list[dict[str, Any]] = []
    used = 0
    excluded = 0
    for score, _, doc, matches, total_words in scored:
        tokens = estimate_tokens(doc.content)
        if used + tokens > budget:
            excluded += 1
            continue
        used += tokens
        check_v0_echo(echo, len(selected) + 1)
        selected.append(
            {
                "id": doc.id,
                "version": doc.version,
                "content": doc.content,
                "score": F32(score),
                "tokens": tokens,
                "why": {
                    "query_terms": shown,
                    "term_matches": matches,
                    "total_words": total_words,
                },
            }
        )
    return {
        "documents": selected,
        "selection": {
            "query": query,
            "budget": budget,
            "tokens_used": used,
            "documents_considered": len(documents),
            "documents_selected": len(selected),
            "documents_excluded_by_budget": excluded,
        },
    }
