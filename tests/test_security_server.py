"""A cache changed under a running server, a flood of
requests, out-of-range numbers, control characters in names, ``context build --force``.

Real ``doc-index serve`` processes on real pipes (``tests/mcp_support.py``) and real CLI
processes. Every wait is for an event (a response line, EOF, an exit); the timeouts are
safety nets only.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import build, run_cli, write_tree
from mcp_support import RawServer, error_text, initialize, make_root, result_text, tool_call

SAFETY_S = 120.0
KEY = "local-src"
TREE = {
    # More than a heading and a few words: a one-line stub is never read (search.packing).
    "docs/retry.md": "# Retry\n\nHow to retry a request after a timeout, with a pause.\n",
    "docs/other.md": "# Other\n\nZebras and their timeout habits.\n",
}


def serve_argv(root: Path) -> list[str]:
    return [sys.executable, "-m", "doc_index.cli", "serve", "--root", str(root)]


def resolve(srv: RawServer, request_id: int, cache: str, query: str) -> dict[str, Any]:
    srv.send(tool_call(request_id, "context.resolve",
                       {"cache": cache, "query": query, "budget": 4000}))
    response = srv.recv(timeout=SAFETY_S)
    assert response["id"] == request_id, response
    return response


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = make_root(tmp_path / "root")  # the Context Engine v0 fixtures ("minimal", ...)
    build(write_tree(tmp_path / "src", TREE), root, name="src")
    return root


# a FIFO swapped into a warm cache --------------------------------------------


@pytest.mark.parametrize(
    ("cache", "swapped", "query"),
    [
        (KEY, "docs/retry.md", "retry timeout"),  # a raw file, read at each resolve
        (KEY, "manifest.json", "retry timeout"),  # native manifest: the stamp moves, reload
        ("minimal", "manifest.json", "guide"),  # a v0 manifest
    ],
)
def test_a_fifo_placed_in_a_warm_cache_is_an_error_not_a_hang(
    root: Path, cache: str, swapped: str, query: str
) -> None:
    with RawServer(serve_argv(root)) as srv:
        srv.send(initialize())
        assert "result" in srv.recv(timeout=SAFETY_S)
        first = resolve(srv, 1, cache, query)
        assert "isError" not in first["result"], first
        path = root / cache / swapped
        path.unlink()
        os.mkfifo(path)
        # Old servers blocked here for ever, opening the FIFO for reading.
        second = resolve(srv, 2, cache, query)
        assert second["result"].get("isError") is True, second
        assert result_text(second) == error_text("io_error")
        # The server goes on answering, this cache included.
        assert result_text(resolve(srv, 3, cache, query)) == error_text("io_error")
        other = resolve(srv, 4, "minimal" if cache == KEY else KEY, "retry")
        assert "isError" not in other["result"], other
        assert srv.close(timeout=SAFETY_S) == []
    assert srv.proc.returncode == 0
    assert b"Traceback" not in srv.stderr


def test_inspect_of_a_fifo_manifest_is_not_valid_not_a_hang(root: Path) -> None:
    with RawServer(serve_argv(root)) as srv:
        srv.send(initialize())
        assert "result" in srv.recv(timeout=SAFETY_S)
        path = root / KEY / "manifest.json"
        path.unlink()
        os.mkfifo(path)
        srv.send(tool_call(1, "context.inspect_cache", {"cache": KEY}))
        response = srv.recv(timeout=SAFETY_S)
        assert json.loads(result_text(response))["valid"] is False
        srv.close(timeout=SAFETY_S)


# every request read before EOF is answered ----------------------------------

# The server, with every tool call held until the reader has seen stdin's EOF: all the
# requests are then still queued when the drain starts, on any machine (the transport
# must have no wall-clock limit on it).
GATED_SERVER = """
import sys, threading
from doc_index.server import mcp_transport
from doc_index.server import spec_texts as tools
eof_read = threading.Event()
read_line = mcp_transport.StdinLines.read_line
def gated_read_line(self):
    line = read_line(self)
    if line is None:
        eof_read.set()
    return line
mcp_transport.StdinLines.read_line = gated_read_line
real_resolve = tools.resolve
def held_resolve(*args, **kwargs):
    eof_read.wait()
    return real_resolve(*args, **kwargs)
