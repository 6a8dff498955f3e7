"""``doc-index serve``: the read-only MCP server, on stdio or streamable HTTP.

The official SDK's low-level ``mcp.server.lowlevel.Server`` (handshake, dispatch,
cancellation, both protocol eras) on the SDK's stdio transport, whose streams
:mod:`.mcp_transport` wraps to keep what DESIGN.md promises beyond it (an answer for
every request read before EOF, ``-32700`` for an unparseable line). Tools come from
:mod:`.mcp_tools`; their results are the bytes of the ``context`` CLI, as one text
content item.

Importing the SDK is most of the start-up (any ``mcp`` submodule imports the whole
package: client, HTTP transports, the pydantic models of both protocol eras). This module
imports it in :func:`run` only (tests/test_import_rules.py), once bytecode writing is off
and the memory budget is checked.

The server reads caches only: it writes no file (bytecode caching is off while it
runs), opens no network socket but the one ``--http`` names (:mod:`.mcp_http`, the same
server object on the SDK's HTTP transport), sends OpenTelemetry nowhere (the SDK's middleware is
removed) and logs to stderr only. Loaded caches stay warm between calls within a memory
budget, ``DOC_INDEX_SERVE_CACHE_MB`` (:mod:`.warm_caches`); a bad value is one ``error:``
line before anything is served.
"""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from doc_index import __version__

from ..foundation.errors import EXIT_INTERRUPTED, spec_json
from ..search.cache_catalog import RESOURCE_URI
from ..search.warm_caches import WarmCaches, memory_budget
from .mcp_tools import (
    CANONICAL_NAMES,
    LIST_CACHES,
    RESOLVE,
    TOOL_NAME_STYLES,
    ToolCalls,
    ToolReply,
    published_name,
    tool_definitions,
    tool_result,
)

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server

logger = logging.getLogger("doc_index.server.mcp")

SERVER_NAME = "doc-index"


def instructions(style: str, root: Path | None = None) -> str:
    """What the server tells the agent at the start: how to use the tools, where each
    cache's source and version are (the ``doc-index://caches`` resource), and, when the
    root holds caches of published packages, those at start (``MAX_LISTED``)."""
    list_caches = published_name(LIST_CACHES, style)
    resolve = published_name(RESOLVE, style)
    text = (
        f"Read-only documentation caches, one per project, split into sections. Call "
        f"{list_caches} for the cache names, then {resolve} with a cache name, a question in "
        f"the words the docs likely use and a token budget (2000 to start) to get the "
        f"sections that answer it. The resource {RESOURCE_URI} says what each cache holds: "
        f"its source (a folder, a git repository, or a package at a pinned version), ref, "
        f"commit, and the projects that pin it."
    )
    packages = _package_lines(root) if root is not None else []
    if packages:
        text += (" Dependency docs at pinned versions (cache: package version, projects "
                 "pinning it), at start:\n" + "\n".join(packages))
    return text


MAX_LISTED = 40


def _package_lines(root: Path) -> list[str]:
    """One line per package cache (at most ``MAX_LISTED``); none when the root cannot be
    read (the tools say why when called)."""
    from ..foundation.printable import printable
    from ..search.cache_catalog import catalog

    try:
        caches = catalog(root)["caches"]
    except Exception:  # noqa: BLE001 (a root that cannot be read: the tools report it)
        return []
    lines = []
    for cache in caches:
        source = cache["source"] or {}
        if source.get("package") is None:
            continue
        pins = f" (pinned by {', '.join(cache['projects'])})" if cache["projects"] else ""
        lines.append(printable(f"- {cache['name']}: {source['kind']} {source['package']} "
                               f"{source.get('version') or source.get('ref')}{pins}"))
    if len(lines) > MAX_LISTED:
        lines = [*lines[:MAX_LISTED], f"- ... and {len(lines) - MAX_LISTED} more: read "
                                      f"{RESOURCE_URI}"]
    return lines


