"""The MCP server's resources, resource templates and completions (SDK-free).

- ``doc-index://caches`` (a resource): every cache's source, version, commit and pinning
  projects (``search.cache_catalog``).
- ``doc-index://caches/{cache}/outline{?prefix,depth,cursor,budget}`` and
  ``doc-index://caches/{cache}/sections/{id}{?scope,line,budget}`` (resource templates):
  the text of ``context_outline`` and ``context_read`` with those arguments, the same
  bytes, for clients that let a person attach a page or a section to a conversation.
  Each part is percent-decoded (an id with ``/``, a v0 document's, may come as ``%2F``
  or as ``/``); a query argument given twice, or one the template does not name, is
  refused.
- Completions (``completion/complete``) of the templates' variables: ``cache`` from the
  names under the root, ``id`` from the ids of the cache already chosen, ``scope`` from
  its three values; at most 100, those that start with what was typed.

A resource that cannot be read is a JSON-RPC error (:class:`ResourceProblem`): its code is
invalid params and its message the tool's error message (what to ask instead).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, unquote, urlsplit

from ..search.cache_catalog import RESOURCE_URI
from ..search.results import READ_SCOPES
from .navigation_tools import OUTLINE, READ

if TYPE_CHECKING:
    from .mcp_tools import ToolCalls

OUTLINE_TEMPLATE = "doc-index://caches/{cache}/outline{?prefix,depth,cursor,budget}"
SECTION_TEMPLATE = "doc-index://caches/{cache}/sections/{id}{?scope,line,budget}"
MAX_COMPLETIONS = 100  # the protocol's most values in one answer

RESOURCES = [{
    "uri": RESOURCE_URI, "name": "caches", "mimeType": "application/json",
    "description": "Every cache under the root: its exact name, its source (folder, git "
                   "repository, or package and version), ref, commit, and the projects "
                   "that pin it."}]
TEMPLATES = [
    {"uriTemplate": OUTLINE_TEMPLATE, "name": "outline", "mimeType": "application/json",
     "description": "A cache's files and headings with section ids and tokens (what "
                    "context_outline answers)."},
    {"uriTemplate": SECTION_TEMPLATE, "name": "section", "mimeType": "application/json",
     "description": "A section by id, its page or its neighbours (what context_read "
                    "answers)."},
]


class ResourceProblem(Exception):
    """A resource URI that names nothing readable; the message says why."""


def template_arguments(uri: str) -> tuple[str, dict[str, Any]] | None:
    """The tool and its arguments a templated ``uri`` stands for; None when the URI is
    none of the templates'; ResourceProblem for a bad query part."""
    parts = urlsplit(uri)
    if parts.scheme != "doc-index" or parts.netloc != "caches" or parts.fragment:
        return None
    cache, _, rest = parts.path.lstrip("/").partition("/")
    if not cache:
        return None
    known: tuple[str, ...]
    if rest == "outline":
        tool, known, ints = OUTLINE, ("prefix", "depth", "cursor", "budget"), ("depth",)
        args: dict[str, Any] = {}
    elif rest.startswith("sections/") and len(rest) > len("sections/"):
        tool, known, ints = READ, ("scope", "line", "budget"), ("line",)
        args = {"id": unquote(rest[len("sections/"):], errors="strict")}
    else:
        return None
    args["cache"] = unquote(cache, errors="strict")
    for key, values in parse_qs(parts.query, keep_blank_values=True,
                                errors="strict").items():
        if key not in known or len(values) != 1:
            raise ResourceProblem(f"the query argument {key!r} is unknown or repeated: "
                                  f"this resource takes {', '.join(known)}")
        args[key] = _number(values[0], key) if key in (*ints, "budget") else values[0]
    return tool, args


def _number(text: str, key: str) -> int:
    if not (text.isascii() and text.isdigit()) or len(text) > 18:
        raise ResourceProblem(f"{key} must be a whole number")
    return int(text)


def read_template(calls: ToolCalls, uri: str) -> str:
    """The text of a templated resource: the tool's answer; ResourceProblem with the
    tool's error message when it fails, or when ``uri`` is no resource of this server."""
    try:
        found = template_arguments(uri)
    except (UnicodeDecodeError, ValueError):
        raise ResourceProblem("the URI is not valid UTF-8 once decoded") from None
    if found is None:
        raise ResourceProblem(f"Unknown resource: {uri}")
    reply = calls.call(*found)
    if reply.is_error:
        raise ResourceProblem(json.loads(reply.text)["error"]["message"])
    return reply.text


def complete(calls: ToolCalls, ref_uri: str, name: str, value: str,
             chosen: dict[str, str] | None) -> tuple[list[str], int]:
    """Completion values for variable ``name`` of template ``ref_uri`` (those starting with
    ``value``, at most ``MAX_COMPLETIONS``) and how many there are."""
    if ref_uri not in (OUTLINE_TEMPLATE, SECTION_TEMPLATE):
        return [], 0
    if name == "cache":
        found = _cache_names(calls.root)
    elif name == "scope" and ref_uri == SECTION_TEMPLATE:
        found = list(READ_SCOPES)
    elif name == "id" and ref_uri == SECTION_TEMPLATE and chosen and "cache" in chosen:
        found = _section_ids(calls, chosen["cache"])
    else:
        return [], 0
    matches = [item for item in found if item.startswith(value)]
    return matches[:MAX_COMPLETIONS], len(matches)


def _cache_names(root: Path) -> list[str]:
    from ..foundation.errors import ContextError
    from ..search.tools import cache_entries

    try:
        return [entry.path for entry in cache_entries(root) if entry.has_manifest]
    except ContextError:
        return []


def _section_ids(calls: ToolCalls, cache: str) -> list[str]:
    """Every section id of ``cache`` in outline order (none when it cannot be read)."""
    from ..foundation.errors import ContextError
    from ..search.navigation import section_ids

    try:
        return section_ids(calls.cache_dir(cache), warm=calls.warm)
    except ContextError:
        return []
