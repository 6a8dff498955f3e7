"""Issue 20, first contact: ``delete`` deletes caches only, an empty root is a usage error,
the default root is the platform's data folder (not jDocMunch's ``~/.doc-index``), and
the ``doc-index`` CLI speaks to people (items 1, 5 and 10).

Every check runs the real ``doc-index`` (or ``context``) command in a subprocess and
compares the bytes it printed; the ``context`` CLI keeps the spec's canonical messages.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import SAFETY_TIMEOUT, write_tree
from doc_index.store import roots
from doc_index.store.sources import git as git_source

from doc_index.render.listing import size_text

CONTEXT = "doc_index.server.context_cli"
DOCS = {
    "guide.md": "# Guide\n\nIntro words about the guide, and how it is laid out.\n\n## Retry\n\n"
                "How to retry a request after a timeout, with a pause between tries.\n"
                "A hostile \x1b[31mred\x1b[0m escape and a tab\there.\n",
    "sub/setup.md": "# Setup\n\nInstall it, then set the timeout in the config file.\n",
}


def run(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None,
        module: str = "doc_index.cli", drop: tuple[str, ...] = ()) -> tuple[int, bytes, bytes]:
    """``python -m MODULE ARGS``: (exit code, stdout, stderr)."""
    full = {k: v for k, v in os.environ.items() if k not in drop}
    full.update(env or {})
    done = subprocess.run([sys.executable, "-m", module, *args], capture_output=True, env=full,
                          cwd=cwd, timeout=SAFETY_TIMEOUT, stdin=subprocess.DEVNULL)
    return done.returncode, done.stdout, done.stderr


def snapshot(top: Path) -> dict[str, bytes | None]:
    """Every entry below ``top``: a file's bytes, a directory as None."""
    out: dict[str, bytes | None] = {}
    for path in sorted(top.rglob("*")):
        rel = path.relative_to(top).as_posix()
        out[rel] = None if path.is_dir() and not path.is_symlink() else (
            os.readlink(path).encode() if path.is_symlink() else path.read_bytes())
    return out


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A root holding the doc-index cache ``t`` of DOCS."""
    src = write_tree(tmp_path / "docs", DOCS)
    root = tmp_path / "root"
    assert run("build", str(src), "--root", str(root), "--name", "t")[0] == 0
    return root


# --- item 1: delete removes caches, and nothing else ----------------------------------------

def test_delete_refuses_a_folder_that_is_no_cache(root: Path) -> None:
    write_tree(root / "notacache" / "sub", {"keep.txt": "the user's file\n"})
    (root / "notes").mkdir()
    (root / "notes" / "manifest.json").write_text('{"files": ["a jDocMunch-like index"]}\n')
    before = snapshot(root)
    for name in ("notacache", "notes"):
        assert run("delete", name, "--root", str(root)) == (1, b"", (
            f"error: refusing to delete '{name}' under {root}: it holds no doc-index or "
            "Context Engine v0 manifest.json, and no doc-index build made it; doc-index "
            "deletes only the caches it can tell are caches (remove it yourself if it is "
            "yours to remove)\n").encode())
    os.symlink("t", root / "link")
    before["link"] = b"t"
    assert run("delete", "link", "--root", str(root)) == (1, b"", (
        f"error: refusing to delete 'link' under {root}: it is a symbolic link, and doc-index "
        "makes none; doc-index deletes only the caches it can tell are caches (remove it "
        "yourself if it is yours to remove)\n").encode())
    assert snapshot(root) == before  # nothing touched, not even the store's area


def test_delete_removes_every_kind_of_cache(root: Path, tmp_path: Path) -> None:
    src = tmp_path / "docs"
    for name in ("damaged", "emptied"):
        assert run("build", str(src), "--root", str(root), "--name", name)[0] == 0
    (root / "damaged" / "manifest.json").write_bytes(b"not json any more")
    for entry in os.scandir(root / "emptied"):  # nothing left that looks like a cache
        if entry.is_file():
            os.unlink(entry.path)
    assert run("build", "--sources", str(src), "--cache", str(root / "v0"), module=CONTEXT)[0] == 0
    for name in ("t", "damaged", "emptied", "v0"):
        assert run("delete", name, "--root", str(root)) == (0, b"", f"deleted: {name}\n".encode())
        assert not os.path.lexists(root / name)
        assert not os.path.lexists(root / ".doc-index-tmp" / name)  # spare, mark, lock


def test_a_folder_put_where_a_cache_was_is_not_deleted(root: Path) -> None:
    """The mark names the cache's directory, not its name: a folder made under that name
    after the cache was moved away is refused."""
    os.rename(root / "t", root / "moved")
    write_tree(root / "t", {"mine.txt": "not a cache\n"})
    code, out, err = run("delete", "t", "--root", str(root))
    assert (code, out) == (1, b"") and err.startswith(b"error: refusing to delete 't' under ")
    assert (root / "t" / "mine.txt").read_text() == "not a cache\n"


def test_the_mark_changes_no_byte_of_the_cache(root: Path) -> None:
    """The mark lives in the store's area: the cache's files and ``total_bytes`` (the
    specs' non-recursive sum) are what they were without it."""
    mark = root / ".doc-index-tmp" / "t" / "cache"
    assert mark.read_text().startswith("doc-index cache ")
    top = sorted(e.name for e in os.scandir(root / "t"))
    assert top == ["guide.md", "manifest.json", "search.idx", "sub"]
    code, out, _ = run("inspect", "--cache", str(root / "t"), module=CONTEXT)
    direct = sum(e.stat().st_size for e in os.scandir(root / "t") if e.is_file())
    assert code == 0 and json.loads(out)["total_bytes"] == direct


EVERY_COMMAND = [["build", "SRC"], ["list"], ["inspect", "t"], ["resolve", "t", "retry"],
                 ["delete", "work"], ["serve"], ["hook", "install", "REPO"],
                 ["mcp-config", "--client", "cursor"]]


@pytest.mark.parametrize("argv", EVERY_COMMAND, ids=lambda argv: argv[0])
def test_an_empty_root_is_a_usage_error(tmp_path: Path, argv: list[str]) -> None:
    """``--root=`` named the current directory: ``delete work --root=`` deleted ./work."""
    src = write_tree(tmp_path / "docs", DOCS)
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True, timeout=SAFETY_TIMEOUT)
    argv = [str(src) if a == "SRC" else str(repo) if a == "REPO" else a for a in argv]
    write_tree(tmp_path / "work" / "t", {"manifest.json": "{}"})
    before = snapshot(tmp_path)
    empty = (1, b"", b"error: the cache root is empty: give a directory, or leave --root out "
                     b"for the default\n")
    for where in ([*argv, "--root="], [*argv, "--root", ""], ["--root=", *argv]):
        assert run(*where, cwd=tmp_path / "work") == empty
    assert run(*argv, cwd=tmp_path / "work", env={"DOC_INDEX_ROOT": ""}) == (1, b"", (
        b"error: DOC_INDEX_ROOT is set but empty: set it to a directory, or unset it for the "
        b"default\n"))
    assert snapshot(tmp_path) == before


