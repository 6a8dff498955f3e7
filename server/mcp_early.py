"""``tools/list`` and ``tools/call`` answered while the MCP SDK is still being imported.

Importing the SDK costs 0.5 s with bytecode and 2-3 s without (pydantic building the
protocol models). :func:`.mcp_server.run` starts that import in a thread at spawn; until
it is done, :class:`EarlyAnswers` handles the inbox on the main thread, with the standard
library and the project's own tool code only:

- once the opening ``initialize`` was answered early (:class:`.mcp_wire.FastInitialize`),
  a plain ``tools/list`` or ``tools/call`` is answered here, with the bytes the SDK sends
  for it (tests/test_mcp_first_call.py compares both on every handshake version);
- everything else (the ``initialize`` itself, notifications, ``ping``, unknown methods,
  anything with an unusual shape) is kept, in order, and is the first thing the SDK reads.

"Plain" is deliberately narrow: what the SDK could judge differently (a bad ``params``
shape, an unknown tool, an id pydantic might not round-trip) waits for the SDK. A request
answered here never reaches the SDK, so a later ``notifications/cancelled`` for it is
ignored there like any cancellation of a finished request.
"""

from __future__ import annotations

import queue
from typing import Any

from .mcp_tools import CANONICAL_NAMES, ToolCalls, tool_result
from .mcp_wire import Inbound, Wire, encode_frame

REQUEST_KEYS = frozenset({"jsonrpc", "id", "method", "params"})
INT64 = 2**63


def _plain_id(value: object) -> bool:
    """A JSON-RPC id both encoders write the same way: an int64 or a UTF-8 string."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return -INT64 <= value < INT64
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate
            return False
        return True
    return False


def _plain_params(params: object, allowed: frozenset[str]) -> bool:
    """A params object with only ``allowed`` keys and a ``_meta`` the SDK accepts as is."""
    if not isinstance(params, dict) or not set(params) <= allowed | {"_meta"}:
        return False
    meta = params.get("_meta", {})
    if not isinstance(meta, dict):
        return False
    return "progressToken" not in meta or _plain_id(meta["progressToken"])


def _plain_call(params: object) -> bool:
    return (
        _plain_params(params, frozenset({"name", "arguments"}))
        and isinstance(params, dict)
        and isinstance(params.get("name"), str)
        and params["name"] in CANONICAL_NAMES
        and (params.get("arguments") is None or isinstance(params["arguments"], dict))
    )


def _plain_list(params: object) -> bool:
    # The cursor is ignored (one page), but the SDK still checks that it is a string.
    return params is None or (
        _plain_params(params, frozenset({"cursor"}))
        and isinstance(params, dict)
        and isinstance(params.get("cursor", ""), str)
    )


class EarlyAnswers:
    """Answers what it can from ``inbox`` until the SDK is ready; keeps the rest."""

    def __init__(
        self, wire: Wire, calls: ToolCalls, tools: list[dict[str, Any]], enabled: bool = True
    ) -> None:
        self.wire = wire
        self.calls = calls
        self.tools = tools
        self.enabled = enabled
        self.initialized = False

    def until(self, inbox: queue.SimpleQueue[object], ready: object) -> list[object]:
        """Handle ``inbox`` until ``ready`` comes out of it; what is left, in order."""
        backlog: list[object] = []
        while (item := inbox.get()) is not ready:
            if not (isinstance(item, Inbound) and self.answer(item)):
                backlog.append(item)
        return backlog

    def answer(self, item: Inbound) -> bool:
        """Answer ``item`` now if it is a plain tools request after an early initialize."""
        if item.answered is not None:
            self.initialized = True  # the SDK gets this initialize first: its state matches
            return False
        message = item.message
        if not (
            self.enabled
            and self.initialized
            and isinstance(message, dict)
            and set(message) <= REQUEST_KEYS
            and message.get("jsonrpc") == "2.0"
            and _plain_id(message.get("id"))
        ):
            return False
        params = message.get("params")
        if message.get("method") == "tools/list" and _plain_list(params):
            result = {"tools": self.tools}
        elif message.get("method") == "tools/call" and _plain_call(params):
            assert isinstance(params, dict)
            result = tool_result(self.calls.call(params["name"], params.get("arguments")))
        else:
            return False
        frame = encode_frame({"jsonrpc": "2.0", "id": message["id"], "result": result})
        self.wire.write_frame(frame)
        return True
