"""Byte-exact JSON output of the tools: compact or 2-space pretty, non-ASCII kept, one newline."""

from __future__ import annotations

import json
from typing import Any


def dumps(value: Any, pretty: bool = False) -> str:
    """Serialize a tool result exactly as the CLI prints it (trailing newline included)."""
    if pretty:
        return json.dumps(value, indent=2, ensure_ascii=False) + "\n"
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False) + "\n"
