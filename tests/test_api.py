"""The library (``import doc_index``) used as a library: ``DocIndex`` and ``Cache``, objects
back, typed errors raised, nothing printed; and the one budget rule and error table every
door shares."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import SAFETY_TIMEOUT, SAMPLE_REPOS, run_cli

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
from doc_index.search.results import Answer

KEY = "local-mdkit-docs"
QUERY = "my request times out, how do I retry it?"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "root"


def test_build_list_inspect_resolve_delete_as_a_library(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    index = doc_index.DocIndex(root)
    report = index.build(SAMPLE_REPOS / "mdkit-docs", name=KEY)
    assert isinstance(report, doc_index.BuildReport)
    assert report.key == KEY and report.written and report.sections > 0
    again = index.build(str(SAMPLE_REPOS / "mdkit-docs"), name=KEY)
    assert not again.written and again.parsed == []

    assert [(c.name, c.has_manifest) for c in index.caches()] == [(KEY, True)]
    info = index.cache(KEY).info()
    assert isinstance(info, doc_index.CacheDetails)
    assert info.valid and info.sections == report.sections and info.format == "doc-index"

    answer = index.cache(KEY).resolve(QUERY, 600)
    assert isinstance(answer, Answer) and answer.documents
    assert answer.selection["tokens_used"] <= 600
    assert answer.documents[0]["id"] == "retries-and-timeouts-respecting-retry-after"
    assert doc_index.Cache(root / KEY).resolve(QUERY, 600) == answer  # a cache by its path

    cache = index.cache(KEY)
    assert cache.delete() is None
    with pytest.raises(doc_index.CacheMissing) as missing:
        cache.delete()
    assert missing.value.code == "cache_missing" and missing.value.exit_code == 4
    assert index.caches() == []
    assert capsys.readouterr() == ("", "")  # the library never prints


def test_the_objects_render_to_the_cli_bytes(root: Path) -> None:
    index = doc_index.DocIndex(root)
    index.build(SAMPLE_REPOS / "mdkit-docs", name=KEY)
    for args, text in (
        (["list", "--json"], listing.list_json([c.info() for c in index.caches()])),
        (["inspect", KEY, "--json"], listing.details_json(index.cache(KEY).info())),
        (["resolve", KEY, QUERY, "--budget", "600"],
         jsonout.answer_text(index.cache(KEY).resolve(QUERY, 600))),
    ):
        done = run_cli(*args, "--root", str(root))
        assert done.returncode == 0, done.stderr
        assert done.stdout == text.encode("utf-8")


def test_errors_are_typed_and_carry_their_exit_code(
    root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    index = doc_index.DocIndex(root)
    index.build(SAMPLE_REPOS / "mdkit-docs", name=KEY)
    cases: list[tuple[object, str]] = []
    for call in (
        lambda: index.cache("no-such-cache"),
        lambda: index.cache(KEY).resolve(QUERY, " 600"),  # type: ignore[arg-type]
        lambda: index.cache(KEY).resolve(QUERY, True),
        lambda: index.cache("../x"),
        lambda: index.build(tmp_path / "missing"),
        lambda: index.build(SAMPLE_REPOS / "mdkit-docs", name="a/b"),
        lambda: index.build(SAMPLE_REPOS / "mdkit-docs", max_file_bytes=0),
        lambda: index.install_hooks(tmp_path),
        lambda: doc_index.DocIndex(""),
    ):
        with pytest.raises(DocIndexError) as err:
            call()
        cases.append((type(err.value), err.value.code))
    assert cases == [
        (doc_index.CacheMissing, "cache_missing"),  # naming the cache, for people
        (BudgetError, "invalid_budget"),  # a budget is an int: text is the door's to parse
        (BudgetError, "invalid_budget"),
        (doc_index.CacheMissing, "cache_missing"),
        (IoError, "io_error"),
        (UsageError, "usage"),  # the name is no path component
        (UsageError, "usage"),
        (BadSource, "usage"),  # not a git work tree: the path is wrong
        (UsageError, "usage"),  # an empty root would name the current directory
    ]
    assert issubclass(doc_index.CacheMissing, doc_index.ContextError)
    assert capsys.readouterr() == ("", "")


@pytest.mark.parametrize("budget", ["1_000", "+500", " 500", "500 ", "٥٠٠", "5e2", "0x10",
                                    "10000001", "-1", "9" * 19])
def test_every_door_refuses_the_same_budget_strings(root: Path, budget: str) -> None:
    """``doc-index resolve`` used int(): it took ``1_000``, ``+500`` and `` 500``; now it
    takes what ``context resolve`` takes (an optional ``-`` and 1-18 ASCII digits, in range)."""
    doc_index.DocIndex(root).build(SAMPLE_REPOS / "mdkit-docs", name=KEY)
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
    assert set(doc_index.__all__) >= {"DocIndex", "Cache", "build_v0", "DocIndexError"}


def test_the_cli_in_process_leaves_the_api_functions_in_place(tmp_path: Path) -> None:
    """Running a command in-process imports its door module; no door module may shadow an
    API function of the same name (``doc_index.build`` stayed the ``build`` module once
    ``doc-index build`` had run, and a library caller got a module back)."""
    from doc_index.cli import command as cli

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
