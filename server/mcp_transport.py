"""The SDK's stdio transport, with the guarantees of docs/mcp.md it lacks.

``mcp.server.stdio.stdio_server`` parses and validates every message and serializes every
answer; ``Server.run`` dispatches. The SDK is the only code here that reads or writes
JSON-RPC. This module gives it the byte streams and wraps its message streams:

- :class:`StdinLines` and :class:`StdoutFrames` are the ``stdin`` and ``stdout`` given to
  ``stdio_server`` (documented arguments), on private copies of fd 0 and 1
  (:func:`claimed_stdio`): lines of strict UTF-8, at most ``MAX_LINE_BYTES`` each, blank
  lines skipped (the SDK reads lines of any length and decodes with replacement
  characters); frames written whole, and dropped once the client closed stdout (the SDK's
  writer raises, which ends the server);
- :class:`HeldInput` wraps the SDK's read stream: a line the SDK could not turn into a
  message gets its error (the SDK only logs it): ``-32700`` for one that is not JSON,
  ``-32600`` for JSON that is not JSON-RPC, with the request's id when it has one; and at
  stdin's EOF the end of input is held back from ``Server.run`` until every request it was
  given is answered (or cancelled by the client): as shipped, the SDK cancels the requests
  still running at EOF and answers them ``-32000 Connection closed``. There is no
  wall-clock limit on that drain: a limit turned a long queue into dropped answers;
- :class:`CountedOutput` wraps the SDK's write stream: it sees every answer go out (for
  the drain) and turns the SDK's catch-all error code 0 (``JSONRPCDispatcher`` keeps it
  for v1 compatibility) into ``-32603``.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import sys
from collections import Counter
from collections.abc import Iterator
from types import TracebackType
from typing import Any, BinaryIO, TypeVar, cast

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.models import InitializationOptions
from mcp.server.stdio import stdio_server
from mcp.shared.dispatcher import as_request_id, coerce_request_id
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

logger = logging.getLogger("doc_index.server.mcp")

MAX_LINE_BYTES = 4 * 1024 * 1024
UNREADABLE = ""
"""What :class:`StdinLines` passes on for a line it cannot: the SDK's parser refuses it."""

RequestKey = int | str


# the byte streams ---------------------------------------------------------------------


def _dup_above_std(fd: int) -> int:
    return fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)


@contextlib.contextmanager
def claimed_stdio() -> Iterator[tuple[int, int]]:
    """Private descriptors for the client's stdin and stdout while fd 0 reads ``/dev/null``
    and fd 1 writes to stderr.

    So nothing else in the process can take protocol bytes or put a stray ``print`` on the
    wire (the SDK does the same for the streams it opens itself). fd 0 and 1 are given
    back on exit (for in-process callers).
    """
    sys.stdout.flush()
    wire_in, wire_out = _dup_above_std(0), _dup_above_std(1)
    saved = (_dup_above_std(0), _dup_above_std(1))
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null, 0)
    finally:
        os.close(null)
    os.dup2(2, 1)
    try:
        yield wire_in, wire_out
    finally:
        sys.stdout.flush()
        for fd, old in enumerate(saved):
            os.dup2(old, fd)
            os.close(old)
        os.close(wire_out)
        # wire_in stays open: the reading thread may still block on it (closing it could
        # hand its number to another file under that thread).


class StdinLines:
    """An async iterator of stdin's lines as text, for ``stdio_server(stdin=...)``."""

    def __init__(self, fd: int, limit: int = MAX_LINE_BYTES) -> None:
        self._file: BinaryIO = open(fd, "rb", closefd=False)  # noqa: SIM115 (lives on)
        self._limit = limit

    def __aiter__(self) -> StdinLines:
        return self

    async def __anext__(self) -> str:
        # Abandoned on cancellation: a thread blocked on a pipe cannot be interrupted.
        line = await anyio.to_thread.run_sync(self.read_line, abandon_on_cancel=True)
        if line is None:
            raise StopAsyncIteration
        return line

    def read_line(self) -> str | None:
        """The next non-blank line (UNREADABLE if too long or not UTF-8); None at EOF."""
        while True:
            raw = self._file.readline(self._limit + 1)
            if not raw:
                return None
            if len(raw) > self._limit and not raw.endswith(b"\n"):
                self._skip_rest()
                logger.warning("a line over %d bytes refused", self._limit)
                return UNREADABLE
            if raw.strip():
                break
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            logger.warning("a line that is not UTF-8 refused (%s)", exc.reason)
            return UNREADABLE

    def _skip_rest(self) -> None:
        while (rest := self._file.readline(self._limit)) and not rest.endswith(b"\n"):
            pass


