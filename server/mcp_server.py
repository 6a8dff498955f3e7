"""``doc-index serve``: the read-only MCP server on stdio.

Built on the official SDK's low-level ``mcp.server.lowlevel.Server`` (handshake,
dispatch, cancellation, both protocol eras) behind this project's stdio transport
(:mod:`.mcp_wire`, :mod:`.mcp_transport`). Tools come from :mod:`.mcp_tools`; their
results are the bytes of the ``context`` CLI, as one text content item.

Start-up: importing the SDK costs 0.5 s with bytecode and 2-3 s without (pydantic
building the protocol models), so nothing here imports it at module level
(tests/test_import_rules.py). :func:`run` starts reading stdin (the reader answers
``initialize`` at once) and starts the SDK import in a thread; until the SDK is ready,
``tools/list`` and ``tools/call`` are answered by :class:`.mcp_early.EarlyAnswers` with
the same bytes, and everything else waits, in order, for the SDK.

The server reads caches only: it writes no file (bytecode caching is off while it
runs), opens no network socket, sends OpenTelemetry nowhere (the SDK's middleware is
removed) and logs to stderr only. Loaded caches stay warm between calls within a memory
budget, ``DOC_INDEX_SERVE_CACHE_MB`` (:mod:`.warm_caches`); a bad value is one ``error:``
line before anything is served.
"""

from __future__ import annotations

import logging
import os
import queue
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from doc_index import __version__

from ..foundation.errors import EXIT_INTERRUPTED, spec_json
from ..search.warm_caches import WarmCaches, memory_budget
from .mcp_early import EarlyAnswers
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
from .mcp_wire import FastInitialize, Reader, Wire

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server

logger = logging.getLogger("doc_index.server.mcp")

SERVER_NAME = "doc-index"
CAPABILITIES: dict[str, Any] = {"tools": {"listChanged": False}}


def instructions(style: str) -> str:
    list_caches = published_name(LIST_CACHES, style)
    resolve = published_name(RESOLVE, style)
    return (
        f"Read-only documentation caches, one per project, split into sections. Call "
        f"{list_caches} for the cache names, then {resolve} with a cache name, a question in "
        f"the words the docs likely use and a token budget (2000 to start) to get the "
        f"sections that answer it."
    )


def fast_initialize(style: str) -> FastInitialize:
    return FastInitialize(
        server_info={"name": SERVER_NAME, "version": __version__},
        capabilities=CAPABILITIES,
        instructions=instructions(style),
    )


def build_server(calls: ToolCalls, style: str) -> Server[Any]:
    """The SDK server with the three tools; tool code runs one call at a time off the loop."""
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

    server: Server[Any] = Server(
        SERVER_NAME,
        version=__version__,
        instructions=instructions(style),
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )
    server.middleware.clear()  # the OpenTelemetry middleware: no tracing from a read-only tool
    return server


class SdkImport:
    """Imports the SDK side of the server in a daemon thread, then puts itself in the inbox."""

    def __init__(self, inbox: queue.SimpleQueue[object]) -> None:
        self.inbox = inbox
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, name="mcp-sdk-import", daemon=True)

    def start(self) -> SdkImport:
        self.thread.start()
        return self

    def _run(self) -> None:
        try:
            from . import mcp_transport  # noqa: F401  (the SDK, anyio, pydantic)
        except BaseException as exc:  # re-raised on the main thread by check()
            self.error = exc
        finally:
            self.inbox.put(self)

    def check(self) -> None:
        if self.error is not None:
            raise self.error


def run(
    root: Path, tool_names: str = "dotted", *, fast_init: bool = True, early_tools: bool = True
) -> int:
    """Serve MCP on stdin/stdout until stdin closes; the exit status.

    ``fast_init=False`` leaves ``initialize`` to the SDK, ``early_tools=False`` makes
    tools requests wait for it (how the server answered before; tests and the bench
    compare with it).
    """
    if tool_names not in TOOL_NAME_STYLES:
        raise ValueError(f"tool_names must be one of {TOOL_NAME_STYLES}, not {tool_names!r}")
    warm = WarmCaches(max_bytes=memory_budget(os.environ))  # a bad value: error before serving
    sys.dont_write_bytecode = True
    _configure_logging()
    wire = Wire.claim_stdio()
    inbox: queue.SimpleQueue[object] = queue.SimpleQueue()
    Reader(wire, inbox, fast_initialize(tool_names) if fast_init else None).start()
    sdk = SdkImport(inbox).start()
    try:
        calls = ToolCalls(Path(root), warm=warm)
        if not calls.root.is_dir():
            logger.warning("cache root %s is not a directory (yet)", calls.root)
        early = EarlyAnswers(wire, calls, tool_definitions(tool_names), enabled=early_tools)
        backlog = early.until(inbox, sdk)
        sdk.check()
        return _serve(calls, tool_names, wire, inbox, backlog)
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    finally:
        wire.restore()


def _serve(
    calls: ToolCalls, style: str, wire: Wire, inbox: queue.SimpleQueue[object],
    backlog: list[object],
) -> int:
    import anyio

    from .mcp_transport import StdioBridge

    server = build_server(calls, style)
    options = server.create_initialization_options()

    async def main() -> None:
        await StdioBridge(wire, inbox, backlog).serve(server, options)

    anyio.run(main)
    return 0


def _configure_logging() -> None:
    logging.basicConfig(
        level=logging.WARNING,
        stream=sys.stderr,
        format="doc-index serve: %(levelname)s: %(name)s: %(message)s",
    )
