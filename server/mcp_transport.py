"""Bridge between the stdio wire (:mod:`.mcp_wire`) and the SDK's ``Server.run`` streams.

This replaces ``mcp.server.stdio.stdio_server`` and fixes what it does as shipped
(mcp 2.3.0):

- at stdin EOF the SDK cancels the requests still being handled and answers them
  ``-32000 Connection closed`` (and one whose answer was being written gets none); here
  EOF is held back from the SDK until every request forwarded to it has been answered
  (or cancelled by the client), however long that takes, so each request read before
  stdin closed gets its real response. There is no wall-clock limit on that drain: a
  limit turned a long queue (500 slow resolves) into dropped answers;
- an unparseable line is dropped silently by the SDK; here it gets ``-32700`` (sent by
  the reader) and a message that is JSON but not JSON-RPC gets ``-32600``, with the
  request's id when it has a valid one, else id null;
- the opening ``initialize`` is answered before the SDK is even imported (see
  :class:`.mcp_wire.FastInitialize`); the SDK's own answer is checked against it and
  dropped, so the client sees exactly one response per id; what arrived while the SDK
  was loading and was not answered early (:mod:`.mcp_early`) is fed to it first;
- a response the SDK cannot serialize becomes ``-32603`` instead of vanishing.
"""

from __future__ import annotations

import json
import logging
import queue
from collections import Counter, deque
from collections.abc import Sequence
from typing import Any

import anyio
import mcp_types as types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.server.lowlevel import Server
from mcp.server.models import InitializationOptions
from mcp.shared.dispatcher import as_request_id, coerce_request_id
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from .mcp_wire import (
    EOF,
    INVALID_REQUEST,
    Inbound,
    Wire,
    encode_frame,
    error_frame,
    request_id_of,
)

logger = logging.getLogger("doc_index.server.mcp")

INTERNAL_ERROR = -32603
INLINE_WRITE_BYTES = 64 * 1024
"""Larger frames are written from a worker thread so a slow reader never stalls the loop."""

RequestKey = int | str


