"""The three tools' results as the bytes every door prints or sends (the specs' JSON).

Written by ``foundation.strict_json.dumps`` (serde_json's layout). A Context Engine v0
answer's scores are :class:`~.v0_selection.F32` values, which print
the reference's way (:func:`~.v0_selection.format_f32`); the standard encoder cannot be
told to, so such an answer goes through :func:`_encode`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..foundation.strict_json import dumps
from ..search.results import Answer
from ..search.v0_selection import F32, format_f32

if TYPE_CHECKING:
    from ..library import Cache
    from ..search.cache_details import CacheDetails


def answer_text(answer: Answer, pretty: bool = False) -> str:
    """context.resolve's text."""
    value = {"documents": answer.documents, "selection": answer.selection}
    if any(isinstance(doc["score"], F32) for doc in answer.documents):
        return render_v0(value, pretty)
    return dumps(value, pretty)


def info_text(info: CacheDetails) -> str:
    """context.inspect_cache's text: the spec's four fields of a cache's details."""
    return dumps({"cache_version": info.cache_version, "document_count": info.sections,
                  "total_bytes": info.total_bytes, "valid": info.valid})


def list_text(caches: Sequence[Cache]) -> str:
    """context.list_caches's text (``path`` is a cache's name under the root)."""
    return dumps({"caches": [{"path": cache.name, "has_manifest": cache.has_manifest}
                             for cache in caches]})


def render_v0(value: Any, pretty: bool = False) -> str:
    """Serialize like serde_json (compact, or 2-space pretty) plus one newline.

    Same bytes as :func:`dumps` except that :class:`F32` values print with
    :func:`format_f32`; plain floats are refused, since v0 output has none.
    """
    parts: list[str] = []
    _encode(value, pretty, 0, parts)
    parts.append("\n")
    return "".join(parts)


def _encode(value: Any, pretty: bool, level: int, out: list[str]) -> None:
    if isinstance(value, F32):
        out.append(format_f32(value))
    elif isinstance(value, (str, bool, int)) or value is None:
        out.append(json.dumps(value, ensure_ascii=False))
    elif isinstance(value, (dict, list)):
        opener, closer = ("{", "}") if isinstance(value, dict) else ("[", "]")
        if not value:
            out.append(opener + closer)
            return
        if isinstance(value, dict):
            colon = ": " if pretty else ":"
            items = [(json.dumps(k, ensure_ascii=False) + colon, v) for k, v in value.items()]
        else:
            items = [("", v) for v in value]
        newline = "\n" + "  " * (level + 1) if pretty else ""
        out.append(opener)
        for index, (prefix, item) in enumerate(items):
            out.append(("," if index else "") + newline + prefix)
            _encode(item, pretty, level + 1, out)
        out.append("\n" + "  " * level + closer if pretty else closer)
    else:
        raise TypeError(f"cannot render {type(value).__name__}")
