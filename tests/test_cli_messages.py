"""``doc-index`` errors say what to do, ``--root`` goes anywhere, ``mcp-config``,
listings escape what a terminal would act on, and the CLI's words are for people.

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
from cli_support import CONTEXT, built_root, run
from conftest import SAFETY_TIMEOUT, run_cli, write_tree
from mcp_support import RawServer, context_cli, initialize, result_text, tool_call

from doc_index.render.listing import size_text

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

# What mcp-config says where answers by meaning are off (the suite turns them off): the
# block then starts a server without --model (tests/test_meaning_doors.py: with).
WORDS_ONLY_BLOCK = (b"meaning: off: turned off by DOC_INDEX_SEMANTIC=off (unset it to answer "
                    b"by meaning too): the server this block starts answers by words only\n")

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
    assert done.returncode == 0 and done.stderr == WORDS_ONLY_BLOCK
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
    ).encode(), WORDS_ONLY_BLOCK)


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


# --------------------------------------------------------------------------- words for people
# The doc-index CLI speaks to people: an invalid budget or query says why, a missing cache
# names the near names, the text format of an answer, help text and list sizes.


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A root holding the doc-index cache ``t`` of cli_support.DOCS."""
    return built_root(tmp_path)


@pytest.mark.parametrize(("budget", "why"), [
    ("1_000", "'1_000' is not a whole number of tokens from 0 to 10000000"),
    ("", "'' is not a whole number of tokens from 0 to 10000000"),
    ("-1", "-1 is out of range: give a whole number of tokens from 0 to 10000000"),
    ("10000001", "10000001 is out of range: give a whole number of tokens from 0 to 10000000"),
])
def test_budget_is_invalid_names_the_range(root: Path, budget: str, why: str) -> None:
    assert run("resolve", "t", "retry", "--budget", budget, "--root", str(root)) == (3, b"", (
        f"error: Budget is invalid: {why} (ASCII digits, e.g. --budget 2000)\n").encode())
    assert run("resolve", "--cache", str(root / "t"), "--query", "retry", "--budget", budget,
               module=CONTEXT) == (3, b"", b"error: Budget is invalid\n")


@pytest.mark.parametrize(("query", "why"), [
    ("", "the query is empty: ask a question in the words the docs likely use"),
    ("   ", "the query is empty: ask a question in the words the docs likely use"),
    ("?! -- ...", "the query holds no searchable term (only spaces, punctuation or symbols): "
                  "ask with the words the docs likely use"),
    ("ab " * 1500, "the query is 4500 bytes long, over the 4096-byte limit: ask a shorter "
                   "question"),
])
def test_query_is_invalid_says_why(root: Path, query: str, why: str) -> None:
    assert run("resolve", "t", query, "--root", str(root)) == (2, b"", (
        f"error: Query is invalid: {why}\n").encode())
    assert run("resolve", "--cache", str(root / "t"), "--query", query, "--budget", "100",
               module=CONTEXT) == (2, b"", b"error: Query is invalid\n")


def test_a_folder_without_a_manifest_is_named_with_near_names(root: Path) -> None:
    """``resolve`` of a folder with no manifest printed the bare ``Cache does not exist``."""
    (root / "tt").mkdir()
    assert run("resolve", "tt", "retry", "--root", str(root)) == (4, b"", (
        f"error: cache 'tt' under {root} cannot be used: no manifest.json; did you mean: t?\n"
    ).encode())
    assert run("resolve", "--cache", str(root / "tt"), "--query", "retry", "--budget", "100",
               module=CONTEXT) == (4, b"", b"error: Cache does not exist\n")


def test_resolve_defaults_to_the_budget_the_readme_recommends(root: Path) -> None:
    code, out, _ = run("resolve", "t", "retry", "--root", str(root))
    assert code == 0 and json.loads(out)["selection"]["budget"] == 2000


