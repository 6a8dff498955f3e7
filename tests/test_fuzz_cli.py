"""Property-based tests over the command lines of ``context`` and ``doc-index``.

Whatever the arguments: the exit code is one of 0-6 (7 is internal_error: a bug); on
success stdout is one JSON document with one trailing newline (or help/version text); on
failure stdout is empty and stderr is exactly one ``error: ...`` line; never a traceback.
Resolve results keep their invariants (budget respected, counts consistent, scores in
[0, 1], sorted). Most runs are in-process; a few go through real processes with argv bytes
that are not UTF-8 and under other locales.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import SAMPLE_REPOS, build
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from doc_index.cli import command as cli
from doc_index.server import context_cli

COMPAT = Path(__file__).parent / "compat" / "context-engine-compat" / "fixtures" / "v0" / "caches"


@pytest.fixture(scope="module")
def place(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("fuzz-cli")
    root = base / "root"
    build(SAMPLE_REPOS / "mdkit-docs", root, name="md")
    build(SAMPLE_REPOS / "rstkit-docs", root, name="rst")
    shutil.copytree(COMPAT / "realistic", root / "v0-realistic")
    shutil.copytree(root / "local-md", root / "broken")
    (root / "broken" / "manifest.json").write_bytes(b'{"index_version": 1, "cache')
    (root / "empty").mkdir()
    (base / "file.txt").write_text("not a cache\n")
    return {"root": root, "base": base}


CACHE_NAMES = ["local-md", "local-rst", "v0-realistic", "broken", "empty", "missing", "",
               "..", ".", "/", "file.txt", "local-md/", "local-md/manifest.json", "-", "--",
               "--budget", "\t", " local-md", "ä", "x" * 300]
WORDS = ["retry", "timeout", "install", "the", "a", "configuration", "ÄÖÜ", "重试", "☕",
         "--", "-", "'", '"', "\\", "*", "?", "(", ")", "!", "\u200b", "\ufeff", "\u2028",
         "e\u0301", "x" * 50, "AND", "OR", "NOT", ":", "::", "-v", "\t"]
queries = st.one_of(
    st.lists(st.sampled_from(WORDS), max_size=8).map(" ".join),
    st.text(max_size=40),
    st.just("w " * 2100),  # over 4096 bytes
    st.just(""),
)
budgets = st.one_of(
    st.integers(-5, 20_000).map(str),
    st.sampled_from(["0", "-0", "+5", " 5", "5 ", "0x10", "1_000", "٣", "1e3", "1.0", "",
                     "10000000", "10000001", "99999999999999999999", "-1", "NaN", "inf",
                     "--budget", "4000\n"]),
    st.text(max_size=6),
)


def _context_argv(place: dict[str, Path]) -> st.SearchStrategy[list[str]]:
    root = place["root"]
    caches = st.one_of(st.sampled_from(CACHE_NAMES).map(lambda n: str(root / n)),
                       st.sampled_from(CACHE_NAMES), st.text(max_size=12))
    resolve = st.tuples(caches, queries, budgets, st.sampled_from([[], ["--format", "pretty"],
                        ["--format", "json"], ["--format", "xml"], ["--format"]])).map(
        lambda t: ["resolve", "--cache", t[0], "--query", t[1], "--budget", t[2], *t[3]])
    inspect = caches.map(lambda c: ["inspect", "--cache", c])
    list_caches = st.one_of(st.sampled_from([str(root), str(place["base"]), "/nonexistent",
                                             str(place["base"] / "file.txt"), ""]),
                            st.text(max_size=8)).map(lambda r: ["list-caches", "--root", r])
    junk = st.lists(st.sampled_from(["--cache", "--query", "--budget", "--format", "--root",
                                     "--frob", "-h", "--help", "resolve", "x", "=", "--cache=",
                                     "--budget=5", "--que", "-"]), max_size=6)
    return st.one_of(resolve, resolve, inspect, list_caches, junk,
                     st.tuples(resolve, junk).map(lambda t: t[0] + t[1]))


def _doc_index_argv(place: dict[str, Path]) -> st.SearchStrategy[list[str]]:
    root = str(place["root"])
    names = st.one_of(st.sampled_from(CACHE_NAMES), st.text(max_size=12))
    resolve = st.tuples(names, queries, budgets, st.sampled_from(
        [[], ["--format", "pretty"], ["--format", "bad"]])).map(
        lambda t: ["resolve", t[0], t[1], "--budget", t[2], *t[3], "--root", root])
    inspect = names.map(lambda n: ["inspect", n, "--root", root])
    listing = st.sampled_from([["list", "--root", root], ["list", "--json", "--root", root],
                               ["list", "--root", "/nonexistent"],
                               ["list", "--root", str(place["base"] / "file.txt")]])
    junk = st.lists(st.sampled_from(["resolve", "inspect", "list", "--root", root, "--budget",
                                     "--format", "x", "-h", "--frob", "--version", "--json"]),
                    max_size=6)
    return st.one_of(resolve, resolve, inspect, listing, junk)


def _check_output(argv: list[str], code: int, out: bytes, err: bytes) -> None:
    assert b"Traceback" not in err, (argv, err)
    assert code in range(0, 7), (argv, code, err)
    helped = any(a in ("-h", "--help", "--version") for a in argv)
    if code != 0:
        assert out == b"", (argv, out[:200])
        assert err.startswith(b"error: ") and err.count(b"\n") == 1, (argv, err)
        return
    if helped and not out.startswith((b"{", b"[")):
        return
    assert out.endswith(b"\n"), (argv, out[-200:])
    if not out.startswith(b"{"):  # doc-index list and inspect for people (README)
        assert "--json" not in argv, (argv, out[:200])
        return
    if "pretty" not in argv:
        assert out.count(b"\n") == 1, (argv, out[:200])
    data = json.loads(out)
    if "documents" in data:
        _check_selection(data)


def _check_selection(data: dict[str, Any]) -> None:
    sel = data["selection"]
    docs = data["documents"]
    assert sel["tokens_used"] == sum(d["tokens"] for d in docs) <= sel["budget"]
    assert sel["documents_selected"] == len(docs)
    assert sel["documents_selected"] + sel["documents_excluded_by_budget"] <= sel[
        "documents_considered"]
    keys = [(-d["score"], d["id"]) for d in docs]
    assert keys == sorted(keys)
    for d in docs:
        assert d["score"] >= 0  # v0 scores are raw term frequencies; native ones <= 1
        # the spec's fields; a native cache's documents add their provenance after them
        assert list(d) in (["id", "version", "content", "score", "tokens", "why"],
                           ["id", "version", "content", "score", "tokens", "why", "source"])


def _run_in_process(main: Any, argv: list[str], capfd: pytest.CaptureFixture[bytes]
                    ) -> tuple[int, bytes, bytes]:
    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1
    out, err = capfd.readouterr()
    return code, out, err


def _fuzz(place: dict[str, Path], capfd: pytest.CaptureFixture[bytes], examples: int) -> int:
    tried = [0]
    cwd = os.getcwd()
    os.chdir(place["base"])  # relative names resolve here, never in the repository
    try:
        @settings(max_examples=examples, deadline=None, derandomize=True,
                  suppress_health_check=list(HealthCheck))
        @given(which=st.sampled_from(["context", "doc-index"]), data=st.data())
        def run(which: str, data: st.DataObject) -> None:
            tried[0] += 1
            if which == "context":
                argv = data.draw(_context_argv(place))
                code, out, err = _run_in_process(context_cli.main, argv, capfd)
            else:
                argv = data.draw(_doc_index_argv(place))
                code, out, err = _run_in_process(cli.main, argv, capfd)
            _check_output(argv, code, out, err)

        run()
    finally:
        os.chdir(cwd)
    return tried[0]


@pytest.mark.slow
def test_fuzz_cli_short(place: dict[str, Path], capfdbinary: pytest.CaptureFixture[bytes]
                        ) -> None:
    _fuzz(place, capfdbinary, examples=400)


@pytest.mark.slow
def test_fuzz_cli_long(place: dict[str, Path], capfdbinary: pytest.CaptureFixture[bytes]
                       ) -> None:
    tried = _fuzz(place, capfdbinary, examples=15_000)
    print(f"CLI argument vectors tried: {tried}")


def test_same_bytes_for_both_clis_and_every_locale(place: dict[str, Path]) -> None:
    root = place["root"]
    query = "retry café ☕ 重试 timeout"
    argv_ctx = [sys.executable, "-m", "doc_index.server.context_cli", "resolve", "--cache",
                str(root / "local-md"), "--query", query, "--budget", "3000"]
    argv_doc = [sys.executable, "-m", "doc_index.cli", "resolve", "local-md", query, "--budget",
                "3000", "--root", str(root)]
    outs = set()
    for env in ({}, {"LC_ALL": "C", "LANG": "C"}, {"PYTHONIOENCODING": "latin-1"},
                {"LC_ALL": "POSIX", "PYTHONUTF8": "0"}, {"PYTHONHASHSEED": "12345"}):
        for argv in (argv_ctx, argv_doc):
            proc = subprocess.run(argv, capture_output=True, timeout=60,
                                  env={**os.environ, **env})
            assert proc.returncode == 0 and proc.stderr == b"", (env, proc.stderr)
            outs.add(proc.stdout)
    assert len(outs) == 1
    assert "重试".encode() in next(iter(outs))


@pytest.mark.parametrize("raw", [b"retry \xff\xfe", b"\xc3", b"\xed\xa0\x80", b"ok \x80 ok"])
def test_non_utf8_argv_bytes(place: dict[str, Path], raw: bytes) -> None:
    root = place["root"]
    for argv in (
        [b"-m", b"doc_index.server.context_cli", b"resolve", b"--cache",
         os.fsencode(root / "local-md"), b"--query", raw, b"--budget", b"100"],
        [b"-m", b"doc_index.cli", b"resolve", b"local-md", raw, b"--root", os.fsencode(root)],
        [b"-m", b"doc_index.server.context_cli", b"inspect", b"--cache",
         os.fsencode(root) + b"/" + raw],
        [b"-m", b"doc_index.server.context_cli", b"resolve", b"--cache",
         os.fsencode(root / "local-md"), b"--query", b"retry", b"--budget", raw],
    ):
        proc = subprocess.run([os.fsencode(sys.executable), *argv], capture_output=True,
                              timeout=60)
        _check_output([a.decode("utf-8", "replace") for a in argv], proc.returncode,
                      proc.stdout, proc.stderr)


def test_huge_arguments(place: dict[str, Path]) -> None:
    root = place["root"]
    huge = "retry " * 20_000  # 120 KB (one argv string may hold 128 KB)
    for argv in (["-m", "doc_index.server.context_cli", "resolve", "--cache",
                  str(root / "local-md"), "--query", huge, "--budget", "100"],
                 ["-m", "doc_index.cli", "resolve", "x" * 100_000, "retry", "--root", str(root)],
                 ["-m", "doc_index.server.context_cli", "resolve", "--cache",
                  str(root / "local-md"), "--query", "retry", "--budget", "9" * 100_000]):
        proc = subprocess.run([sys.executable, *argv], capture_output=True, timeout=60)
        _check_output(argv, proc.returncode, proc.stdout, proc.stderr)
        assert proc.returncode in (2, 3, 4), proc.stderr
