"""The library API (``import doc_index``) used as a library: objects back, typed errors
raised, nothing printed; and the one budget rule and error table every door shares."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import SAFETY_TIMEOUT, SAMPLE_REPOS, run_cli
from doc_index.search.results import Answer, CacheEntry, CacheInfo

import doc_index
from doc_index.foundation.errors import (
    EXIT_CODES,
    BadSource,
    BudgetError,
    DocIndexError,
    IoError,
    UsageError,
)
from doc_index.render import listing
from doc_index.render import spec_json as jsonout

KEY = "local-mdkit-docs"
QUERY = "my request times out, how do I retry it?"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "root"


def test_build_list_inspect_resolve_delete_as_a_library(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = doc_index.build(SAMPLE_REPOS / "mdkit-docs", root=root, name=KEY)
    assert isinstance(report, doc_index.BuildReport)
    assert report.key == KEY and report.written and report.sections > 0
    again = doc_index.build(str(SAMPLE_REPOS / "mdkit-docs"), root=root, name=KEY)
    assert not again.written and again.parsed == []

    assert doc_index.list_caches(root) == [CacheEntry(KEY, True)]
    info = doc_index.inspect(KEY, root=root)
    assert isinstance(info, CacheInfo) and info.valid and info.document_count == report.sections

    answer = doc_index.resolve(KEY, QUERY, 600, root=root)
    assert isinstance(answer, Answer) and answer.documents
    assert answer.selection["tokens_used"] <= 600
    assert answer.documents[0]["id"] == "retries-and-timeouts-respecting-retry-after"
    assert doc_index.resolve(KEY, QUERY, "600", root=root) == answer

    assert doc_index.delete(KEY, root=root) is None
    with pytest.raises(doc_index.CacheMissing) as missing:
        doc_index.delete(KEY, root=root)
    assert missing.value.code == "cache_missing" and missing.value.exit_code == 4
    assert doc_index.list_caches(root) == []
    assert capsys.readouterr() == ("", "")  # the library never prints


def test_the_objects_render_to_the_cli_bytes(root: Path) -> None:
    doc_index.build(SAMPLE_REPOS / "mdkit-docs", root=root, name=KEY)
    for args, text in (
        (["list", "--json"], listing.list_json(doc_index.describe_caches(root))),
        (["inspect", KEY, "--json"], listing.details_json(doc_index.describe(KEY, root=root))),
        (["resolve", KEY, QUERY, "--budget", "600"],
         jsonout.answer_text(doc_index.resolve(KEY, QUERY, 600, root=root))),
    ):
        done = run_cli(*args, "--root", str(root))
        assert done.returncode == 0, done.stderr
        assert done.stdout == text.encode("utf-8")


def test_errors_are_typed_and_carry_their_exit_code(
    root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc_index.build(SAMPLE_REPOS / "mdkit-docs", root=root, name=KEY)
    cases: list[tuple[object, str]] = []
    for call in (
        lambda: doc_index.resolve("no-such-cache", QUERY, 600, root=root),
        lambda: doc_index.resolve(KEY, QUERY, " 600", root=root),
        lambda: doc_index.resolve(KEY, QUERY, True, root=root),  # type: ignore[arg-type]
        lambda: doc_index.inspect("../x", root=root),
        lambda: doc_index.build(tmp_path / "missing", root=root),
        lambda: doc_index.build(SAMPLE_REPOS / "mdkit-docs", root=root, name="a/b"),
        lambda: doc_index.build(SAMPLE_REPOS / "mdkit-docs", root=root, max_file_bytes=0),
        lambda: doc_index.install_hooks(tmp_path, root=root),
    ):
        with pytest.raises(DocIndexError) as err:
            call()
        cases.append((type(err.value), err.value.code))
    assert cases == [
        (doc_index.CacheMissing, "cache_missing"),  # naming the cache, for people
        (BudgetError, "invalid_budget"),
        (BudgetError, "invalid_budget"),
        (doc_index.CacheMissing, "cache_missing"),
        (IoError, "io_error"),
        (cases[5][0], "usage"),
        (UsageError, "usage"),
        (BadSource, "usage"),  # not a git work tree: the path is wrong
    ]
    assert issubclass(doc_index.CacheMissing, doc_index.ContextError)
    assert issubclass(cases[5][0], UsageError)  # InvalidCacheKey
    assert capsys.readouterr() == ("", "")


@pytest.mark.parametrize("budget", ["1_000", "+500", " 500", "500 ", "٥٠٠", "5e2", "0x10",
                                    "10000001", "-1", "9" * 19])
def test_every_door_refuses_the_same_budget_strings(root: Path, budget: str) -> None:
    """``doc-index resolve`` used int(): it took ``1_000``, ``+500`` and `` 500``; now it
    takes what ``context resolve`` takes (an optional ``-`` and 1-18 ASCII digits, in range)."""
    doc_index.build(SAMPLE_REPOS / "mdkit-docs", root=root, name=KEY)
    doc = run_cli("resolve", KEY, QUERY, "--budget", budget, "--root", str(root))
    context = subprocess.run(
        [sys.executable, "-m", "doc_index.server.context_cli", "resolve", "--cache",
         str(root / KEY), "--query", QUERY, "--budget", budget],
        capture_output=True, timeout=SAFETY_TIMEOUT)
    assert (context.returncode, context.stdout, context.stderr) == (
        EXIT_CODES["invalid_budget"], b"", b"error: Budget is invalid\n")
    # ``doc-index`` also says why, for people (tests/test_cli_words.py has the exact lines)
    assert (doc.returncode, doc.stdout) == (EXIT_CODES["invalid_budget"], b"")
    assert doc.stderr.startswith(b"error: Budget is invalid: ") and doc.stderr.count(b"\n") == 1
    assert b"from 0 to 10000000" in doc.stderr


def test_importing_the_package_loads_nothing_else() -> None:
    code = ("import sys, doc_index; print(sorted(m for m in sys.modules "
            "if m.startswith('doc_index')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=SAFETY_TIMEOUT, check=True)
    assert json.loads(done.stdout.replace("'", '"')) == ["doc_index"]
    assert set(doc_index.__all__) >= {"build", "list_caches", "inspect", "resolve", "delete",
                                      "install_hooks", "uninstall_hooks"}


def test_the_store_never_imports_a_door() -> None:
    """``store`` is library: it imports neither the CLI nor its build output."""
    import ast

    doors = {"cli", "build", "demo"}
    found = []
    for path in sorted((Path(__file__).resolve().parents[1] / "store").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == 2 and (
                    node.module in doors or node.module is None
                    and {alias.name for alias in node.names} & doors):
                found.append(f"{path.name}:{node.lineno}")
            elif isinstance(node, ast.ImportFrom | ast.Import):
                names = [node.module or ""] if isinstance(node, ast.ImportFrom) else [
                    alias.name for alias in node.names]
                found += [f"{path.name}:{node.lineno}" for name in names
                          if name in {f"doc_index.{door}" for door in doors}]
    assert found == []


def test_the_cli_in_process_leaves_the_api_functions_in_place(tmp_path: Path) -> None:
    """Running a command in-process imports its door module; no door module may shadow an
    API function of the same name (``doc_index.build`` stayed the ``build`` module once
    ``doc-index build`` had run, and a library caller got a module back)."""
    from doc_index import cli

    assert cli.main(["build", str(SAMPLE_REPOS / "mdkit-docs"), "--root", str(tmp_path),
                     "--name", KEY]) == 0
    for name in doc_index.__all__:
        assert not isinstance(getattr(doc_index, name), type(sys)), name


def test_an_unexpected_error_never_shows_a_urls_secrets() -> None:
    """The last line of defence (``errors.describe``) redacts what an error it did not
    expect may quote: a URL's user info and query."""
    from doc_index.foundation.errors import describe

    url = "https://user:s3cret@example.com/o/r.git?private_token=t0ken"
    for exc in (RuntimeError(f"failed on {url}"), OSError(2, f"no such thing {url}", url)):
        line = describe(exc)
        assert "s3cret" not in line and "t0ken" not in line and "user" not in line, line
        assert "https://example.com/o/r.git" in line