class StdioBridge:
    """Feeds the SDK from the reader's queue and writes what the SDK sends."""

    def __init__(
        self, wire: Wire, inbox: queue.SimpleQueue[object], backlog: Sequence[object] = ()
    ) -> None:
        self.wire = wire
        self.inbox = inbox
        self.backlog = deque(backlog)
        self.outstanding: Counter[RequestKey] = Counter()
        self.cancelled: set[RequestKey] = set()
        self.fast_answers: dict[RequestKey, dict[str, Any]] = {}
        self.eof = False
        self.drained = anyio.Event()
        self.written_all = anyio.Event()

    async def serve(self, server: Server[Any], options: InitializationOptions) -> None:
        """Run ``server`` until stdin is closed and every answer is written."""
        to_sdk, sdk_in = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        sdk_out, from_sdk = anyio.create_memory_object_stream[SessionMessage](0)
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._pump_out, from_sdk)
            tg.start_soon(self._pump_in, to_sdk)
            await server.run(sdk_in, sdk_out, options)
            # The SDK closed its output when it returned: let the last frames out, then
            # stop reading (only still running if the SDK stopped before stdin closed).
            await self.written_all.wait()
            tg.cancel_scope.cancel()

    # inbound -------------------------------------------------------------------------

    async def _pump_in(self, to_sdk: MemoryObjectSendStream[SessionMessage | Exception]) -> None:
        async with to_sdk:
            while True:
                if self.backlog:
                    item = self.backlog.popleft()
                else:
                    item = await anyio.to_thread.run_sync(self.inbox.get, abandon_on_cancel=True)
                if item is EOF:
                    break
                assert isinstance(item, Inbound)
                try:
                    await self._forward(item, to_sdk)
                except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                    logger.warning("the SDK stopped reading; input ignored")
                    return
            self.eof = True
            await self._drain()

    async def _forward(
        self, item: Inbound, to_sdk: MemoryObjectSendStream[SessionMessage | Exception]
    ) -> None:
        raw = item.message
        if isinstance(raw, dict) and "id" in raw and request_id_of(raw) is None:
            # MCP ids are strings or integers, never null: not a notification either.
            await self._reject(raw)
            return
        try:
            message = types.jsonrpc_message_adapter.validate_python(raw, by_name=False)
        except ValidationError:
            await self._reject(raw)
            return
        if isinstance(message, types.JSONRPCRequest):
            key = coerce_request_id(message.id)
            self.outstanding[key] += 1
            self.cancelled.discard(key)
            if item.answered is not None:
                self.fast_answers[key] = item.answered
        elif (
            isinstance(message, types.JSONRPCNotification)
            and message.method == "notifications/cancelled"
        ):
            cancelled = as_request_id((message.params or {}).get("requestId"))
            if cancelled is not None:
                # The SDK never answers a request the client cancelled.
                self.cancelled.add(coerce_request_id(cancelled))
        await to_sdk.send(SessionMessage(message))

    async def _reject(self, message: object) -> None:
        if isinstance(message, dict) and "method" not in message and (
            "result" in message or "error" in message
        ):
            logger.warning("malformed response from the client ignored")
            return
        await self._write(error_frame(request_id_of(message), INVALID_REQUEST, "Invalid Request"))

    async def _drain(self) -> None:
        """Wait until every request read before EOF is answered: no time limit (see above)."""
        self._check_drained()
        await self.drained.wait()

    def _pending(self) -> int:
        return sum(n for key, n in self.outstanding.items() if key not in self.cancelled)

    def _check_drained(self) -> None:
        if self.eof and self._pending() == 0:
            self.drained.set()

    # outbound ------------------------------------------------------------------------

    async def _pump_out(self, from_sdk: MemoryObjectReceiveStream[SessionMessage]) -> None:
        try:
            async with from_sdk:
                async for session_message in from_sdk:
                    await self._emit(session_message.message)
        finally:
            self.written_all.set()

    async def _emit(self, message: types.JSONRPCMessage) -> None:
        key: RequestKey | None = None
        answer = isinstance(message, types.JSONRPCResponse | types.JSONRPCError)
        if answer and message.id is not None:
            key = coerce_request_id(message.id)
        if key is not None and key in self.fast_answers:
            self._check_fast_answer(message, self.fast_answers.pop(key))
        else:
            try:
                frame = message.model_dump_json(by_alias=True, exclude_unset=True).encode()
            except Exception:
                try:  # e.g. a lone surrogate in the id: pydantic refuses, escaped JSON works
                    frame = encode_frame(message.model_dump(by_alias=True, exclude_unset=True))
                except Exception:
                    logger.exception("cannot serialize an answer")
                    if key is None:
                        return
                    frame = error_frame(getattr(message, "id", None), INTERNAL_ERROR,
                                        "Internal error")
            await self._write(frame)
        if key is not None:
            self._settle(key)

    def _settle(self, key: RequestKey) -> None:
        if self.outstanding[key] <= 1:
            del self.outstanding[key]
            self.cancelled.discard(key)
        else:
            self.outstanding[key] -= 1
        self._check_drained()

    def _check_fast_answer(self, message: types.JSONRPCMessage, sent: dict[str, Any]) -> None:
        sdk = message.model_dump(by_alias=True, mode="json", exclude_unset=True)
        if sdk.get("result") != sent:
            logger.warning(
                "the SDK's initialize answer differs from the one sent: %s != %s",
                json.dumps(sdk.get("result", sdk.get("error"))),
                json.dumps(sent),
            )

    async def _write(self, frame: bytes) -> None:
        if len(frame) <= INLINE_WRITE_BYTES:
            self.wire.write_frame(frame)
        else:
            await anyio.to_thread.run_sync(self.wire.write_frame, frame)
