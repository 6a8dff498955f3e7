"""The Context Engine ``context-compat`` conformance suite, ported to pytest.

Goldens, raw score substrings, exit codes, determinism and JSON Schemas, run through the
real ``context`` CLI (a subprocess) on the vendored fixtures in ``context-engine-compat``.
The MCP and cross-version checks of the suite belong to the MCP server's tests.
"""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from compat_support import (
    CACHES,
    EXPECTED,
    QUERIES,
    SCHEMAS,
    assert_error,
    canonical,
    query,
    run_context,
)
from mcp_support import GOLDENS

from doc_index.foundation.errors import SPEC_MESSAGES, spec_json
from doc_index.server import spec_texts as tools

FIXTURE_CACHES = ["minimal", "realistic", "tie_break", "future_version"]
QUERY_NAMES = sorted(path.stem for path in QUERIES.glob("*.json"))


def resolve_cli(cache: Path, text: str, budget: int, *extra: str) -> bytes:
    proc = run_context(
        "resolve", "--cache", cache, "--query", text, "--budget", str(budget), *extra
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == b""
    return proc.stdout


@pytest.mark.parametrize(("cache", "query_name", "expected"), GOLDENS)
def test_resolve_golden(cache: str, query_name: str, expected: str) -> None:
    golden = (EXPECTED / f"{expected}.json").read_bytes()
    out = resolve_cli(CACHES / cache, *query(query_name))
    assert canonical(out) == canonical(golden)
    # Stronger than the suite: the exact bytes, one trailing newline.
    assert out == golden + b"\n"


@pytest.mark.parametrize(("cache", "query_name", "expected"), GOLDENS)
def test_library_resolve_is_the_cli_bytes(cache: str, query_name: str, expected: str) -> None:
    text = tools.resolve(CACHES / cache, *query(query_name))
    assert text.encode("utf-8") == (EXPECTED / f"{expected}.json").read_bytes() + b"\n"


@pytest.mark.parametrize(
    ("cache", "text", "substring"),
    [
        ("realistic", "deployment", b'"score":0.75'),
        ("realistic", "deployment", b'"score":0.0'),
        ("realistic", "deployment security", b'"score":0.33333334'),
        ("tie_break", "deployment", b'"score":0.5'),
    ],
)
def test_raw_score_substring(cache: str, text: str, substring: bytes) -> None:
    assert substring in resolve_cli(CACHES / cache, text, 4000)


def test_tie_break_orders_equal_scores_by_id() -> None:
    out = json.loads(resolve_cli(CACHES / "tie_break", "deployment", 4000))
    assert [doc["id"] for doc in out["documents"]] == ["a.md", "b.md"]
    assert out["documents"][0]["score"] == out["documents"][1]["score"] == 0.5


# --- exit codes --------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["resolve", "inspect"])
def test_missing_cache_path_exits_4(tmp_path: Path, command: str) -> None:
    extra = ["--query", "x", "--budget", "10"] if command == "resolve" else []
    proc = run_context(command, "--cache", tmp_path / "nope", *extra)
    assert_error(proc, 4, "Cache does not exist")


def test_unparseable_manifest_exits_5(tmp_path: Path) -> None:
    (tmp_path / "manifest.json").write_bytes(b"not valid json")
    proc = run_context("resolve", "--cache", tmp_path, "--query", "x", "--budget", "10")
    assert_error(proc, 5, "Cache exists but is invalid")


def test_directory_without_manifest_resolve_exits_4(tmp_path: Path) -> None:
    """The suite accepts 4 or 5; we say cache_missing (``manifest.json`` not found)."""
    proc = run_context("resolve", "--cache", tmp_path, "--query", "x", "--budget", "10")
    assert_error(proc, 4, "Cache does not exist")


def test_directory_without_manifest_inspect_reports_invalid(tmp_path: Path) -> None:
    """inspect_cache's spec: cache_missing only when the directory is missing; a missing
    manifest is ``valid: false`` (exit 0), where the reference CLI exits 4."""
    (tmp_path / "notes.txt").write_bytes(b"12345")
    proc = run_context("inspect", "--cache", tmp_path)
    assert proc.returncode == 0
    assert proc.stdout == b'{"cache_version":"","document_count":0,"total_bytes":5,"valid":false}\n'


def test_future_version_resolves() -> None:
    """build_config.version is not checked: the suite accepts 0 or 5, we resolve."""
    out = json.loads(resolve_cli(CACHES / "future_version", "hello", 4000))
    assert [doc["id"] for doc in out["documents"]] == ["hello.md"]
    assert out["documents"][0]["score"] == 0.5


# --- determinism -------------------------------------------------------------------------


@pytest.mark.parametrize("cache", FIXTURE_CACHES)
def test_resolve_twice_is_identical(cache: str) -> None:
    text, budget = query("multi_term")
    assert resolve_cli(CACHES / cache, text, budget) == resolve_cli(CACHES / cache, text, budget)
    for name in QUERY_NAMES:
        for pretty in (False, True):
            args = (CACHES / cache, *query(name))
            first = tools.resolve(*args, pretty=pretty)
            assert tools.resolve(*args, pretty=pretty) == first


# --- schemas -----------------------------------------------------------------------------


def validator(name: str) -> jsonschema.Draft202012Validator:
    schema = json.loads((SCHEMAS / f"{name}.schema.json").read_bytes())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


@pytest.mark.parametrize("cache", FIXTURE_CACHES)
@pytest.mark.parametrize("query_name", QUERY_NAMES)
@pytest.mark.parametrize("pretty", [False, True])
def test_resolve_output_matches_schema(cache: str, query_name: str, pretty: bool) -> None:
    text = tools.resolve(CACHES / cache, *query(query_name), pretty=pretty)
    validator("selection_result").validate(json.loads(text))


@pytest.mark.parametrize("cache", FIXTURE_CACHES)
def test_inspect_output_matches_schema(cache: str) -> None:
    proc = run_context("inspect", "--cache", CACHES / cache)
    assert proc.returncode == 0
    validator("inspect_output").validate(json.loads(proc.stdout))


def test_list_caches_output_matches_schema() -> None:
    proc = run_context("list-caches", "--root", CACHES)
    assert proc.returncode == 0
    out = json.loads(proc.stdout)
    validator("list_caches").validate(out)
    assert [entry["path"] for entry in out["caches"]] == sorted(FIXTURE_CACHES)
    assert all(entry["has_manifest"] for entry in out["caches"])


@pytest.mark.parametrize("code", sorted(SPEC_MESSAGES))
def test_error_text_matches_schema(code: str) -> None:
    validator("mcp_error").validate(json.loads(spec_json(code)))


def test_cache_missing_error_text_is_the_golden() -> None:
    golden = json.loads((EXPECTED / "mcp_error_cache_missing.json").read_bytes())
    assert golden["content"][0]["text"] == spec_json("cache_missing")


# --- inspect: our documented deviation ---------------------------------------------------


@pytest.mark.parametrize("cache", ["minimal", "realistic"])
def test_inspect_prints_what_inspect_cache_returns(cache: str) -> None:
    """Deviation by design (DESIGN.md): ``context inspect`` prints what the
    ``context.inspect_cache`` tool returns, compact JSON plus newline, with ``total_bytes``
    = the regular files directly in the cache directory (manifest.json and index.json
    for a v0 cache). The suite's ``expected/inspect_<cache>.json`` are the reference
    CLI's pretty output whose total_bytes counts document files instead, so only
    ``cache_version``, ``document_count`` and ``valid`` agree with them."""
    directory = CACHES / cache
    total = sum(p.stat().st_size for p in directory.iterdir() if p.is_file() and not p.is_symlink())
    manifest = json.loads((directory / "manifest.json").read_bytes())
    expected = (
        f'{{"cache_version":"{manifest["cache_version"]}",'
        f'"document_count":{manifest["document_count"]},"total_bytes":{total},"valid":true}}\n'
    )
    proc = run_context("inspect", "--cache", directory)
    assert proc.returncode == 0
    assert proc.stdout == expected.encode()
    golden = json.loads((EXPECTED / f"inspect_{cache}.json").read_bytes())
    out = json.loads(proc.stdout)
    for key in ("cache_version", "document_count", "valid"):
        assert out[key] == golden[key]
