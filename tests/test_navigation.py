"""Outline and read (search/navigation.py; docs/cache-format.md, "Outline and read"): the
commands' bytes, the documented examples, the budget, paging that loses nothing, the
provenance resolve gives, v0 caches, and errors that say what to do."""

from __future__ import annotations

import json
import re
import shlex
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from cli_support import run
from conftest import REPO, SAMPLE_REPOS
from mcp_support import FIXTURES

from doc_index.indexer.tokens import estimate_tokens
from doc_index.library import DocIndex
from doc_index.search.navigation import outline_text, reading_text

CONTEXT = "doc_index.server.context_cli"


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The two sample repositories as caches, and the v0 fixture cache ``realistic``."""
    root = tmp_path_factory.mktemp("nav") / "root"
    builds = [(SAMPLE_REPOS / name, name) for name in ("mdkit-docs", "rstkit-docs")]
    with ThreadPoolExecutor(2) as pool:
        done = list(pool.map(lambda b: run("build", str(b[0]), "--name", b[1], "--root",
                                           str(root)), builds))
    assert [code for code, _, _ in done] == [0, 0], done
    shutil.copytree(FIXTURES / "caches" / "realistic", root / "realistic")
    return root


def doc_index(root: Path, *args: str) -> tuple[int, bytes, bytes]:
    return run(*args, "--root", str(root))


def documented_examples() -> list[tuple[list[str], str]]:
    """The ``$ doc-index ...`` commands of cache-format.md's "Outline and read" and the JSON
    printed under each."""
    text = (REPO / "docs" / "cache-format.md").read_text(encoding="utf-8")
    section = text.split("## Outline and read", 1)[1].split("\n## ", 1)[0]
    found = re.findall(r"```sh\n\$ doc-index (.*)\n```\n```json\n(.*)\n```", section)
    return [(shlex.split(command), output + "\n") for command, output in found]


def test_the_documented_examples_are_the_commands_bytes(root: Path) -> None:
    examples = documented_examples()
    assert [args[0] for args, _ in examples] == ["outline", "read", "read"]
    for args, output in examples:
        code, out, err = doc_index(root, *args)
        assert (code, err) == (0, b"")
        assert out.decode("utf-8") == output, args


@pytest.mark.parametrize("args", [
    ["outline", "mdkit-docs"],
    ["outline", "rstkit-docs", "--prefix", "docs/", "--depth", "2", "--budget", "700"],
    ["outline", "realistic"],
    ["read", "mdkit-docs", "retries-and-timeouts-retries", "--scope", "page",
     "--budget", "900", "--line", "30"],
    ["read", "rstkit-docs", "deployment-broker-reference", "--scope", "neighbours"],
    ["read", "realistic", "security.md"],
])
def test_doc_index_and_context_print_the_same_bytes(root: Path, args: list[str]) -> None:
    """``doc-index outline/read NAME`` and ``context outline/read --cache PATH``: what
    the MCP tools send (tests/test_mcp_navigation.py checks that side)."""
    code, out, err = doc_index(root, *args)
    assert (code, err) == (0, b"") and out.endswith(b"}\n")
    command, name, *rest = args
    if command == "read":
        rest = ["--id", rest[0], *rest[1:]]
    assert run(command, "--cache", str(root / name), *rest, module=CONTEXT) == (0, out, b"")


def test_every_answer_stays_within_its_budget(root: Path) -> None:
    """The whole answer as printed, in the estimate resolve uses, at every budget (an
    answer with nothing in it is the summary alone, which a tiny budget cannot hold)."""
    index = DocIndex(root)
    for name in ("mdkit-docs", "rstkit-docs", "realistic"):
        cache = index.cache(name)
        for budget in range(0, 2500, 41):
            answer = cache.outline(budget=budget)
            if answer.outline["listed"]:
                assert estimate_tokens(outline_text(answer)) <= budget, (name, budget)
        ids = [s["id"] for f in cache.outline(budget=10**6).files for s in f["sections"]]
        for section_id in ids[::5]:
            for scope in ("section", "page", "neighbours"):
                for budget in (0, 120, 250, 600, 1500):
                    reading = cache.read(section_id, scope, budget)
                    if reading.documents:
                        assert estimate_tokens(reading_text(reading)) <= budget


def test_paging_loses_nothing(root: Path) -> None:
    """Asking on with ``next`` gives the whole outline; with ``next_line``, every page's
    text in order, byte for byte; each step but the last returns something."""
    cache = DocIndex(root).cache("mdkit-docs")
    whole = cache.outline(budget=10**6)
    assert whole.outline["next"] is None and whole.outline["listed"] == 166
    listed, cursor = [], None
    while True:
        part = cache.outline(budget=250, cursor=cursor)
        assert part.outline["listed"] > 0
        listed += [s["id"] for f in part.files for s in f["sections"]]
        cursor = part.outline["next"]
        if cursor is None:
            break
    assert listed == [s["id"] for f in whole.files for s in f["sections"]]
    for file in whole.files:
        first = file["sections"][0]["id"]
        page = cache.read(first, "page", 10**6)
        assert page.read["next_line"] is None
        assert [d["id"] for d in page.documents] == [s["id"] for s in file["sections"]]
        text = "".join(d["content"] for d in page.documents)
        pieces, line = [], None
        while True:
            step = cache.read(first, "page", 300, line=line)
            assert step.documents
            pieces += [d["content"] for d in step.documents]
            line = step.read["next_line"]
            if line is None:
                break
        assert "".join(pieces) == text, file["file"]


def test_a_section_read_is_cited_as_resolve_cites_it(root: Path) -> None:
    """The same ``source`` object as the resolve document of that section; a cut section
    is marked as resolve marks an excerpt, and its lines are the raw file's."""
    cache = DocIndex(root).cache("rstkit-docs")
    answer = cache.resolve("broker url redis", 8000)
    for doc in answer.documents:
        read = cache.read(doc["id"])
        got = read.documents[0]
        assert got["content"] == doc["content"] and got["tokens"] == doc["tokens"]
        assert got["source"] == doc["source"]
    part = cache.read("deployment-broker-reference", budget=300)
    excerpt = part.documents[0]
    first, last = excerpt["source"]["excerpt"]["lines"]
    assert excerpt["source"]["lines"][0] == first and first <= last
    assert excerpt["source"]["excerpt"]["of_tokens"] == 247
    assert part.read["next_line"] == last + 1
    raw = (root / "rstkit-docs" / "docs" / "deployment.rst").read_text().split("\n")
    assert excerpt["content"] == "".join(line + "\n" for line in raw[first - 1:last])


