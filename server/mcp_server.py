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
from ..meaning_status import MeaningStatus, meaning_status
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
from .navigation_tools import OUTLINE, READ

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server

    from ..meaning_status import MeaningStatus

logger = logging.getLogger("doc_index.server.mcp")

SERVER_NAME = "doc-index"


def instructions(style: str, root: Path | None = None,
                 meaning: MeaningStatus | None = None) -> str:
    """What the server tells the agent at the start, true of this server: what a cache is
    and how caches are named, where the names and what each holds are (``list_caches``,
    the ``doc-index://caches`` resource), ``resolve`` first and then reading what it
    points to, the budget to start with, whether answers use meaning (``meaning``: None
    when not known) and, when the root holds caches of published packages, those at
    start (``MAX_LISTED``)."""
    list_caches = published_name(LIST_CACHES, style)
    resolve = published_name(RESOLVE, style)
    text = (
        f"Read-only documentation caches, each one project's docs split into sections. "
        f"Cache names are exact: `owner-name` (a repository: `pallets-flask`), "
        f"`NAME@VERSION` (a package: `flask@3.1.0`), `local-...` (a folder); {list_caches} "
        f"lists them and the resource {RESOURCE_URI} tells each one's source, version and "
        f"pinning projects: look there when a name is refused. Start with {resolve} "
        f"(budget 2000; 8000 for broad questions), then read what it points to with {READ} "
        f"(a section whole, its page or its neighbours); {OUTLINE} lists a cache's "
        f"headings and ids."
    )
    if meaning is not None:
        text += (" Answers match the question's meaning as well as its words in caches that "
                 "hold vectors." if meaning.on else
                 f" Answers match words, not meaning ({meaning.line()}).")
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


def build_server(calls: ToolCalls, style: str,
                 meaning: MeaningStatus | None = None) -> Server[Any]:
    """The SDK server: the tools, the catalog resource, the resource templates and their
    completions, and an empty prompt list (so that every list method a client calls is
    answered); tool code runs one call at a time off the loop."""
    import anyio
    from mcp.server.lowlevel import Server

    limiter = anyio.CapacityLimiter(1)
    handlers = {**_tool_handlers(calls, style, meaning, limiter),
                **_resource_handlers(calls, limiter)}

    async def list_prompts(ctx: Any, params: Any) -> dict[str, Any]:
        return {"prompts": []}

    server: Server[Any] = Server(
        SERVER_NAME,
        version=__version__,
        instructions=instructions(style, calls.root, meaning),
        # The SDK takes a handler's result as a plain dict too and validates it into its model.
        on_list_prompts=list_prompts,  # type: ignore[arg-type]
        **handlers,
    )
    server.middleware.clear()  # the OpenTelemetry middleware: no tracing from a read-only tool
    return server


def _tool_handlers(calls: ToolCalls, style: str, meaning: MeaningStatus | None,
                   limiter: Any) -> dict[str, Any]:
    """tools/list and tools/call."""
    import anyio
    import mcp_types as types
    from mcp.shared.exceptions import MCPError

    tools = tool_definitions(style, meaning is not None and meaning.on)

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

    return {"on_list_tools": list_tools, "on_call_tool": call_tool}


def _resource_handlers(calls: ToolCalls, limiter: Any) -> dict[str, Any]:
    """resources/list, resources/templates/list, resources/read and completion/complete
    (``mcp_resources``)."""
    import anyio
    import mcp_types as types
    from mcp.shared.exceptions import MCPError

    from . import mcp_resources

    async def list_resources(ctx: Any, params: Any) -> dict[str, Any]:
        return {"resources": mcp_resources.RESOURCES}

    async def list_templates(ctx: Any, params: Any) -> dict[str, Any]:
        return {"resourceTemplates": mcp_resources.TEMPLATES}

    async def read_resource(ctx: Any, params: types.ReadResourceRequestParams) -> dict[str, Any]:
        uri = str(params.uri)
        if uri == RESOURCE_URI:
            text = await anyio.to_thread.run_sync(catalog_text, calls.root, limiter=limiter)
        else:
            try:
                text = await anyio.to_thread.run_sync(mcp_resources.read_template, calls, uri,
                                                      limiter=limiter)
            except mcp_resources.ResourceProblem as exc:
                raise MCPError(code=types.INVALID_PARAMS, message=str(exc)) from None
        return {"contents": [{"uri": uri, "mimeType": "application/json", "text": text}]}

    async def complete(ctx: Any, params: types.CompleteRequestParams) -> dict[str, Any]:
        ref = params.ref
        if not isinstance(ref, types.ResourceTemplateReference):
            return {"completion": {"values": [], "total": 0, "hasMore": False}}
        chosen = params.context.arguments if params.context is not None else None
        values, total = await anyio.to_thread.run_sync(
            mcp_resources.complete, calls, ref.uri, params.argument.name,
            params.argument.value, chosen, limiter=limiter)
        return {"completion": {"values": values, "total": total,
                               "hasMore": total > len(values)}}

    return {"on_list_resources": list_resources, "on_list_resource_templates": list_templates,
            "on_read_resource": read_resource, "on_completion": complete}


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
    calls = ToolCalls(Path(root), warm=warm, model=model, style=tool_names)
    if not calls.root.is_dir():
        logger.warning("cache root %s is not a directory (yet)", calls.root)
    meaning = meaning_status(model)
    print(f"doc-index serve: {serve_line(meaning, calls.root)}", file=sys.stderr, flush=True)
    try:
        server = build_server(calls, tool_names, meaning)  # one server, either transport
        if listening is not None:
            from .mcp_http import serve_http

            return serve_http(server, *listening)
        import anyio

        from .mcp_transport import serve_stdio

        anyio.run(serve_stdio, server)
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


def serve_line(meaning: MeaningStatus, root: Path) -> str:
    """The line ``serve`` starts with: whether answers use meaning, and in how many of
    the root's caches (those holding ``vectors.bin``), or why not."""
    if not meaning.on:
        return meaning.line()
    try:
        with os.scandir(root) as entries:
            caches = [e.path for e in entries if e.is_dir(follow_symlinks=False)
                      and not e.name.startswith(".")]
    except OSError:
        caches = []
    held = sum(1 for c in caches if os.path.isfile(os.path.join(c, "vectors.bin")))
    return (f"meaning: on ({meaning.reason}; {held} of {len(caches)} caches hold vectors, "
            "the others answer by words until built again)")


def _configure_logging() -> None:
    logging.basicConfig(
        level=logging.WARNING,
        stream=sys.stderr,
        format="doc-index serve: %(levelname)s: %(name)s: %(message)s",
    )