def test_the_context_cli_finds_no_cache_at_an_empty_path(tmp_path: Path) -> None:
    """``context list-caches --root ''`` listed the current directory; the spec's error for
    a root that does not exist is cache_missing, and the empty path names none."""
    write_tree(tmp_path / "cwd" / "a", {"manifest.json": "{}"})
    missing = (4, b"", b"error: Cache does not exist\n")
    assert run("list-caches", "--root", "", module=CONTEXT, cwd=tmp_path / "cwd") == missing
    assert run("inspect", "--cache", "", module=CONTEXT, cwd=tmp_path / "cwd" / "a") == missing
    assert run("resolve", "--cache", "", "--query", "q", "--budget", "10", module=CONTEXT,
               cwd=tmp_path / "cwd") == missing


# --- item 5: the default root ----------------------------------------------------------------

def _home(tmp_path: Path, *, data: str = "data", cache: str = "xdg-cache") -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return {"HOME": str(home), "XDG_DATA_HOME": str(tmp_path / data),
            "XDG_CACHE_HOME": str(tmp_path / cache)}


def test_the_default_root_is_the_platform_data_folder(tmp_path: Path) -> None:
    env = _home(tmp_path)
    src = write_tree(tmp_path / "docs", DOCS)
    code, _, err = run("build", str(src), "--name", "t", env=env, drop=("DOC_INDEX_ROOT",))
    assert code == 0, err
    assert (tmp_path / "data" / "doc-index" / "t" / "manifest.json").is_file()
    assert not (tmp_path / "home" / ".doc-index").exists()
    code, out, _ = run("mcp-config", "--client", "cursor", env=env, drop=("DOC_INDEX_ROOT",))
    args = json.loads(out)["mcpServers"]["doc-index"]["args"]
    assert code == 0 and args[:3] == ["serve", "--root", str(tmp_path / "data" / "doc-index")]
    # DOC_INDEX_ROOT still chooses another
    other = tmp_path / "other"
    code, out, _ = run("mcp-config", "--client", "cursor", env={**env, "DOC_INDEX_ROOT": str(
        other)})
    assert json.loads(out)["mcpServers"]["doc-index"]["args"][2] == str(other)


