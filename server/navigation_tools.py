"""The two navigation tools, ``context_outline`` and ``context_read``, for every door.

SDK-free: the texts the MCP tools send and ``context outline/read --cache PATH`` prints
(``search.navigation``'s JSON, the same bytes as ``doc-index outline/read NAME``), the
checks of their MCP arguments, and their error texts.

Their names are the same in both tool-name styles (underscore only: valid for every
client, so no client needs another spelling); the dotted spelling (``context.outline``)
is accepted too, as the three v0 tools accept both. Unlike the v0 tools, whose error
texts the specs fix, their errors say what to do: the error object has the specs' shape
and codes, and its message is the code's canonical text followed by the problem (an
argument, an id no section has: ``search.navigation.NavigationError``) or, for a cache
that does not exist, the closest cache names. No message holds a path.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..foundation.errors import ContextError, spec_message
from ..search.budget import MAX_BUDGET, budget_from_json
from ..search.results import READ_SCOPES

if TYPE_CHECKING:
    from ..search.warm_caches import WarmCaches

OUTLINE = "context_outline"
READ = "context_read"
NAVIGATION_NAMES = (OUTLINE, READ)
DEFAULT_BUDGET = 2000
OUTLINE_ARGUMENTS = ("cache", "prefix", "depth", "cursor", "budget")
READ_ARGUMENTS = ("cache", "id", "scope", "line", "budget")


def outline_text(cache_dir: Path, prefix: str = "", budget: int = DEFAULT_BUDGET, *,
                 depth: int | None = None, cursor: str | None = None,
                 warm: WarmCaches | None = None) -> str:
    """context_outline's text: ``Cache(cache_dir).outline`` as JSON."""
    from ..library import Cache
    from ..search.navigation import outline_text as text

    return text(Cache(cache_dir, warm=warm).outline(prefix, budget, depth=depth,
                                                     cursor=cursor))


def read_text(cache_dir: Path, section_id: str, scope: str = "section",
              budget: int = DEFAULT_BUDGET, *, line: int | None = None,
              warm: WarmCaches | None = None) -> str:
    """context_read's text: ``Cache(cache_dir).read`` as JSON."""
    from ..library import Cache
    from ..search.navigation import reading_text

    return reading_text(Cache(cache_dir, warm=warm).read(section_id, scope, budget,
                                                          line=line))


def error_message(error: ContextError, close: list[str] | None = None,
                  list_caches: str = "context_list_caches") -> str:
    """The message of a navigation tool's error: the problem an argument has
    (NavigationError's message), else the code's canonical text; for a missing cache, the
    ``close`` names or where the names are."""
    from ..search.navigation import NavigationError

    if isinstance(error, NavigationError):
        return error.message
    message = spec_message(error.code)
    if error.code == "cache_missing" and close is not None:
        if close:
            return f"{message}; did you mean: {', '.join(close)}?"
        return f"{message}; {list_caches} lists the names"
    return message


def error_text(code: str, message: str) -> str:
    """A navigation tool's error text: the specs' error object, one trailing newline."""
    body = {"error": {"code": code, "message": message}}
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False) + "\n"


def whole_from_json(value: object, what: str) -> int | None:
    """A JSON integer argument (``3`` or ``3.0``), None when absent; anything else is an
    invalid_query naming ``what``."""
    from ..search.navigation import NavigationError

    if value is None:
        return None
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise NavigationError(f"{what} must be a whole number")
    return value


def outline_arguments(args: dict[str, Any]) -> dict[str, Any]:
    """context_outline's arguments, checked in the order of ``navigation.outline``
    (budget, then the others); ``cache`` is the caller's to resolve."""
    _no_others(args, OUTLINE_ARGUMENTS)
    budget = _budget(args)
    return {"prefix": args.get("prefix", ""), "budget": budget,
            "depth": whole_from_json(args.get("depth"), "depth"),
            "cursor": args.get("cursor")}


def read_arguments(args: dict[str, Any]) -> dict[str, Any]:
    """context_read's arguments, checked as ``navigation.read`` checks them."""
    _no_others(args, READ_ARGUMENTS)
    budget = _budget(args)
    return {"section_id": args.get("id"), "scope": args.get("scope", "section"),
            "budget": budget, "line": whole_from_json(args.get("line"), "line")}


def _budget(args: dict[str, Any]) -> int:
    return budget_from_json(args["budget"]) if "budget" in args else DEFAULT_BUDGET


def _no_others(args: dict[str, Any], known: tuple[str, ...]) -> None:
    from ..search.navigation import NavigationError

    unknown = sorted(set(args) - set(known))
    if unknown:
        raise NavigationError(f"unknown argument {unknown[0]!r}: the arguments are "
                              f"{', '.join(known)}")


# What an agent reads in tools/list. {list_caches} and {resolve} become the published
# names of those tools. Kept here, apart from the v0 tools' texts (mcp_tools).
OUTLINE_DESCRIPTION = (
    "A cache's table of contents: its files with their headings' section ids, depth and "
    "tokens. Narrow it with `prefix` (a file path start) or `depth` (1: page titles). "
    "outline.next not null: call again with cursor=next for the rest."
)
READ_DESCRIPTION = (
    "Read by section id (from {resolve} or context_outline): the `section` whole, its "
    "`page` (every section of its file) or its `neighbours` (before and after), cited as "
    "{resolve} cites. read.next_line not null: call again with line=next_line for the rest."
)
ID_PARAMETER = "Section id."
SCOPE_PARAMETER = "Default: section."
LINE_PARAMETER = "Go on from this line of the file (read.next_line)."
PREFIX_PARAMETER = "File path start, e.g. `docs/api/`."
DEPTH_PARAMETER = "Deepest heading depth listed (1: page titles)."
CURSOR_PARAMETER = "Go on from this section id (outline.next)."
BUDGET_PARAMETER = "Most tokens the answer may use (default 2000)."


def tool_definitions(cache_property: dict[str, Any], names: dict[str, str],
                     annotations: dict[str, bool]) -> list[dict[str, Any]]:
    """The tools/list entries of the two tools (after the v0 three)."""
    budget = {"type": "integer", "minimum": 0, "maximum": MAX_BUDGET,
              "description": BUDGET_PARAMETER}
    return [
        {"name": OUTLINE, "description": OUTLINE_DESCRIPTION.format(**names),
         "inputSchema": {"type": "object", "properties": {
             "cache": cache_property,
             "prefix": {"type": "string", "description": PREFIX_PARAMETER},
             "depth": {"type": "integer", "minimum": 0, "description": DEPTH_PARAMETER},
             "cursor": {"type": "string", "description": CURSOR_PARAMETER},
             "budget": budget,
         }, "required": ["cache"], "additionalProperties": False},
         "annotations": annotations},
        {"name": READ, "description": READ_DESCRIPTION.format(**names),
         "inputSchema": {"type": "object", "properties": {
             "cache": cache_property,
             "id": {"type": "string", "description": ID_PARAMETER},
             "scope": {"type": "string", "enum": list(READ_SCOPES),
                       "description": SCOPE_PARAMETER},
             "line": {"type": "integer", "minimum": 1, "description": LINE_PARAMETER},
             "budget": budget,
         }, "required": ["cache", "id"], "additionalProperties": False},
         "annotations": annotations},
    ]


__all__ = ["NAVIGATION_NAMES", "OUTLINE", "READ", "error_message",
           "error_text", "outline_text", "read_text", "tool_definitions"]
