"""The one strict JSON parser: for cache manifests and documents, and MCP wire lines.

Strict UTF-8 (no BOM, no UTF-16 sniffing), no NaN/Infinity, and nesting too deep for the
parser is an invalid document (ValueError), not a crash.
"""

from __future__ import annotations

import json
import re
from typing import Any

# A surrogate escape that is not half of a high+low pair (only those can decode to a lone
# surrogate). Pairs are common: an ASCII-escaped emoji. False alarms only cost a walk.
_SURROGATE_ESCAPE = re.compile(
    r"\\u[dD][89abAB][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F][0-9a-fA-F]{2})"
    r"|(?<!\\u[dD][89abAB][0-9a-fA-F]{2})\\u[dD][c-fC-F][0-9a-fA-F]{2}"
)


def parse_json(data: bytes, *, lone_surrogates: bool = False) -> Any:
    """Parse JSON as serde_json would accept it; raise ValueError otherwise.

    A string escaping a lone surrogate is refused unless ``lone_surrogates``: a cache is
    UTF-8 text, while an MCP message may carry one in an id the server must echo back.
    """
    try:
        text = data.decode("utf-8")
        value = json.loads(text, parse_constant=_reject_constant)
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None
    if not lone_surrogates and _SURROGATE_ESCAPE.search(text):
        _check_encodable(value)
    return value


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _check_encodable(value: Any) -> None:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            item.encode("utf-8")
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