def test_the_default_root_never_holds_the_clone_area(tmp_path: Path) -> None:
    """XDG_DATA_HOME and XDG_CACHE_HOME one folder: the clones would be a folder of the
    root (listed as an invalid cache); the caches go to ``<data>/doc-index/caches``."""
    env = _home(tmp_path, data="xdg", cache="xdg")
    author = write_tree(tmp_path / "author", {"docs/a.md": DOCS["guide.md"]})
    for argv in (["init", "-q", "-b", "main"], ["add", "-A"],
                 ["-c", "user.name=T", "-c", "user.email=t@e", "commit", "-q", "-m", "A"]):
        subprocess.run(["git", *argv], cwd=author, check=True, timeout=SAFETY_TIMEOUT)
    bare = tmp_path / "srv" / "acme" / "widgets.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(author), str(bare)], check=True,
                   timeout=SAFETY_TIMEOUT)
    code, _, err = run("build", bare.as_uri(), env=env, drop=("DOC_INDEX_ROOT",))
    assert code == 0, err
    caches = tmp_path / "xdg" / "doc-index" / "caches"
    assert (tmp_path / "xdg" / "doc-index" / "clones").is_dir()
    code, out, _ = run("list", "--json", env=env, drop=("DOC_INDEX_ROOT",))
    assert code == 0 and [c["name"] for c in json.loads(out)["caches"]] == ["acme-widgets"]
    assert (caches / "acme-widgets" / "manifest.json").is_file()


@pytest.mark.parametrize("env", [{}, {"XDG_CACHE_HOME": "/x/cache"}, {"XDG_CACHE_HOME": "rel"},
                                 {"XDG_CACHE_HOME": ""}])
def test_roots_knows_the_clone_area_of_git_sources(monkeypatch: pytest.MonkeyPatch,
                                                   env: dict[str, str]) -> None:
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    assert roots.clone_area() == git_source.clone_area()


def test_caches_left_in_the_old_root_are_named_not_moved(tmp_path: Path) -> None:
    """An earlier doc-index put caches in ``~/.doc-index``: a command on the new default
    root says where they are and how to keep them (``--root``, ``mv``); it never moves
    them. jDocMunch's files there are not caches and are never mentioned."""
    env = _home(tmp_path)
    old = tmp_path / "home" / ".doc-index"
    src = write_tree(tmp_path / "docs", DOCS)
    for name in ("a", "b c"):
        assert run("build", str(src), "--root", str(old), "--name", name)[0] == 0
    (old / "_savings.json").write_text("{}\n")  # jDocMunch's
    write_tree(old / "jdoc-index", {"index.json": "{}\n"})
    before = snapshot(old)
    new = tmp_path / "data" / "doc-index"
    q = shlex.quote
    note = (f"note: 2 doc-index caches are in {old}, the default root of earlier versions, "
            f"not in the default root {new}: use --root {q(str(old))} (or DOC_INDEX_ROOT="
            f"{q(str(old))}) to keep using them, or move them: mkdir -p {q(str(new))} && mv "
            f"{q(str(old / 'a'))} {q(str(old / 'b c'))} {q(str(new))}/\n").encode()
    code, out, err = run("list", env=env, drop=("DOC_INDEX_ROOT",))
    assert (code, out) == (4, b"") and err.startswith(note)
    code, out, err = run("mcp-config", "--client", "codex", env=env, drop=("DOC_INDEX_ROOT",))
    assert code == 0 and err == note
    # given a root, or with caches in the new one, nothing is said
    assert run("list", "--root", str(old), env=env, drop=("DOC_INDEX_ROOT",))[2] == b""
    assert run("build", str(src), "--name", "t", env=env, drop=("DOC_INDEX_ROOT",))[2] \
        .startswith(note)
    code, out, err = run("list", env=env, drop=("DOC_INDEX_ROOT",))
    assert code == 0 and err == b""
    assert snapshot(old) == before
    # only jDocMunch's files: no note
    for name in ("a", "b c"):
        assert run("delete", name, "--root", str(old))[0] == 0
    assert run("delete", "t", env=env, drop=("DOC_INDEX_ROOT",))[2] == b"deleted: t\n"
    assert run("list", env=env, drop=("DOC_INDEX_ROOT",)) == (
        0, f"no caches under {new} (doc-index build <path-or-git-url> makes one)\n".encode(), b"")


# --- item 10: words for people ---------------------------------------------------------------

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
    from doc_index.search.results import Answer

    from doc_index.render.answer_text import answer_text

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
    delete    delete a cache (and nothing that is not one)
    serve     the MCP server, on stdin and stdout
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

    from doc_index.cli import _parser

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
    # doc-index, its 10 commands, hook install, hook uninstall and model fetch
    assert len(seen) == 14
    code, out, _ = run("hook", "install", "--help", env={"COLUMNS": "80"})
    assert code == 0 and b"--subdir PATH" in out and b"--name NAME" in out


def test_a_given_root_never_loads_platformdirs(root: Path, tmp_path: Path) -> None:
    """platformdirs (about 6 ms of imports) is loaded only to find the default root: the
    blocks ``mcp-config`` writes start ``serve --root DIR``."""
    from test_import_rules import modules_of

    for argv in (["resolve", "t", "retry", "--root", str(root)], ["list", "--root", str(root)]):
        assert "platformdirs" not in modules_of(tmp_path, "doc_index.cli", *argv)
