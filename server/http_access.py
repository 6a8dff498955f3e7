"""Who may reach ``doc-index serve --http``: the address it binds and the bearer token.

SDK-free, so a bad ``--http`` address, an unsafe token file or a non-loopback address
without a token is one ``error:`` line before the SDK (about a second) is imported.

- ``--http PORT`` binds 127.0.0.1; ``HOST:PORT`` and ``[IPv6]:PORT`` another address. The
  resolved address decides: anything that is not loopback needs a token.
- The token comes from ``--token-file FILE`` or ``$DOC_INDEX_HTTP_TOKEN``, never from the
  command line (argv is visible to every user of the machine). The file must be a regular
  file that no other user can read or change (mode 600 or 640: ssh's rule for a key); it
  is read once at start. The token must be RFC 6750 ``b64token`` characters (what a client
  sends after ``Bearer `` unquoted), at least 16 of them. No message holds a byte of it.
"""

from __future__ import annotations

import ipaddress
import os
import re
import socket
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

from ..foundation.errors import UsageError
from ..foundation.printable import printable

TOKEN_ENV = "DOC_INDEX_HTTP_TOKEN"
DEFAULT_HOST = "127.0.0.1"
MIN_TOKEN_CHARS = 16
MAX_TOKEN_BYTES = 4096
# RFC 6750's b64token: what a client can send after "Bearer " without quoting.
_TOKEN_SYNTAX = re.compile(r"[A-Za-z0-9\-._~+/]+=*")
_MAKE_ONE = "python3 -c 'import secrets; print(secrets.token_urlsafe(32))'"


class Listen(NamedTuple):
    """Where ``--http`` listens: the host as given, the port, and the resolved address."""

    host: str
    port: int
    family: int
    address: tuple[Any, ...]

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return printable(f"{host}:{self.port}")

    @property
    def loopback(self) -> bool:
        return ipaddress.ip_address(self.address[0].split("%", 1)[0]).is_loopback


def parse_listen(text: str) -> tuple[str, int]:
    """``PORT``, ``HOST:PORT`` or ``[IPv6]:PORT`` -> (host, port); UsageError otherwise."""
    host, sep, port_text = text.rpartition(":")
    if not sep:
        host, port_text = DEFAULT_HOST, text
    elif host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    elif ":" in host:
        host = ""  # an IPv6 address without brackets: its last group is no port
    if not host or not (port_text.isascii() and port_text.isdigit()) or int(port_text) > 65535:
        raise UsageError(f"--http {printable(text)!r}: give PORT, HOST:PORT or [IPv6]:PORT "
                         f"(e.g. --http 8765 for {DEFAULT_HOST}:8765)")
    return host, int(port_text)


def resolve_listen(text: str) -> Listen:
    """The address ``--http TEXT`` binds (the first the resolver gives for its host)."""
    host, port = parse_listen(text)
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM,
                                   flags=socket.AI_PASSIVE | socket.AI_NUMERICSERV)
    except (OSError, UnicodeError) as exc:
        raise UsageError(f"--http {printable(text)!r}: cannot resolve {printable(host)!r} "
                         f"({exc}); give an IP address or a name of this machine") from None
    family, _, _, _, address = infos[0]
    return Listen(host, port, family, tuple(address))


def bind(listen: Listen) -> socket.socket:
    """A listening socket on ``listen``; UsageError naming the address when it cannot be."""
    # IPPROTO_TCP named, not 0: asyncio sets TCP_NODELAY only on sockets whose ``proto``
    # says TCP, and without it every answer waited for the client's delayed ACK (Nagle):
    # a ping took 46 ms instead of 2 (measured over loopback, 2-core VM at load 12).
    sock = socket.socket(listen.family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if listen.family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        sock.bind(listen.address)
        sock.listen(socket.SOMAXCONN)
    except OSError as exc:
        sock.close()
        raise UsageError(f"cannot listen on {listen}: "
                         f"{exc.strerror or exc}; choose another --http address") from None
    sock.set_inheritable(False)
    return sock


def check_access(listen: Listen, token: str | None) -> None:
    """UsageError when ``listen`` is not loopback and there is no token."""
    if token is None and not listen.loopback:
        raise UsageError(
            f"--http {listen} is not a loopback address: other "
            f"machines could reach it, so a bearer token is required; put one in a file "
            f"(--token-file FILE, mode 600) or in ${TOKEN_ENV}, or serve on 127.0.0.1")


def http_token(token_file: str | os.PathLike[str] | None,
               environ: Mapping[str, str]) -> str | None:
    """The bearer token: from ``token_file`` when given, else ``$DOC_INDEX_HTTP_TOKEN``
    (empty is unset), else None. UsageError for a token file or value that is unsafe or
    malformed (the message never holds the token)."""
    if token_file is not None:
        return _checked_token(_read_token_file(Path(token_file)), f"the token file "
                              f"{printable(os.fspath(token_file))}")
    value = environ.get(TOKEN_ENV)
    if not value:
        return None
    return _checked_token(value, f"${TOKEN_ENV}")


def _read_token_file(path: Path) -> str:
    where = printable(os.fspath(path))
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise UsageError(f"cannot read the token file {where}: {exc.strerror}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UsageError(f"the token file {where} is not a regular file")
        if st.st_mode & 0o027:
            raise UsageError(f"the token file {where} can be read or changed by other "
                             f"users (mode {stat.S_IMODE(st.st_mode):o}): chmod 600 it")
        data = b""
        while len(data) <= MAX_TOKEN_BYTES and (chunk := os.read(fd, MAX_TOKEN_BYTES + 1)):
            data += chunk
    finally:
        os.close(fd)
    if len(data) > MAX_TOKEN_BYTES:
        raise UsageError(f"the token file {where} holds more than {MAX_TOKEN_BYTES} bytes: "
                         "put the token alone in it")
    return data.decode("ascii", "replace")


def _checked_token(text: str, where: str) -> str:
    token = text.strip()
    if not _TOKEN_SYNTAX.fullmatch(token):
        raise UsageError(f"{where} is not a bearer token (letters, digits and -._~+/ only, "
                         f"one line); make one with {_MAKE_ONE}")
    if len(token) < MIN_TOKEN_CHARS:
        raise UsageError(f"{where} is shorter than {MIN_TOKEN_CHARS} characters: too easy to "
                         f"guess; make one with {_MAKE_ONE}")
    return token
