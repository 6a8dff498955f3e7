"""The errors of doc-index: one tree, and one table from error code to exit code.

Every error the library raises on purpose is a :class:`DocIndexError`; its class says its
``code``, and the code its exit code (:data:`EXIT_CODES`, DESIGN.md's table)::

    Exception
    +-- DocIndexError            .code .exit_code .message .detail
    |   +-- UsageError           usage            1  a bad argument, name or setting
    |   |   +-- InvalidCacheKey (also ValueError)    a cache name that is no path component
    |   |   +-- NothingToIndex                       a source with no file to index
    |   |   +-- OtherSource                          the name holds another source's cache
    |   |   +-- CacheTooLarge                        a manifest over what readers load
    |   |   +-- SearchIndexTooLarge                  a search index over what readers load
    |   |   +-- DeleteRefused                        ``delete`` of what is no cache
    |   |   +-- BadSource                            a source named wrong (URL, checkout,
    |   |   |                                        package, index configuration)
    |   |   +-- ModelError                           no usable embedding model
    |   +-- ContextError         the six codes of the specs (context.resolve & co.)
    |       +-- QueryError       invalid_query    2
    |       +-- BudgetError      invalid_budget   3
    |       +-- CacheMissing     cache_missing    4
    |       +-- CacheInvalid     cache_invalid    5
    |       +-- IoError          io_error         6  something could not be read or written
    |       |   +-- SourceError                      a source could not be read
    |       |   |   +-- GitSourceError (also OSError)    git failed
    |       |   |   +-- PackageError                     a package index or archive failed
    |       |   |       +-- ArchiveError, NotFound
    |       |   +-- GitTimeout (also OSError)        git did not answer in time
    |       |   +-- LockTimeout (also OSError)       another build held the lock too long
    |       |   +-- NotACache                        ``context build --force`` on no v0 cache
    |       +-- InternalError    internal_error   7
    +-- CacheReplaced            not an error: a rebuild swapped the generation being read

One constructor shape, ``Error(message=None, *, detail=None)``. ``message`` is the one
line for people, always (a spec error raised without one says its code's text:
``Budget is invalid``); ``detail`` says what happened, for developers and tests (never
shown where the specs fix the text); ``str(exc)`` is the detail when there is one, else
the message. Where the specs fix the bytes (the ``context`` CLI, MCP), a door shows
:func:`spec_message` / :func:`spec_json` of the code, a function of the code alone.

The doors turn any exception into an exit code with :func:`exit_code_of`, a line for
people with :func:`describe` and a spec error with :func:`as_context_error`; they never
map errors themselves. Signals that never leave the module that raises them (a damaged
cache generation to rebuild, a file the indexer cannot read) stay there, private.
"""

from __future__ import annotations

import json
from typing import ClassVar

from .printable import printable

SPEC_MESSAGES: dict[str, str] = {
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


def spec_message(code: str) -> str:
    """The specs' canonical message of a spec error code (``Cache does not exist``)."""
    return SPEC_MESSAGES[code]


def spec_json(code: str) -> str:
    """The MCP tool-error text of a spec error code: ``{"error":{"code":...,"message":...}}``
    and a newline."""
    body = {"error": {"code": code, "message": SPEC_MESSAGES[code]}}
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False) + "\n"


class DocIndexError(Exception):
    """An error the library raises on purpose (the module docstring draws the tree)."""

    code: ClassVar[str] = "internal_error"

    def __init__(self, message: str | None = None, *, detail: str | None = None) -> None:
        if message is None:
            message = SPEC_MESSAGES.get(self.code)
            if message is None:
                raise TypeError(f"{type(self).__name__} needs a message")
        super().__init__(detail or message)
        self.message = message
        self.detail = detail

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.code]


class UsageError(DocIndexError):
    """A command-line argument, a name or a setting that cannot be used: exit 1."""

    code = "usage"


class InvalidCacheKey(UsageError, ValueError):
    """A cache key that is not one plain path component directly under the root."""


class NothingToIndex(UsageError):
    """A source (or the part of it the build chose) holds no documentation file: an error,
    not an empty cache; nothing is written."""


class OtherSource(UsageError):
    """The cache a build would write was built from another source; nothing was written."""


class CacheTooLarge(UsageError):
    """The manifest a build is writing would exceed what readers load; nothing was written,
    the live cache, if any, is kept."""


class SearchIndexTooLarge(UsageError):
    """The search index a build is writing would exceed what readers load; nothing was
    written, the live cache, if any, is kept."""


class DeleteRefused(UsageError):
    """``delete`` of a directory doc-index cannot tell is a cache; nothing was done."""


def _one_line(message: str | None) -> str | None:
    """A source's message: credentials of every URL removed, blanks folded to one line."""
    if message is None:
        return None
    from .redact import redact

    return " ".join(redact(message).split())


class BadSource(UsageError):
    """A source named wrong: a URL whose repository cannot be told, a folder that is no
    git checkout, a package name, version or index configuration the user must fix. The
    message is one line, credentials removed."""

    def __init__(self, message: str | None = None, *, detail: str | None = None) -> None:
        super().__init__(_one_line(message), detail=detail)


class ModelError(UsageError):
    """No usable embedding model: missing, unknown, or the extra is not installed."""


class ContextError(DocIndexError):
    """An error with one of the six codes of the specs: what ``context.resolve``,
    ``inspect_cache`` and ``list_caches`` may raise, and all an MCP client is told."""


class QueryError(ContextError):
    code = "invalid_query"


class BudgetError(ContextError):
    code = "invalid_budget"


class CacheMissing(ContextError):
    code = "cache_missing"


class CacheInvalid(ContextError):
    code = "cache_invalid"


class IoError(ContextError):
    """Something could not be read or written: a source, a cache file, the lock."""

    code = "io_error"


class SourceError(IoError):
    """A source could not be read; the message is one line, credentials removed."""

    def __init__(self, message: str | None = None, *, detail: str | None = None) -> None:
        super().__init__(_one_line(message), detail=detail)


class GitSourceError(SourceError, OSError):
    """git failed on a source (an OSError too: what git reads is a file system's)."""


class PackageError(SourceError):
    """A package index, registry or archive failed."""


class ArchiveError(PackageError):
    """The archive is refused as a whole (a cap, or it does not parse)."""


class NotFound(PackageError):
    """The index answered that the page or file does not exist (HTTP 404/410, no file)."""


class GitTimeout(IoError, OSError):
    """git did not answer within the deadline and was killed."""


class LockTimeout(IoError, OSError):
    """Another build of the same cache held the lock for too long."""


class NotACache(IoError):
    """``context build --force`` names an existing path that is not a Context Engine cache:
    it is left alone (``io_error``, as the reference's other refusals of ``--cache``)."""


class InternalError(ContextError):
    code = "internal_error"


class CacheReplaced(Exception):
    """The cache generation being read was swapped out by a rebuild: load it again.

    (Not an error: readers catch it and retry.)"""


SPEC_ERRORS: dict[str, type[ContextError]] = {
    cls.code: cls for cls in (QueryError, BudgetError, CacheMissing, CacheInvalid, IoError,
                              InternalError)
}


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
    """The spec error of any exception, for the three tools and MCP: a ContextError as is,
    an OSError ``io_error``, anything else ``internal_error``."""
    if isinstance(exc, ContextError):
        return exc
    if isinstance(exc, OSError):
        return IoError(detail=str(exc))
    return InternalError(detail=repr(exc))