def test_list_size_counts_the_whole_cache(root: Path) -> None:
    """SIZE and ``size_bytes`` count every file below the cache (raw files in subfolders
    too); ``total_bytes`` stays the spec's sum of the files at the cache's top."""
    cache = root / "t"
    every = sum(p.stat().st_size for p in cache.rglob("*") if p.is_file())
    top = sum(e.stat().st_size for e in os.scandir(cache) if e.is_file())
    assert (cache / "sub" / "setup.md").is_file() and every > top
    code, out, _ = run("inspect", "t", "--json", "--root", str(root))
    details = json.loads(out)
    assert (details["size_bytes"], details["total_bytes"]) == (every, top)
    code, out, _ = run("list", "--root", str(root))
    assert code == 0 and out.decode().splitlines()[1].split()[7:9] == size_text(every).split()
    code, out, _ = run("inspect", "t", "--root", str(root))
    assert f"size:          {size_text(every)} ({every:,} bytes in all; total_bytes {top:,}: " \
           "the files at its top)\n" in out.decode()


def test_resolve_text_format_for_a_person(root: Path, tmp_path: Path) -> None:
    """Each section under a header with its file, lines and heading path; untrusted text
    shown escaped (the ESC of the docs never reaches the terminal)."""
    code, out, err = run("resolve", "t", "retry timeout", "--format", "text", "--root",
                         str(root))
    assert (code, err) == (0, b"")
    assert out == (
        b"==> 1. guide.md, lines 5-8\n"
        b"    Guide > Retry\n"
        b"    score 1.00, 33 tokens, id guide-retry\n"
        b"\n"
        b"## Retry\n"
        b"\n"
        b"How to retry a request after a timeout, with a pause between tries.\n"
        b"A hostile \\x1b[31mred\\x1b[0m escape and a tab\there.\n"
        b"\n"
        b"--- 1 section selected, 33 tokens, budget 2000 (3 considered)\n")
    code, out, _ = run("resolve", "t", "zebra", "--format", "text", "--root", str(root))
    assert out == b"--- 0 sections selected, 0 tokens, budget 2000 (3 considered)\n"
    # a Context Engine v0 cache has no provenance: its header names the document's id
    v0 = tmp_path / "v0"
    assert run("build", "--sources", str(tmp_path / "docs"), "--cache", str(v0),
               module=CONTEXT)[0] == 0
    os.rename(v0, root / "v0")
    code, out, _ = run("resolve", "v0", "setup", "--budget", "30", "--format", "text",
                       "--root", str(root))
    assert out == (
        b"==> 1. id sub/setup.md\n"
        b"    score 0.08, 16 tokens\n"
        b"\n"
        b"# Setup\n"
        b"\n"
        b"Install it, then set the timeout in the config file.\n"
        b"\n"
        b"--- 1 section selected, 16 tokens, budget 30 (2 considered; 1 more matched but did "
        b"not fit)\n")


def test_text_format_of_an_excerpt() -> None:
    from doc_index.render.answer_text import answer_text
    from doc_index.search.results import Answer

    doc = {"id": "a-b", "version": "sha256:0", "content": "line\u2028two\r\n", "score": 0.5,
           "tokens": 9, "why": {"query_terms": [], "term_matches": 0, "total_words": 2},
           "source": {"file": "a\x1b.md", "title": "B", "path": [], "lines": [3, 40],
                      "excerpt": {"lines": [10, 12], "of_tokens": 300}}}
    selection = {"query": "q", "budget": 100, "tokens_used": 9, "documents_considered": 4,
                 "documents_selected": 1, "documents_excluded_by_budget": 0}
    assert answer_text(Answer([doc], selection)) == (
        "==> 1. 'a\\x1b.md', lines 10-12 (an excerpt of the section at lines 3-40, 300 "
        "tokens)\n"
        "    B\n"
        "    score 0.50, 9 tokens, id a-b\n"
        "\n"
        "line\\u2028two\\r\n"
        "\n"
        "--- 1 section selected, 9 tokens, budget 100 (4 considered)\n")