def test_scopes_and_filters(root: Path) -> None:
    cache = DocIndex(root).cache("mdkit-docs")
    retries = cache.outline(prefix="docs/guide/retries", budget=10**6)
    ids = [s["id"] for s in retries.files[0]["sections"]]
    assert retries.outline["files"] == 1 and len(ids) == 11
    around = cache.read(ids[3], "neighbours")
    assert [d["id"] for d in around.documents] == [ids[2], ids[4]]
    assert [d["id"] for d in cache.read(ids[0], "neighbours").documents] == [ids[1]]
    tops = cache.outline(depth=1, budget=10**6)
    assert all(s["depth"] <= 1 for f in tops.files for s in f["sections"])
    assert tops.outline["files"] == 17
    assert [s["depth"] for s in retries.files[0]["sections"][:3]] == [1, 2, 3]


def test_a_v0_cache_is_one_file_per_document(root: Path) -> None:
    cache = DocIndex(root).cache("realistic")
    outline = json.loads(outline_text(cache.outline()))
    assert [f["file"] for f in outline["files"]] == ["deployment.md", "empty.md",
                                                     "security.md"]
    assert outline["files"][0]["sections"] == [
        {"id": "deployment.md", "title": "", "depth": 0, "tokens": 10}]
    read = cache.read("deployment.md", "page")
    assert read.documents == [{
        "id": "deployment.md", "content": "Deployment deployment deployment guide.",
        "tokens": 10, "source": {"file": "deployment.md", "title": "", "path": [],
                                 "lines": [1, 1]}}]
    assert cache.read("deployment.md", "neighbours").documents == []


@pytest.mark.parametrize(("args", "code", "message"), [
    (["read", "mdkit-docs", "no-such-id"], 2,
     "error: Query is invalid: no section has the id 'no-such-id' in this cache; the "
     "outline lists the ids\n"),
    (["read", "mdkit-docs", "readme-mdkit", "--line", "9999"], 2,
     "error: Query is invalid: line 9999 is past the end of this section\n"),
    (["outline", "mdkit-docs", "--cursor", "gone"], 2,
     "error: Query is invalid: the cursor 'gone' is no section of this outline (the cache "
     "was rebuilt?): ask without a cursor\n"),
    (["outline", "mdkit-docs", "--depth", "-1"], 2,
     "error: Query is invalid: depth must be a whole number from 0\n"),
    (["outline", "mdkit", "--budget", "10"], 4, "did you mean: mdkit-docs?"),
    (["read", "mdkit-docs", "readme-mdkit", "--budget", "lots"], 3, "Budget is invalid"),
    (["read", "mdkit-docs", "readme-mdkit", "--scope", "all"], 1, "invalid choice: 'all'"),
])
def test_errors_say_what_to_do(root: Path, args: list[str], code: int, message: str) -> None:
    got, out, err = doc_index(root, *args)
    assert (got, out) == (code, b"")
    assert message in err.decode("utf-8") and err.count(b"\n") == 1


def test_context_says_the_tools_messages(root: Path) -> None:
    """``context`` prints what the MCP tool's error says: the canonical text of a missing
    cache (a path, no root to look in), the problem of an argument."""
    assert run("read", "--cache", str(root / "nope"), "--id", "x", module=CONTEXT) == (
        4, b"", b"error: Cache does not exist\n")
    code, out, err = run("read", "--cache", str(root / "mdkit-docs"), "--id", "x",
                         module=CONTEXT)
    assert (code, out) == (2, b"")
    assert err == (b"error: Query is invalid: no section has the id 'x' in this cache; the "
                   b"outline lists the ids\n")
