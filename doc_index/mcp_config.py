"""``doc-index mcp-config``: the MCP configuration block of this installation for a client.

The command is the ``doc-index`` console script next to this interpreter (where pip puts
it in a virtual environment or a system install), else this interpreter with ``-m
doc_index.cli``; ``shutil.which`` is not asked, since the first ``doc-index`` on PATH may
belong to another installation. Paths are absolute.

Every block starts the server with ``--tool-names underscore`` (``context_resolve``):
the model APIs behind these clients accept only ``[a-zA-Z0-9_-]`` in a tool name, and one
dotted name hides the whole server (Claude Desktop, Cursor, Codex; Claude Code and VS
Code pass the names on to such APIs too: anthropics/claude-code issues 985 and 5835).
The server accepts calls under either spelling.

With ``--http URL`` the block points the client at a running ``serve --http`` instead
(the operator starts it with ``--tool-names underscore`` for these clients): each client's
documented form for a remote server (docs/deployment.md cites them), the bearer token
taken from where that client reads secrets, never written into the block: Claude Code's
``${DOC_INDEX_HTTP_TOKEN}`` expansion in ``headers``, Cursor's ``${env:...}``, a VS Code
``promptString`` input (``password``: kept in its secret storage), Codex's
``bearer_token_env_var``. Every block carries it, a loopback URL's too: a server started
without a token ignores the header, and one started with a token (on loopback too) needs
it. Claude Desktop connects to remote servers only through its
Connectors settings, with OAuth or no auth, never from its configuration file: refused.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from .foundation.errors import UsageError
from .foundation.printable import printable

# client -> the shape of its configuration block
_CLIENTS: dict[str, str] = {
    "claude-code": "mcpServers",
    "claude-desktop": "mcpServers",
    "cursor": "mcpServers",
    "vscode": "servers",
    "codex": "toml",
}
CLIENTS = tuple(_CLIENTS)
SERVER_NAME = "doc-index"
TOKEN_ENV = "DOC_INDEX_HTTP_TOKEN"  # (server/http_access.py reads the same variable)
VSCODE_INPUT = "doc-index-token"
# client -> the Authorization header's value in its block (codex: bearer_token_env_var)
_BEARER = {
    "claude-code": f"Bearer ${{{TOKEN_ENV}}}",
    "cursor": f"Bearer ${{env:{TOKEN_ENV}}}",
    "vscode": f"Bearer ${{input:{VSCODE_INPUT}}}",
}


def server_command(root: Path, *, underscore: bool,
                   model_dir: Path | None = None) -> tuple[str, list[str]]:
    """The absolute command and its arguments that start ``doc-index serve`` on ``root``
    (with ``--model model_dir``: the server answers by meaning with the model this
    installation found, whatever the client's environment and user cache)."""
    script = Path(sys.executable).parent / ("doc-index.exe" if os.name == "nt" else "doc-index")
    if script.is_file() and os.access(script, os.X_OK):
        command, args = os.path.abspath(script), []
    else:
        command, args = os.path.abspath(sys.executable), ["-m", "doc_index.cli"]
    args += ["serve", "--root", os.path.abspath(root)]
    if underscore:
        args += ["--tool-names", "underscore"]
    if model_dir is not None:
        args += ["--model", os.path.abspath(model_dir)]
    for text in (command, *args):
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:  # a path with bytes that are not UTF-8 (surrogates)
            raise UsageError(f"{ascii(text)} is not valid UTF-8: no client configuration "
                             "can hold it; use a root whose path is UTF-8") from None
    return command, args


def config_text(client: str, root: Path, model_dir: Path | None = None) -> str:
    """The configuration block for ``client`` (one of CLIENTS), ending with a newline;
    ``model_dir``: the embedding model's folder the server is started with."""
    import json

    if client not in _CLIENTS:
        raise UsageError(f"unknown client {client!r}; one of: {', '.join(CLIENTS)}")
    shape = _CLIENTS[client]
    command, args = server_command(root, underscore=True, model_dir=model_dir)
    if shape == "toml":
        return (f"[mcp_servers.{SERVER_NAME}]\ncommand = {_toml_string(command)}\n"
                f"args = [{', '.join(map(_toml_string, args))}]\n")
    server: dict[str, object] = {"type": "stdio"} if shape == "servers" else {}
    server.update(command=command, args=args)
    return json.dumps({shape: {SERVER_NAME: server}}, indent=2, ensure_ascii=False) + "\n"


def http_config_text(client: str, url: str) -> str:
    """The block that points ``client`` at the ``serve --http`` server at ``url``."""
    import json

    if client not in _CLIENTS:
        raise UsageError(f"unknown client {client!r}; one of: {', '.join(CLIENTS)}")
    if client == "claude-desktop":
        raise UsageError("Claude Desktop takes a remote server only in Settings > Connectors "
                         "(OAuth or no auth), not in its configuration file: give it the "
                         "stdio block (mcp-config --client claude-desktop, without --http)")
    _check_url(url)
    if client == "codex":
        return (f"[mcp_servers.{SERVER_NAME}]\nurl = {_toml_string(url)}\n"
                f"bearer_token_env_var = {_toml_string(TOKEN_ENV)}\n")
    server: dict[str, object] = {} if client == "cursor" else {"type": "http"}
    server.update(url=url, headers={"Authorization": _BEARER[client]})
    block: dict[str, object] = {_CLIENTS[client]: {SERVER_NAME: server}}
    if client == "vscode":
        block["inputs"] = [{"type": "promptString", "id": VSCODE_INPUT, "password": True,
                            "description": "doc-index HTTP bearer token"}]
    return json.dumps(block, indent=2, ensure_ascii=False) + "\n"


def _check_url(url: str) -> None:
    """UsageError for a URL no client should be given: not http or https, no host, a port
    that is no number, credentials in it, or characters that are not printable."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        host = parts.hostname
        parts.port  # noqa: B018 (a port that is no number raises here)
    except ValueError:
        host = None
    if (host is None or parts.scheme not in ("http", "https") or parts.username is not None
            or parts.password is not None or printable(url) != url or " " in url):
        # (the URL is not echoed: it may hold a password)
        raise UsageError("--http: give the server's URL as clients reach it, e.g. "
                         "http://127.0.0.1:8765/mcp, with no credentials in it (the token "
                         f"goes in ${TOKEN_ENV})")


def _toml_string(text: str) -> str:
    """A TOML basic string: quote, backslash and control characters escaped."""
    out = []
    for char in text:
        if char in '"\\' or ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\u{ord(char):04X}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'