tools.resolve = held_resolve
from doc_index.cli.command import main
sys.exit(main(["serve", *sys.argv[1:]]))
"""


@pytest.mark.parametrize("cache", [KEY, "minimal"])
def test_500_queued_resolves_are_all_answered_after_eof(root: Path, cache: str) -> None:
    count = 500
    calls = [
        tool_call(i, "context.resolve", {"cache": cache, "query": f"retry guide {i}",
                                         "budget": 100})
        for i in range(1, count + 1)
    ]
    with RawServer([sys.executable, "-c", GATED_SERVER, "--root", str(root)]) as srv:
        srv.send(initialize(), *calls)
        responses = srv.close(timeout=SAFETY_S)  # reads until EOF, then the exit
    ids = [r["id"] for r in responses]
    assert sorted(ids) == list(range(count + 1)), f"{len(ids)} answers"  # each id once
    answers = [r for r in responses if r["id"] != 0]
    assert all("error" not in r and "isError" not in r["result"] for r in answers), [
        r for r in answers if "error" in r or r["result"].get("isError")
    ][:3]
    assert srv.proc.returncode == 0


# numbers out of range ---------------------------------------------------------


@pytest.mark.parametrize("value", [str(10**30), "-1", "0", str((1 << 30) + 1)])
def test_max_file_bytes_out_of_range_is_a_usage_error(tmp_path: Path, value: str) -> None:
    source = write_tree(tmp_path / "src", TREE)
    proc = run_cli("build", str(source), "--root", str(tmp_path / "root"),
                   f"--max-file-bytes={value}")
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout == b""
    lines = proc.stderr.decode().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), lines
    assert value in lines[0] and f"1 to {1 << 30}" in lines[0], lines
    assert not (tmp_path / "root" / KEY).exists()


@pytest.mark.parametrize("byte_length", [10**30, 1 << 40, "beyond"])
def test_absurd_byte_length_in_a_manifest_is_cache_invalid(
    tmp_path: Path, byte_length: int | str
) -> None:
    root = tmp_path / "root"
    build(write_tree(tmp_path / "src", TREE), root, name="src")
    manifest_path = root / KEY / "manifest.json"
    manifest = json.loads(manifest_path.read_bytes())
    for section in manifest["sections"]:
        raw_size = (root / KEY / section["file"]).stat().st_size
        section["byte_length"] = raw_size + 1 if byte_length == "beyond" else byte_length
    manifest_path.write_text(json.dumps(manifest))
    proc = run_cli("resolve", KEY, "retry timeout", "--root", str(root))
    assert (proc.returncode, proc.stdout) == (5, b""), proc.stderr
    assert proc.stderr == b"error: Cache exists but is invalid\n"
    # The next build repairs the damage.
    assert run_cli("build", str(tmp_path / "src"), "--root", str(root), "--name", KEY
                   ).returncode == 0
    assert run_cli("resolve", KEY, "retry timeout", "--root", str(root)).returncode == 0


# control characters in names are escaped in every printed line -------------

HOSTILE = "\x1b]0;owned\x07\x1b[2J\r\x85\u2028\x7f"


def _raw_controls(data: bytes) -> list[str]:
    text = data.decode("utf-8", "replace")
    return [hex(ord(c)) for c in text if c != "\n" and not c.isprintable()]


def test_names_with_control_characters_are_escaped_in_the_build_output(tmp_path: Path) -> None:
    source = write_tree(tmp_path / "src", {
        "plain.md": "# Plain\n\nzebra text\n",
        f"good{HOSTILE}.md": "# Good\n\nzebra text\n",  # control characters: skipped, listed
        f"skipped{HOSTILE}.md": bytes(range(256)) * 8,
    })
    root = tmp_path / f"root{HOSTILE}"
    proc = run_cli("build", str(source), "--root", str(root))
    assert proc.returncode == 0, proc.stderr
    assert _raw_controls(proc.stderr) == [], proc.stderr
    assert b"skipped 'skipped\\x1b]0;owned" in proc.stderr, proc.stderr  # escaped, listed
    assert b"\\x1b" in proc.stderr.split(b"\n")[0]  # the cache_dir on the first line
    for args in (["delete", f"x{HOSTILE}"], ["build", str(tmp_path / f"none{HOSTILE}")]):
        proc = run_cli(*args, "--root", str(root))
        assert proc.returncode != 0 and proc.stderr.count(b"\n") == 1, proc.stderr
        assert _raw_controls(proc.stderr) == [], proc.stderr


def test_hook_install_lines_escape_control_characters(tmp_path: Path) -> None:
    # ESC, BEL, DEL only: git_hooks reads git's answers with str.splitlines, which a CR,
    # NEL or U+2028 in the path would split (a failure to install, not an injection).
    repo = tmp_path / "repo\x1b]0;owned\x07\x1b[2J\x7f"
    subprocess.run(["git", "init", "-q", str(repo)], check=True, timeout=SAFETY_S)
    proc = run_cli("hook", "install", str(repo), "--root", str(tmp_path / "root"))
    assert proc.returncode == 0, proc.stderr
    assert b"\\x1b" in proc.stderr and _raw_controls(proc.stderr) == [], proc.stderr
