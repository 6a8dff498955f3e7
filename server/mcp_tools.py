"""The MCP tools: names, input schemas, argument checks and the error mapping.

SDK-free and synchronous: :meth:`ToolCalls.call` turns ``(tool, arguments)`` into the
text the ``context`` CLI would print, or a spec error text, and never raises. The three
v0 tools are here; the navigation tools' texts, schemas and errors are in
:mod:`.navigation_tools` (context_outline, context_read: every argument problem is
invalid_query with a message naming it, but the budget, invalid_budget, and the cache,
cache_missing with the closest names).

Arguments are checked before any file is touched; a bad argument is a tool error with
the spec code that names it (``additionalProperties: false`` is enforced too):

================  ==================================================  ==============
tool              argument problem                                    code
================  ==================================================  ==============
resolve           unknown argument                                    invalid_query
resolve           ``budget`` missing / not an integer (bool too)      invalid_budget
resolve           ``query`` missing / not a string                    invalid_query
resolve           ``cache`` missing / not a string / not a cache      cache_missing
inspect_cache     unknown argument, ``cache`` missing / bad           cache_missing
list_caches       any argument (the root is the server's)             cache_missing
================  ==================================================  ==============

(no ``budget`` is invalid_budget for resolve, whose spec requires it; the navigation
tools take 2000 then).

``budget`` is a JSON number with no fractional part (JSON Schema ``integer``), so
``4000.0`` is 4000. Checks run in the order of ``tools.resolve`` (budget, query, cache),
so a call with several problems gets the error the CLI would give; query content is
judged by ``tools`` exactly as for the CLI. An OSError escaping ``tools`` is
``io_error``; any other exception is ``internal_error`` (logged to stderr with its
traceback, never sent to the client).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..foundation.errors import CacheMissing, ContextError, QueryError, as_context_error, spec_json
from ..search.budget import MAX_BUDGET, budget_from_json
from ..search.warm_caches import WarmCaches
from ..store.cache_paths import real_root, resolve_cache_name, verify_cache_tree
from . import navigation_tools
from .navigation_tools import NAVIGATION_NAMES, OUTLINE, READ

logger = logging.getLogger("doc_index.server.mcp")

RESOLVE = "context.resolve"
LIST_CACHES = "context.list_caches"
INSPECT_CACHE = "context.inspect_cache"
DOTTED_NAMES = (RESOLVE, LIST_CACHES, INSPECT_CACHE)
TOOL_NAME_STYLES = ("dotted", "underscore")

# Either spelling is accepted whatever the published style is. The navigation tools have
# one published name (underscore) and accept the dotted one too.
CANONICAL_NAMES: dict[str, str] = {
    **{name: name for name in DOTTED_NAMES},
    **{name.replace(".", "_"): name for name in DOTTED_NAMES},
    **{name: name for name in NAVIGATION_NAMES},
    **{name.replace("_", ".", 1): name for name in NAVIGATION_NAMES},
}

# What an agent reads on every session (tools/list): what a cache is and how it is named,
# how to ask, what budget to start with, what to do next. {list_caches}, {resolve} and
# {read} become the published tool names. The resolve text starts with the sentence of
# specs/context.resolve.md "Tool Description". The navigation tools' texts are in
# navigation_tools; the server's instructions in mcp_server.
RESOLVE_DESCRIPTION = (
    "Resolve a natural-language query against a pre-built context cache and return a "
    "deterministic, explainable set of documents within a token budget. "
    "A cache is one project's documentation split into sections; each document is one "
    "section and names its file, heading path and lines. A section cut to fit is marked "
    "source.excerpt: read it whole with {read}. No documents but "
    "selection.documents_excluded_by_budget > 0: the matches did not fit, ask again with "
    "a larger budget."
)
LIST_CACHES_DESCRIPTION = (
    "List the documentation caches. `path` is the exact name to pass as `cache`: "
    "`owner-name` for a git repository (`pallets-flask`), `NAME@VERSION` for a pinned "
    "package (`flask@3.1.0`), `local-...` for a local folder; has_manifest false: not "
    "usable. Call this first, or when a name is refused; the resource doc-index://caches "
    "tells each cache's source, version and the projects that pin it."
)
INSPECT_CACHE_DESCRIPTION = (
    "Inspect a context cache: format version, number of sections (document_count), size in "
    "bytes, validity. Not needed before {resolve}."
)
CACHE_PARAMETER = ("Exact cache name from {list_caches}, e.g. `pallets-flask` or "
                   "`flask@3.1.0`.")


def query_parameter(meaning: bool) -> str:
    """The ``query`` description, true of the server: whether it answers by meaning."""
    if meaning:
        # The ranking fuses words and meaning where a cache holds vectors.
        return ("A question or keywords. Matching is by words and by meaning (in caches "
                "that hold vectors): ask in plain words; naming the API, option or error "
                "message the docs use still ranks best.")
    # The ranking matches words (stems, identifier parts, a few synonyms), not meaning: an
    # agent that writes the docs' likely terms gets better answers than a paraphrase.
    return ("A question or keywords. Matching is by words, not meaning: use the words the "
            "docs likely use (the feature, API, function, option or error message) and add "
            "a synonym when unsure.")


BUDGET_PARAMETER = (
    "Most tokens the answer may use: start with 2000; 8000 for broad questions, 500 for a "
    "quick lookup."
)


def published_name(canonical: str, style: str) -> str:
    if canonical in NAVIGATION_NAMES:
        return canonical
    return canonical.replace(".", "_") if style == "underscore" else canonical


def tool_definitions(style: str, meaning: bool = False) -> list[dict[str, Any]]:
    """The tools/list entries, the spec's three in its order then the navigation tools,
    for tool-name ``style``; ``meaning``: the server answers by meaning where a cache
    holds vectors (``DocIndex.meaning_status``)."""
    if style not in TOOL_NAME_STYLES:
        raise ValueError(f"unknown tool-name style {style!r}")
    names = {
        "list_caches": published_name(LIST_CACHES, style),
        "resolve": published_name(RESOLVE, style),
        "read": READ,
    }
    cache_property = {"type": "string", "description": CACHE_PARAMETER.format(**names)}
    read_only = {
        "destructiveHint": False,
        "idempotentHint": True,
        "openWorldHint": False,
        "readOnlyHint": True,
    }
    return [
        {
            "name": published_name(RESOLVE, style),
            "description": RESOLVE_DESCRIPTION.format(**names),
            "inputSchema": {
                "type": "object",
                "properties": {
                    "cache": cache_property,
                    "query": {"type": "string", "description": query_parameter(meaning)},
                    "budget": {
                        "type": "integer",
                        "minimum": 0,
                        "maximum": MAX_BUDGET,
                        "description": BUDGET_PARAMETER,
                    },
                },
                "required": ["cache", "query", "budget"],
                "additionalProperties": False,
            },
            "annotations": read_only,
        },
        {
            "name": published_name(LIST_CACHES, style),
            "description": LIST_CACHES_DESCRIPTION,
            "inputSchema": {"type": "object", "properties": {}, "additionalProperties": False},
            "annotations": read_only,
        },
        {
            "name": published_name(INSPECT_CACHE, style),
            "description": INSPECT_CACHE_DESCRIPTION.format(**names),
            "inputSchema": {
                "type": "object",
                "properties": {"cache": cache_property},
                "required": ["cache"],
                "additionalProperties": False,
            },
            "annotations": read_only,
        },
        *navigation_tools.tool_definitions(cache_property, names, read_only),
    ]


@dataclass(frozen=True)
class ToolReply:
    """What a tools/call returns: the text content and whether it is a tool error."""

    text: str
    is_error: bool = False


def tool_result(reply: ToolReply) -> dict[str, Any]:
    """The tools/call result: one text item, and ``isError`` only when true (the SDK's
    ``CallToolResult`` model would write ``isError: false`` on every answer)."""
    result: dict[str, Any] = {"content": [{"type": "text", "text": reply.text}]}
    if reply.is_error:
        result["isError"] = True
    return result


Backend = Any  # a module-like object with resolve / inspect_cache / list_caches


def _logged(tool: str, exc: Exception) -> ContextError:
    """``exc`` as the spec error a client is told, logged to stderr as it deserves."""
    error = as_context_error(exc)
    if isinstance(exc, ContextError):
        if exc.code == "internal_error":
            logger.error("tool %s: internal error: %s", tool, exc)
    elif isinstance(exc, OSError):
        logger.error("tool %s: %s", tool, exc)
    else:
        logger.exception("tool %s raised", tool)
    return error


class ToolCalls:
    """Runs tool calls against the caches under ``root``.

    Parsed caches stay warm in ``self.warm`` between calls. ``backend`` replaces the
    ``tools`` module (tests inject faults with it); it is then called without warming.
    """

    def __init__(self, root: Path, backend: Backend | None = None,
                 warm: WarmCaches | None = None, model: Path | None = None,
                 style: str = "dotted") -> None:
        self.root = Path(root)
        self.style = style
        self.model = model
        self.warm = warm if warm is not None else WarmCaches()
        self._backend = backend

    @property
    def backend(self) -> Backend:
        if self._backend is None:
            from . import spec_tools as tools

            self._backend = tools
        return self._backend

    def _resolve_text(self, cache_dir: Path, query: str, budget: int) -> str:
        if self._backend is not None:
            return self._backend.resolve(cache_dir, query, budget)
        from . import spec_tools as tools

        return tools.resolve(cache_dir, query, budget, warm=self.warm, model=self.model)

    def call(self, tool: str, arguments: dict[str, Any] | None) -> ToolReply:
        """Run tool ``tool`` (either spelling); unknown names raise KeyError."""
        canonical = CANONICAL_NAMES[tool]
        args = {} if arguments is None else arguments
        if canonical in NAVIGATION_NAMES:
            return self._navigate(canonical, args)
        handler: Callable[[dict[str, Any]], str] = {
            RESOLVE: self._resolve,
            LIST_CACHES: self._list_caches,
            INSPECT_CACHE: self._inspect_cache,
        }[canonical]
        try:
            return ToolReply(handler(args))
        except Exception as exc:
            return ToolReply(spec_json(_logged(tool, exc).code), is_error=True)

    def _navigate(self, tool: str, args: dict[str, Any]) -> ToolReply:
        """context_outline or context_read: their text, or their error (with the closest
        cache names when the cache is missing)."""
        try:
            if tool == OUTLINE:
                outline = navigation_tools.outline_arguments(args)
                return ToolReply(navigation_tools.outline_text(
                    self._cache_dir(args.get("cache")), warm=self.warm, **outline))
            read = navigation_tools.read_arguments(args)
            return ToolReply(navigation_tools.read_text(
                self._cache_dir(args.get("cache")), warm=self.warm, **read))
        except Exception as exc:
            error = _logged(tool, exc)
            close = self._close_names(args.get("cache")) if error.code == "cache_missing" \
                else None
            message = navigation_tools.error_message(
                error, close, published_name(LIST_CACHES, self.style))
            return ToolReply(navigation_tools.error_text(error.code, message), is_error=True)

    def _close_names(self, name: object) -> list[str]:
        """The cache names under the root closest to ``name`` (none when the root cannot
        be listed)."""
        from ..missing_cache import close_names
        from ..search.tools import cache_entries

        try:
            names = [entry.path for entry in cache_entries(self.root) if entry.has_manifest]
        except ContextError:
            return []
        return close_names(name, names) if isinstance(name, str) else []

    def _resolve(self, args: dict[str, Any]) -> str:
        if set(args) - {"cache", "query", "budget"}:
            raise QueryError(detail="unknown argument")
        # The order of tools.resolve: budget, then query, then the cache.
        budget = budget_from_json(args.get("budget"))
        query = args.get("query")
        if not isinstance(query, str):
            raise QueryError(detail="query must be a string")
        return self._resolve_text(self._cache_dir(args.get("cache")), query, budget)

    def _inspect_cache(self, args: dict[str, Any]) -> str:
        if set(args) - {"cache"}:
            raise CacheMissing(detail="unknown argument")
        return self.backend.inspect_cache(self._cache_dir(args.get("cache")))

    def _list_caches(self, args: dict[str, Any]) -> str:
        if args:
            raise CacheMissing(detail="list_caches takes no arguments")
        return self.backend.list_caches(self.root)

    def cache_dir(self, name: object) -> Path:
        """The checked directory of cache ``name`` (CacheMissing when it is none)."""
        return self._cache_dir(name)

    def _cache_dir(self, name: object) -> Path:
        """Resolve ``name`` and verify the cache's tree once per cache generation.

        The walk (symlinks and hard links leaving the root) is memoized with the same
        stamp as the loaded caches: a rebuild is a new directory and is walked again.
        """
        if not isinstance(name, str):
            raise CacheMissing(detail="cache must be a string")
        cache_dir = resolve_cache_name(self.root, name, verify_tree=False)
        root_real = real_root(self.root)
        self.warm.get(cache_dir, "tree", lambda d: verify_cache_tree(root_real, os.fspath(d)))
        return cache_dir