class StdoutFrames:
    """The ``stdout`` given to ``stdio_server``: each frame written whole to the client's
    stdout, from a worker thread (a slow reader never stalls the loop); once the client
    has closed it, the rest is dropped (the SDK's own writer ends the server there)."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self.broken = False

    async def write(self, text: str) -> None:
        if not self.broken:
            await anyio.to_thread.run_sync(self._write, text.encode("utf-8"))

    async def flush(self) -> None:
        """Nothing to flush: :meth:`write` writes through."""

    def _write(self, data: bytes) -> None:
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(self._fd, view):]
        except OSError as exc:
            self.broken = True
            logger.warning("stdout closed, dropping output: %s", exc)


# the requests in flight -----------------------------------------------------------------


class Ledger:
    """Requests handed to the SDK and not answered yet; set ``drained`` once input ended
    and none is left (a request the client cancelled is not waited for: the SDK never
    answers those)."""

    def __init__(self) -> None:
        self.outstanding: Counter[RequestKey] = Counter()
        self.cancelled: set[RequestKey] = set()
        self.ended = False
        self.drained = anyio.Event()

    def note_inbound(self, message: types.JSONRPCMessage) -> None:
        if isinstance(message, types.JSONRPCRequest):
            key = coerce_request_id(message.id)
            self.outstanding[key] += 1
            self.cancelled.discard(key)
        elif (
            isinstance(message, types.JSONRPCNotification)
            and message.method == "notifications/cancelled"
        ):
            cancelled = as_request_id((message.params or {}).get("requestId"))
            if cancelled is not None:
                self.cancelled.add(coerce_request_id(cancelled))
                self._check()

    def settle(self, message: types.JSONRPCMessage) -> None:
        if not isinstance(message, types.JSONRPCResponse | types.JSONRPCError):
            return
        if message.id is None:
            return
        key = coerce_request_id(message.id)
        if self.outstanding[key] <= 1:
            self.outstanding.pop(key, None)
            self.cancelled.discard(key)
        else:
            self.outstanding[key] -= 1
        self._check()

    def end_of_input(self) -> None:
        self.ended = True
        self._check()

    def pending(self) -> int:
        return sum(n for key, n in self.outstanding.items() if key not in self.cancelled)

    def _check(self) -> None:
        if self.ended and self.pending() == 0:
            self.drained.set()


# the SDK's streams, wrapped -----------------------------------------------------------


def error_message(request_id: RequestKey | None, code: int, message: str) -> SessionMessage:
    return SessionMessage(
        types.JSONRPCError(
            jsonrpc="2.0", id=request_id, error=types.ErrorData(code=code, message=message)
        )
    )


def refusal(exc: Exception) -> tuple[int, RequestKey | None] | None:
    """The error code and id for a line the SDK's reader refused (``exc``); None for a
    malformed response from the client (answered by nothing).

    ``exc`` is the SDK's ``ValidationError``: an error at the top (empty ``loc``) means the
    line was not JSON; otherwise pydantic reports, per message kind, what is wrong with
    the value, and the value itself as the ``input`` of its errors.
    """
    errors = exc.errors() if isinstance(exc, ValidationError) else []
    if not errors or any(not error["loc"] for error in errors):
        return types.PARSE_ERROR, None
    value = next((e["input"] for e in errors if len(e["loc"]) <= 2
                  and isinstance(e["input"], dict)), None)
    if value is None:
        return types.INVALID_REQUEST, None
    if "method" not in value and ("result" in value or "error" in value):
        return None
    return types.INVALID_REQUEST, as_request_id(value.get("id"))


_Stream = TypeVar("_Stream", bound="_Wrapped")


class _Wrapped:
    """A stream of the SDK's wrapped: closing it closes the SDK's (``_inner``)."""

    _inner: Any

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self: _Stream) -> _Stream:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        await self.aclose()


class HeldInput(_Wrapped):
    """The SDK's read stream, as ``Server.run`` reads it (the ``ReadStream`` protocol)."""

    def __init__(self, inner: Any, out: Any, ledger: Ledger) -> None:
        self._inner = inner
        self._out = out
        self.ledger = ledger

    async def receive(self) -> SessionMessage:
        while True:
            try:
                item = await self._inner.receive()
            except anyio.EndOfStream:
                self.ledger.end_of_input()
                await self.ledger.drained.wait()
                raise
            if isinstance(item, SessionMessage):
                self.ledger.note_inbound(item.message)
                return item
            await self._refuse(item)

    async def _refuse(self, exc: Exception) -> None:
        refused = refusal(exc)
        if refused is None:
            logger.warning("malformed response from the client ignored")
            return
        code, request_id = refused
        if code == types.PARSE_ERROR:
            logger.warning("unparseable line: %s", _first_error(exc))
            await self._out.send(error_message(None, code, "Parse error"))
        else:
            logger.warning("not a JSON-RPC message: %s", _first_error(exc))
            await self._out.send(error_message(request_id, code, "Invalid Request"))

    def __aiter__(self) -> HeldInput:
        return self

    async def __anext__(self) -> SessionMessage:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None


class CountedOutput(_Wrapped):
    """The SDK's write stream, as ``Server.run`` writes it (the ``WriteStream`` protocol)."""

    def __init__(self, inner: Any, ledger: Ledger) -> None:
        self._inner = inner
        self._ledger = ledger

    async def send(self, item: SessionMessage, /) -> None:
        message = item.message
        if isinstance(message, types.JSONRPCError) and message.error.code == 0:
            logger.error("an exception reached the SDK: %s", message.error.message)
            item = error_message(message.id, types.INTERNAL_ERROR, "Internal error")
        await self._inner.send(item)
        # Only once it is handed over: the drain may end the server right after this.
        self._ledger.settle(message)


def _first_error(exc: Exception) -> str:
    if isinstance(exc, ValidationError) and exc.errors():
        return str(exc.errors()[0]["msg"])
    return f"{type(exc).__name__}: {exc}"


def initialization_options(server: Server[Any]) -> InitializationOptions:
    """The server's initialize answer, the same on every mcp 2.x: 2.0 to 2.2 advertise an
    empty ``experimental`` capability that 2.3 leaves out."""
    options = server.create_initialization_options()
    capabilities = options.capabilities.model_copy(update={"experimental": None})
    return options.model_copy(update={"capabilities": capabilities})


async def serve_stdio(server: Server[Any]) -> None:
    """Run ``server`` on stdin/stdout until stdin closes and every answer is written."""
    with claimed_stdio() as (fd_in, fd_out):
        stdin, stdout = cast(Any, StdinLines(fd_in)), cast(Any, StdoutFrames(fd_out))
        async with stdio_server(stdin=stdin, stdout=stdout) as (read, write):
            ledger = Ledger()
            await server.run(HeldInput(read, write, ledger), CountedOutput(write, ledger),
                             initialization_options(server))
