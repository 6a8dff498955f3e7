"""The typed errors of the three tools, their canonical messages and CLI exit codes.

One exception type carries one of the six frozen codes of the specs. Every layer (CLI,
MCP server) maps it the same way, so a user sees a fact, never a traceback.
"""

from __future__ import annotations

import json

CANONICAL_MESSAGES: dict[str, str] = {
    "cache_missing": "Cache does not exist",
    "cache_invalid": "Cache exists but is invalid",
    "invalid_query": "Query is invalid",
    "invalid_budget": "Budget is invalid",
    "io_error": "I/O error occurred",
    "internal_error": "Internal error",
}

EXIT_OK = 0
EXIT_USAGE = 1
EXIT_CODES: dict[str, int] = {
    "invalid_query": 2,
    "invalid_budget": 3,
    "cache_missing": 4,
    "cache_invalid": 5,
    "io_error": 6,
    "internal_error": 7,
}


class ContextError(Exception):
    """A spec error: ``code`` is one of the six v0 codes."""

    def __init__(self, code: str, detail: str | None = None) -> None:
        if code not in CANONICAL_MESSAGES:
            raise ValueError(f"unknown error code {code!r}")
        self.code = code
        self.detail = detail
        super().__init__(detail or CANONICAL_MESSAGES[code])

    @property
    def message(self) -> str:
        """The canonical, path-free message that MCP clients see."""
        return CANONICAL_MESSAGES[self.code]

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.code]

    def to_json_text(self) -> str:
        """The MCP tool-error text: ``{"error":{"code":...,"message":...}}`` + newline."""
        body = {"error": {"code": self.code, "message": self.message}}
        return json.dumps(body, separators=(",", ":"), ensure_ascii=False) + "\n"


class CacheReplaced(Exception):
    """The cache generation being read was swapped out by a rebuild: load it again.

    (Here, not in ``native_cache``, so that ``tools.resolve`` can catch it without
    importing the native reader for v0 caches.)"""
