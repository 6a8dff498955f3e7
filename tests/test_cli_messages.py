"""``doc-index`` errors say what to do, ``--root`` goes anywhere, ``mcp-config`` (issue 13).

Every message is checked as the exact bytes a real process prints; the ``context`` CLI
and MCP keep the spec's canonical texts.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import SAFETY_TIMEOUT, run_cli, write_tree
from mcp_support import RawServer, context_cli, initialize, result_text, tool_call

DOC = {"a.md": "# Install\n\nzebra crossing\n"}


@pytest.fixture
def built(tmp_path: Path) -> Path:
    """A root holding caches ``local-docs``, ``flask`` and ``pallets-flask``."""
    root = tmp_path / "root"
    src = write_tree(tmp_path / "docs", DOC)
    for name in ("local-docs", "flask", "pallets-flask"):
        done = run_cli("build", str(src), "--root", str(root), "--name", name)
        assert done.returncode == 0, done.stderr
    return root


def _result(done: subprocess.CompletedProcess[bytes]) -> tuple[int, bytes, bytes]:
    return done.returncode, done.stdout, done.stderr


def test_root_before_and_after_the_subcommand(built: Path, tmp_path: Path) -> None:
    after = _result(run_cli("list", "--json", "--root", str(built)))  # (no age: no clock)
    assert after[0] == 0 and b'"local-docs"' in after[1]
    assert _result(run_cli("--root", str(built), "list", "--json")) == after
    # in both places the one after the subcommand wins
    assert _result(run_cli("--root", str(tmp_path / "none"), "list", "--json", "--root",
                           str(built))) == after
    elsewhere = run_cli("--root", str(built), "list", "--root", str(tmp_path / "none"))
    assert elsewhere.returncode == 4 and b"none does not exist" in elsewhere.stderr


@pytest.mark.parametrize("command", ["resolve", "inspect", "delete"])
def test_missing_cache_names_it_and_suggests(built: Path, command: str) -> None:
    extra = ["zebra"] if command == "resolve" else []
    done = run_cli(command, "flsk", *extra, "--root", str(built))
    assert _result(done) == (4, b"", (
        f"error: no cache named 'flsk' under {built}; did you mean: flask, pallets-flask? "
        "(doc-index list shows them)\n").encode())
    far = run_cli(command, "zzzzzz", *extra, "--root", str(built))
    assert _result(far) == (4, b"", (
        f"error: no cache named 'zzzzzz' under {built} (doc-index list shows the caches "
        "there)\n").encode())


def test_a_budget_too_small_for_any_match_says_so_on_stderr(tmp_path: Path) -> None:
    """stdout is the spec's answer, byte for byte as ``context`` prints it; a person also
    reads why it holds no document."""
    built = tmp_path / "root"
    text = "# Crossings\n\n" + "A zebra crossing lets people cross the road safely.\n" * 8
    src = write_tree(tmp_path / "src", {"a.md": text})
    assert run_cli("build", str(src), "--root", str(built), "--name", "flask").returncode == 0
    done = run_cli("resolve", "flask", "zebra", "--budget", "50", "--root", str(built))
    same = run_cli("resolve", "--cache", str(built / "flask"), "--query", "zebra",
                   "--budget", "50", module="doc_index.server.context_cli")
    assert done.returncode == 0 and done.stdout == same.stdout and same.stderr == b""
    assert json.loads(done.stdout)["selection"]["documents_excluded_by_budget"] == 1
    assert done.stderr == (b"note: no section fits in 50 tokens with its metadata (1 matched): "
                           b"ask again with --budget 2000\n")
    fits = run_cli("resolve", "flask", "zebra", "--budget", "2000", "--root", str(built))
    assert fits.returncode == 0 and fits.stderr == b""


def test_delete_of_a_missing_cache_is_one_error_line(built: Path) -> None:
    done = run_cli("delete", "nope", "--root", str(built))
    assert _result(done) == (4, b"", (
        f"error: no cache named 'nope' under {built} (doc-index list shows the caches "
        "there)\n").encode())
    ok = run_cli("delete", "flask", "--root", str(built))
    assert _result(ok) == (0, b"", b"deleted: flask\n")


def test_empty_root_says_to_build(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    done = run_cli("inspect", "x", "--root", str(root))
    assert _result(done) == (4, b"", (
        f"error: no cache named 'x' under {root}; it holds no cache yet (doc-index build "
        f"SOURCE --root {root} makes one)\n").encode())


def test_list_on_a_missing_root(tmp_path: Path) -> None:
    root = tmp_path / "nowhere"
    for argv in (["list", "--root", str(root)], ["resolve", "x", "q", "--root", str(root)]):
        assert _result(run_cli(*argv)) == (4, b"", (
            f"error: cache root {root} does not exist; build a cache first (doc-index build "
            f"SOURCE --root {root}) or pass --root DIR\n").encode())
    assert not root.exists()
    # the spec's CLI keeps its canonical message
    spec = context_cli("list-caches", "--root", str(root))
    assert _result(spec) == (4, b"", b"error: Cache does not exist\n")


def test_context_cli_and_mcp_keep_the_canonical_message(built: Path) -> None:
    spec = context_cli("inspect", "--cache", str(built / "flsk"))
    assert _result(spec) == (4, b"", b"error: Cache does not exist\n")
    argv = [sys.executable, "-m", "doc_index.cli", "serve", "--root", str(built)]
    with RawServer(argv) as server:
        server.request(initialize())
        answer = server.request(tool_call(1, "context.inspect_cache", {"cache": "flsk"}))
        server.close()
    assert result_text(answer) == \
        '{"error":{"code":"cache_missing","message":"Cache does not exist"}}\n'


def test_hook_install_outside_a_repository_is_a_usage_error(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    done = run_cli("hook", "install", str(plain), "--root", str(tmp_path / "root"))
    assert _result(done) == (1, b"", (
        f"error: not a git repository: {plain}; give the path of a git work tree\n").encode())


# --- mcp-config ---------------------------------------------------------------------------

def _parse(client: str, text: str) -> tuple[str, list[str]]:
    if client == "codex":
        tomllib = pytest.importorskip("tomllib")  # Python 3.11+
        server = tomllib.loads(text)["mcp_servers"]["doc-index"]
    else:
        data = json.loads(text)
        key = "servers" if client == "vscode" else "mcpServers"
        assert list(data) == [key] and list(data[key]) == ["doc-index"]
        server = data[key]["doc-index"]
        if client == "vscode":
            assert server["type"] == "stdio"
    return server["command"], server["args"]


@pytest.mark.parametrize("client", ["claude-code", "claude-desktop", "cursor", "vscode",
                                    "codex"])
def test_mcp_config_block_starts_the_server(built: Path, client: str) -> None:
    done = run_cli("mcp-config", "--client", client, "--root", str(built))
    assert done.returncode == 0 and done.stderr == b""
    command, args = _parse(client, done.stdout.decode("utf-8"))
    # this installation's console script (the venv's, next to the test interpreter)
    assert command == os.path.join(os.path.dirname(sys.executable), "doc-index")
    assert os.path.isabs(command) and os.access(command, os.X_OK)
    # Every client's model API takes [a-zA-Z0-9_-] tool names only (Claude Code and VS Code
    # too: anthropics/claude-code issues 985 and 5835): every block publishes underscores.
    assert args == ["serve", "--root", str(built), "--tool-names", "underscore"]
    with RawServer([command, *args], cwd=Path("/")) as server:
        hello = server.request(initialize())
        assert hello["result"]["serverInfo"]["name"]
        tools = server.request({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        listed = server.request(tool_call(1, "context_list_caches", {}))
        server.close()
    names = [tool["name"] for tool in tools["result"]["tools"]]
    assert names and all(re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", name) for name in names), names
    assert json.loads(result_text(listed))["caches"][0]["path"] == "flask"


def test_mcp_config_codex_exact_bytes(tmp_path: Path) -> None:
    root = tmp_path / 'r "q"'
    done = run_cli("mcp-config", "--client", "codex", "--root", str(root))
    script = os.path.join(os.path.dirname(sys.executable), "doc-index")
    quoted = str(root).replace('"', "\\u0022")
    assert _result(done) == (0, (
        "[mcp_servers.doc-index]\n"
        f'command = "{script}"\n'
        f'args = ["serve", "--root", "{quoted}", "--tool-names", "underscore"]\n'
    ).encode(), b"")


def test_mcp_config_root_before_the_subcommand_and_relative(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "doc_index.cli", "--root", "rel",
                           "mcp-config", "--client", "vscode"], capture_output=True,
                          cwd=tmp_path, timeout=SAFETY_TIMEOUT)
    assert done.returncode == 0, done.stderr
    assert _parse("vscode", done.stdout.decode())[1] == ["serve", "--root",
                                                         str(tmp_path / "rel"), "--tool-names",
                                                         "underscore"]


def test_mcp_config_needs_a_known_client() -> None:
    done = run_cli("mcp-config", "--client", "emacs")
    assert done.returncode == 1 and done.stdout == b""
    assert done.stderr.startswith(b"error: argument --client: invalid choice: 'emacs'")
    assert done.stderr.count(b"\n") == 1


# --------------------------------------------------------------------------- JSON listings
# list --json and inspect --json escape every character a terminal would act on (C1
# controls, DEL, U+2028, bidi overrides) and parse back to the same text.


HOSTILE = "\u009b2J\u0085x\u2028y\u202eevil\u007f\U000e0001"


def test_json_listings_escape_every_control_and_parse_to_the_same_text(tmp_path: Path) -> None:
    root = tmp_path / "root"
    docs = write_tree(tmp_path / "docs", {"a.md": "# Title\n\nSome text.\n"})
    assert run_cli("build", str(docs), "--root", str(root), "--name", "n").returncode == 0
    manifest = root / "n" / "manifest.json"
    text = manifest.read_text()
    assert '"ref":null' in text
    escaped = json.dumps(HOSTILE)[1:-1]  # as someone writing the root could spell it
    manifest.write_text(text.replace('"ref":null', f'"ref":"{escaped}"', 1))
    for args in (["list", "--json"], ["inspect", "n", "--json"]):
        done = run_cli(*args, "--root", str(root))
        assert done.returncode == 0, done.stderr
        out = done.stdout.decode("utf-8")
        assert out.endswith("\n") and out[:-1].isprintable(), ascii(out)
        value = json.loads(out)
        cache = value["caches"][0] if "caches" in value else value
        assert cache["source"]["ref"] == HOSTILE, cache