HELP = b"""\
usage: doc-index [-h] [--version] [--root DIR] COMMAND ...

Build documentation caches from folders and git repositories, list, inspect
and query them, and serve them to AI agents over MCP.

positional arguments:
  COMMAND     what to do (doc-index COMMAND --help tells more)
    build     index a directory, a git repository or a published package
              (again: only what changed)
    sync      one cache per dependency a project pins, at its pinned version
    list      list the caches under the root
    inspect   show one cache: source, ref, commit, sections, size, age
    resolve   the sections of a cache that answer a question
    outline   a cache's files and headings with their section ids and tokens
              (as context_outline answers)
    read      a section by id, its page or its neighbours (as context_read
              answers)
    delete    delete a cache (and nothing that is not one)
    serve     the MCP server, on stdin and stdout or over HTTP (--http)
    hook      git hooks that rebuild a checkout's cache after pull, checkout
              or rebase
    model     the embedding model for answers by meaning (the semantic extra)
    mcp-config
              print an MCP client's configuration block for this installation

options:
  -h, --help  show this help message and exit
  --version   show program's version number and exit
  --root DIR  the cache root (default: $DOC_INDEX_ROOT, else the per-user data
              folder, ~/.local/share/doc-index on Linux)
"""

RESOLVE_HELP = b"""\
usage: doc-index resolve [-h] [--root DIR] [--budget TOKENS]
                         [--format {json,pretty,text}] [--model DIR]
                         name query

The sections of a cache that answer a question.

positional arguments:
  name                  a cache's name (doc-index list shows them)
  query                 the question, in the words the docs likely use

options:
  -h, --help            show this help message and exit
  --root DIR            the cache root (default: $DOC_INDEX_ROOT, else the
                        per-user data folder, ~/.local/share/doc-index on
                        Linux)
  --budget TOKENS       the most tokens the whole answer may take, 0 to
                        10000000 (default 2000)
  --format {json,pretty,text}
                        json: the answer as context.resolve gives it
                        (default); pretty: the same, indented; text: each
                        section under a header naming its file, lines and
                        headings, for reading
  --model DIR           the folder holding the embedding model for answers by
                        meaning (default: $DOC_INDEX_MODEL_DIR, else where
                        'doc-index model fetch' puts it)
"""


@pytest.mark.skipif(sys.version_info >= (3, 13), reason="argparse's layout changed in 3.13")
def test_help_text_exact_bytes() -> None:
    env = {"COLUMNS": "80"}
    assert run("--help", env=env) == (0, HELP, b"")
    assert run("resolve", "--help", env=env) == (0, RESOLVE_HELP, b"")


def test_every_argument_and_option_is_described() -> None:
    """In every command's ``--help``: no ``ROOT_BEFORE``, no reST double backquotes, and a
    description for every argument and option."""
    import argparse

    from doc_index.cli.command import _parser

    def walk(parser: argparse.ArgumentParser, name: str):  # type: ignore[no-untyped-def]
        yield name, parser
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub_name, sub in action.choices.items():
                    yield from walk(sub, f"{name} {sub_name}")

    seen = []
    for name, parser in walk(_parser(), "doc-index"):
        seen.append(name)
        text = parser.format_help()
        assert "ROOT_BEFORE" not in text and "``" not in text, name
        for action in parser._actions:
            assert action.help and action.help != argparse.SUPPRESS, (name, action.dest)
    # doc-index, its 12 commands, hook install, hook uninstall and model fetch
    assert len(seen) == 16
    code, out, _ = run("hook", "install", "--help", env={"COLUMNS": "80"})
    assert code == 0 and b"--subdir PATH" in out and b"--name NAME" in out


def test_a_refused_argument_is_echoed_on_one_line(tmp_path: Path) -> None:
    """argparse quotes what it refuses; a newline in it must not start a second line that
    a reader of stderr would take for another message (found by test_fuzz_cli_long)."""
    code, out, err = run("resolve", "--", "q", "--budget", "4000\n", "--root", str(tmp_path))
    assert code == 1 and out == b""
    assert err.startswith(b"error: ") and err.count(b"\n") == 1, err
    assert b"4000\\n" in err