def build_server(calls: ToolCalls, style: str) -> Server[Any]:
    """The SDK server with the three tools and the catalog resource; tool code runs one
    call at a time off the loop."""
    import anyio
    import mcp_types as types
    from mcp.server.lowlevel import Server
    from mcp.shared.exceptions import MCPError

    limiter = anyio.CapacityLimiter(1)
    tools = tool_definitions(style)

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> dict[str, Any]:
        return {"tools": tools}

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> dict[str, Any]:
        if params.name not in CANONICAL_NAMES:
            raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown tool: {params.name}")
        try:
            reply = await anyio.to_thread.run_sync(
                calls.call, params.name, params.arguments, limiter=limiter
            )
        except Exception:  # ToolCalls.call never raises; this is the last line of defence
            logger.exception("tool %s failed", params.name)
            reply = ToolReply(spec_json("internal_error"), is_error=True)
        return tool_result(reply)

    async def list_resources(ctx: Any,
                             params: types.PaginatedRequestParams | None) -> dict[str, Any]:
        return {"resources": [{
            "uri": RESOURCE_URI, "name": "caches", "mimeType": "application/json",
            "description": "Every cache under the root: its source (folder, git repository, "
                           "or package and version), ref, commit, and the projects that "
                           "pin it."}]}

    async def read_resource(ctx: Any, params: types.ReadResourceRequestParams) -> dict[str, Any]:
        if str(params.uri) != RESOURCE_URI:
            raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown resource: {params.uri}")
        text = await anyio.to_thread.run_sync(catalog_text, calls.root, limiter=limiter)
        return {"contents": [{"uri": RESOURCE_URI, "mimeType": "application/json",
                              "text": text}]}

    server: Server[Any] = Server(
        SERVER_NAME,
        version=__version__,
        instructions=instructions(style, calls.root),
        # The SDK takes a handler's result as a plain dict too and validates it into its model.
        on_list_tools=list_tools,  # type: ignore[arg-type]
        on_call_tool=call_tool,  # type: ignore[arg-type]
        on_list_resources=list_resources,  # type: ignore[arg-type]
        on_read_resource=read_resource,  # type: ignore[arg-type]
    )
    server.middleware.clear()  # the OpenTelemetry middleware: no tracing from a read-only tool
    return server


def catalog_text(root: Path) -> str:
    """The resource's JSON, or an error object naming the spec's code (as the tools)."""
    from ..foundation.strict_json import dumps
    from ..search.cache_catalog import catalog

    try:
        return dumps(catalog(root))
    except Exception as exc:  # noqa: BLE001 (the agent gets a code, the log the cause)
        from ..foundation.errors import SPEC_MESSAGES

        code = getattr(exc, "code", None)
        logger.warning("resource %s: %s", RESOURCE_URI, exc)
        return spec_json(code if code in SPEC_MESSAGES else "internal_error")


def run(root: Path, tool_names: str = "dotted", model: Path | None = None, *,
        http: str | None = None, token_file: str | os.PathLike[str] | None = None) -> int:
    """Serve MCP on stdin/stdout until stdin closes and every answer is out, or with
    ``http`` (``[HOST:]PORT``) over streamable HTTP until SIGTERM/SIGINT; the exit status.
    ``model``: the embedding model's folder (answers by meaning; loaded at the first answer
    that uses it, then kept). ``token_file``: the HTTP bearer token's file
    (:mod:`.http_access`; else ``$DOC_INDEX_HTTP_TOKEN``)."""
    if tool_names not in TOOL_NAME_STYLES:
        raise ValueError(f"tool_names must be one of {TOOL_NAME_STYLES}, not {tool_names!r}")
    warm = WarmCaches(max_bytes=memory_budget(os.environ))  # a bad value: error before serving
    listening = _listening(http, token_file) if http is not None else None
    sys.dont_write_bytecode = True  # before the SDK's import: no .pyc written beside it
    _configure_logging()
    calls = ToolCalls(Path(root), warm=warm, model=model)
    if not calls.root.is_dir():
        logger.warning("cache root %s is not a directory (yet)", calls.root)
    try:
        if listening is not None:
            from .mcp_http import serve_http

            return serve_http(build_server(calls, tool_names), *listening)
        import anyio

        from .mcp_transport import serve_stdio

        anyio.run(serve_stdio, build_server(calls, tool_names))
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    return 0


def _listening(http: str, token_file: str | os.PathLike[str] | None) -> tuple[Any, ...]:
    """(address, bound socket, token) for ``--http``, checked before the SDK is imported:
    a bad address, an unsafe token or a public address without one is a UsageError."""
    from .http_access import bind, check_access, http_token, resolve_listen

    listen = resolve_listen(http)
    token = http_token(token_file, os.environ)
    check_access(listen, token)
    return listen, bind(listen), token


def _configure_logging() -> None:
    logging.basicConfig(
        level=logging.WARNING,
        stream=sys.stderr,
        format="doc-index serve: %(levelname)s: %(name)s: %(message)s",
    )
