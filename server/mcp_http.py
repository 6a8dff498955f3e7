"""``doc-index serve --http``: the same MCP server on the SDK's streamable HTTP transport.

One SDK ``Server`` object (:func:`.mcp_server.build_server`, the one stdio serves) behind
``mcp.server.streamable_http_manager.StreamableHTTPSessionManager``; the SDK reads and
writes every JSON-RPC message. uvicorn and starlette (dependencies of the SDK, named in
pyproject.toml because this module imports them) serve that ASGI app on the socket
:mod:`.http_access` bound. Imported only when serving HTTP.

Choices (docs/deployment.md tells operators):

- **Stateless.** Each POST is answered by a fresh transport and no ``Mcp-Session-Id`` is
  issued: the SDK keeps a stateful session in the memory of the process that created it,
  so behind a load balancer without sticky routing a client's next request, sent to
  another replica, would get ``404 Session not found``. The tools need no session (no
  server-to-client requests, no subscriptions), so any replica answers any request.
- **JSON responses**, not an SSE stream per POST: one answer per request, which any HTTP
  proxy passes on without buffering settings.
- **DNS rebinding.** On a loopback address without a token, the SDK's check
  (``TransportSecuritySettings``) accepts only Host and Origin headers naming a loopback
  host and this port: a web page cannot reach the server through a name rebound to
  127.0.0.1. With a token there is no such check (the page cannot know the token), so a
  load balancer may send its own name as the Host.
- **The token** (:func:`.http_access.http_token`), when there is one, is checked by the
  SDK's bearer middleware with :class:`StaticToken`: SHA-256 digests compared with
  ``hmac.compare_digest`` (constant time, and the length is not told either). A missing
  or wrong token gets ``401`` with ``WWW-Authenticate: Bearer`` and the same generic body
  either way. Nothing logs it (uvicorn's access log is off).
- **Shutdown.** SIGTERM and SIGINT stop accepting, let the requests in flight finish,
  and end the process (status 0 after SIGTERM, 130 after SIGINT): uvicorn as shipped
  raises the signal again after its graceful shutdown, which would kill the process by it.
- **Readiness.** One stderr line once the socket listens and the app has started, naming
  the URL and whether a token is required (never the token).
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import signal
import socket
import sys
from collections.abc import Iterator
from typing import Any

import uvicorn
from mcp.server.auth.middleware.bearer_auth import BearerAuthBackend, RequireAuthMiddleware
from mcp.server.auth.provider import AccessToken
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.routing import Route

from ..foundation.errors import EXIT_INTERRUPTED
from .http_access import Listen

MCP_PATH = "/mcp"
# Requests in flight get this long to finish after SIGTERM (a safety net: answers take ms).
GRACEFUL_SECONDS = 30


class StaticToken:
    """The SDK's ``TokenVerifier`` for one shared token: a constant-time comparison of
    SHA-256 digests (so neither the content nor the length leaks through timing)."""

    CLIENT_ID = "doc-index-http"

    def __init__(self, token: str) -> None:
        self._digest = hashlib.sha256(token.encode("ascii")).digest()

    async def verify_token(self, token: str) -> AccessToken | None:
        # Starlette decodes header values as latin-1: these are the bytes the client sent.
        offered = hashlib.sha256(token.encode("latin-1", "replace")).digest()
        if not hmac.compare_digest(offered, self._digest):
            return None
        return AccessToken(token="", client_id=self.CLIENT_ID, scopes=[])


# the app and the server -----------------------------------------------------------------


def security_settings(listen: Listen, port: int,
                      token: str | None) -> TransportSecuritySettings | None:
    """The SDK's DNS-rebinding check on a loopback address without a token; None (no
    check) where a token guards (a page a rebound name loads cannot know it) and a load
    balancer may send its own name as the Host."""
    if token is not None or not listen.loopback:
        return None
    names = ["127.0.0.1", "localhost", "[::1]"]
    hosts = [f"{name}:{port}" for name in names] + (names if port == 80 else [])
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=hosts,
        allowed_origins=[f"http://{host}" for host in hosts])


def http_app(server: Server[Any], token: str | None,
             security: TransportSecuritySettings | None) -> Starlette:
    """The ASGI app: the SDK's session manager (stateless, JSON answers) at ``/mcp``,
    behind the SDK's bearer middleware when there is a token."""
    manager = StreamableHTTPSessionManager(server, json_response=True, stateless=True,
                                           security_settings=security)
    endpoint: Any = StreamableHTTPASGIApp(manager)
    middleware = []
    if token is not None:
        middleware.append(Middleware(AuthenticationMiddleware,
                                     backend=BearerAuthBackend(StaticToken(token))))
        endpoint = RequireAuthMiddleware(endpoint, required_scopes=[])
    return Starlette(routes=[Route(MCP_PATH, endpoint=endpoint)], middleware=middleware,
                     lifespan=lambda app: manager.run())


def url_of(listen: Listen, port: int) -> str:
    host = listen.address[0]
    return f"http://[{host}]:{port}{MCP_PATH}" if ":" in host else \
        f"http://{host}:{port}{MCP_PATH}"


def serve_http(server: Server[Any], listen: Listen, sock: socket.socket,
               token: str | None) -> int:
    """Serve ``server`` on ``sock`` until SIGTERM or SIGINT; the exit status."""
    port = sock.getsockname()[1]
    app = http_app(server, token, security_settings(listen, port, token))
    config = uvicorn.Config(app, log_config=None, access_log=False, lifespan="on",
                            timeout_graceful_shutdown=GRACEFUL_SECONDS, server_header=False)
    auth = "bearer token required" if token is not None else "no token (loopback only)"
    runner = _Uvicorn(config, ready=f"doc-index serve: listening on {url_of(listen, port)}; "
                                    f"{auth}")
    runner.run(sockets=[sock])
    return EXIT_INTERRUPTED if signal.SIGINT in runner.signals else 0


class _Uvicorn(uvicorn.Server):
    """uvicorn's server with a readiness line, and signals that end it with a status
    instead of being raised again once it has shut down."""

    def __init__(self, config: uvicorn.Config, ready: str) -> None:
        super().__init__(config)
        self.ready = ready
        self.signals: list[int] = []

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=sockets)
        if self.started:
            print(self.ready, file=sys.stderr, flush=True)

    def handle_exit(self, sig: int, frame: Any) -> None:
        self.signals.append(sig)
        super().handle_exit(sig, frame)

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        previous = {sig: signal.signal(sig, self.handle_exit)
                    for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
