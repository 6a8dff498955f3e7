"""The one error hierarchy of doc-index and the one table from error code to exit code.

Every error the library raises on purpose is a :class:`DocIndexError` whose ``code`` is a
row of :data:`EXIT_CODES`: the six frozen codes of the specs (:class:`ContextError`,
whose canonical messages are all an MCP client sees) and ``usage`` (a bad argument or
name, exit 1). The doors (``doc-index``, ``context``, the MCP server, the git hook) turn
any exception into an exit code with :func:`exit_code_of`, a line for people with
:func:`describe` and an MCP tool error with :func:`as_context_error`; they never map
errors themselves.
"""

from __future__ import annotations

import json

from .printable import printable

CANONICAL_MESSAGES: dict[str, str] = {
    "cache_missing": "Cache does not exist",
    "cache_invalid": "Cache exists but is invalid",
    "invalid_query": "Query is invalid",
    "invalid_budget": "Budget is invalid",
    "io_error": "I/O error occurred",
    "internal_error": "Internal error",
}

EXIT_OK = 0
EXIT_INTERRUPTED = 130
EXIT_CODES: dict[str, int] = {
    "usage": 1,
    "invalid_query": 2,
    "invalid_budget": 3,
    "cache_missing": 4,
    "cache_invalid": 5,
    "io_error": 6,
    "internal_error": 7,
}
EXIT_USAGE = EXIT_CODES["usage"]


class DocIndexError(Exception):
    """An error the library raises on purpose: ``code`` (a key of EXIT_CODES) and a
    one-line ``message`` for people."""

    def __init__(self, message: str, code: str = "io_error") -> None:
        if code not in EXIT_CODES:
            raise ValueError(f"unknown error code {code!r}")
        super().__init__(message)
        self.code = code

    @property
    def message(self) -> str:
        return str(self)

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.code]


class UsageError(DocIndexError):
    """A command-line argument or a name that cannot be used: exit 1."""

    def __init__(self, message: str) -> None:
        super().__init__(message, "usage")


class ContextError(DocIndexError):
    """A spec error: ``code`` is one of the six v0 codes; ``message`` is its canonical,
    path-free text, ``detail`` (``str(exc)``) what happened."""

    def __init__(self, code: str, detail: str | None = None) -> None:
        if code not in CANONICAL_MESSAGES:
            raise ValueError(f"unknown error code {code!r}")
        super().__init__(detail or CANONICAL_MESSAGES[code], code)
        self.detail = detail

    @property
    def message(self) -> str:
        return CANONICAL_MESSAGES[self.code]

    def to_json_text(self) -> str:
        """The MCP tool-error text: ``{"error":{"code":...,"message":...}}`` + newline."""
        body = {"error": {"code": self.code, "message": CANONICAL_MESSAGES[self.code]}}
        return json.dumps(body, separators=(",", ":"), ensure_ascii=False) + "\n"


class MissingCache(ContextError):
    """``cache_missing`` raised by the library API (``doc_index.api``): for people,
    ``message`` names the cache or root and the way out; a spec door (the ``context``
    CLI, MCP) shows only the canonical text (``to_json_text``)."""

    def __init__(self, message: str) -> None:
        super().__init__("cache_missing", message)

    @property
    def message(self) -> str:
        return str(self)


class CacheReplaced(Exception):
    """The cache generation being read was swapped out by a rebuild: load it again.

    (Not a user-facing error: readers catch it and retry.)"""


def exit_code_of(exc: BaseException) -> int:
    """The exit code of any exception: its code's row, 6 for any other OSError, 130 for
    an interrupt, 7 for anything else."""
    if isinstance(exc, DocIndexError):
        return exc.exit_code
    if isinstance(exc, KeyboardInterrupt):
        return EXIT_INTERRUPTED
    if isinstance(exc, OSError):
        return EXIT_CODES["io_error"]
    return EXIT_CODES["internal_error"]


def describe(exc: BaseException) -> str:
    """The one line a door shows people for ``exc`` (after ``error: ``), every name in it
    escaped (``printable``)."""
    if isinstance(exc, DocIndexError):
        return printable(exc.message)
    if isinstance(exc, KeyboardInterrupt):
        return "interrupted"
    from .redact import redact  # an unexpected error may quote a URL with its token

    if isinstance(exc, OSError):
        parts = [printable(redact(exc.strerror or str(exc)))]
        if exc.filename:
            parts.append(printable(redact(str(exc.filename))))
        return ": ".join(parts)
    return f"internal error ({type(exc).__name__}: {printable(redact(str(exc)))})"


def as_context_error(exc: BaseException) -> ContextError:
    """The spec error of any exception, for the three tools and MCP: ContextError as is,
    an OSError ``io_error``, anything else ``internal_error``."""
    if isinstance(exc, ContextError):
        return exc
    if isinstance(exc, OSError):
        return ContextError("io_error", str(exc))
    return ContextError("internal_error", repr(exc))
