"""Resource limits: what one pathological file, cache or query may cost.

Work is counted (sections, set lookups, parsed lines, bytes), never timed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import manifest, run_cli, v0_cache_from, write_tree

from doc_index.foundation.errors import ContextError
from doc_index.indexer.ids import IdAssigner
from doc_index.indexer.versions import MAX_SECTIONS_PER_FILE
from doc_index.search import operations as search_tools
from doc_index.search import v0_selection
from doc_index.search.query_limits import (
    MAX_QUERY_BYTES,
    WHY_MAX_TERM_CHARS,
    WHY_MAX_TERMS,
    why_terms,
)
from doc_index.server import spec_texts as tools
from doc_index.store.manifest import MAX_MANIFEST_BYTES

CAP = MAX_SECTIONS_PER_FILE


def _headings(n: int, start: int = 0) -> str:
    return "".join(f"# Heading {i}\n\ntext {i}\n\n" for i in range(start, start + n))


# -- a: sections per file --------------------------------------------------------------------

def test_sections_beyond_the_cap_are_cut_into_parts(tmp_path: Path) -> None:
    extra = 40
    text = "intro\n\n" + _headings(CAP - 1 + extra)  # a root section, then the headings
    src = write_tree(tmp_path / "src", {"big.md": text, "small.md": "# Small\n\nbody\n"})
    root = tmp_path / "root"
    done = run_cli("build", str(src), "--root", str(root), "--name", "local-p")
    assert done.returncode == 0, done.stderr
    stderr = done.stderr.decode()
    line = text[: text.index(f"# Heading {CAP - 1}\n")].count("\n") + 1
    assert (f"note big.md: more than {CAP} sections: the rest, from line {line}, cut into 1 "
            "part of about 1000 tokens") in stderr
    sections = [s for s in manifest(root / "local-p")["sections"] if s["file"] == "big.md"]
    assert len(sections) == CAP + 1
    last = sections[-1]
    assert (last["id"], last["title"]) == ("big-part-1", "")
    assert last["byte_offset"] == len(text[: text.index(f"# Heading {CAP - 1}\n")].encode())
    assert last["byte_offset"] + last["byte_length"] == len(text.encode())

    # The sections before the cap are those of the file cut at the cap, ids included.
    cut = text[: text.index(f"# Heading {CAP - 1}\n")]
    src2 = write_tree(tmp_path / "src2", {"big.md": cut, "small.md": "# Small\n\nbody\n"})
    assert run_cli("build", str(src2), "--root", str(root), "--name", "local-q").returncode == 0
    uncapped = [s for s in manifest(root / "local-q")["sections"] if s["file"] == "big.md"]
    assert len(uncapped) == CAP
    assert sections[:-1] == uncapped


def test_equal_headings_get_their_ids_in_linear_work() -> None:
    class CountingSet(set):
        lookups = 0

        def __contains__(self, item: object) -> bool:
            CountingSet.lookups += 1
            return super().__contains__(item)

    ids = IdAssigner()
    ids.used = CountingSet()
    n = 3000
    got = ids.assign("big.md", [("heading", "h", "abcdef")] * n)
    assert got[:4] == ["big-h", "big-h-abcdef", "big-h-abcdef-2", "big-h-abcdef-3"]
    assert got[-1] == f"big-h-abcdef-{n - 1}"
    assert len(set(got)) == n
    assert CountingSet.lookups <= 4 * n


def test_a_capped_file_resolves(tmp_path: Path) -> None:
    src = write_tree(tmp_path / "src", {"big.md": "# h\n" * (CAP + 10)})
    root = tmp_path / "root"
    assert run_cli("build", str(src), "--root", str(root), "--name", "local-h").returncode == 0
    done = run_cli("resolve", "local-h", "h", "--budget", "100", "--root", str(root))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["selection"]["documents_considered"] == CAP + 1  # a part


# -- d: one query cap for every cache kind ---------------------------------------------------

def test_a_4_mb_query_on_a_v0_cache_is_invalid_before_any_document_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    cache = v0_cache_from(tmp_path, {f"d{i}.md": f"word{i} shared text\n" for i in range(30)})
    split_calls: list[int] = []
    real_split = v0_selection.split_white_space

    def counting_split(text: str) -> list[str]:
        split_calls.append(len(text))
        return real_split(text)

    monkeypatch.setattr(v0_selection, "split_white_space", counting_split)
    with pytest.raises(ContextError) as err:
        tools.resolve(cache, "word1 " * 700_000, 2000)
    assert err.value.code == "invalid_query"
    assert split_calls == []  # neither the query nor any document was split
    # At the cap, the query is still answered (as on native caches).
    query = ("word1 " * 700)[:MAX_QUERY_BYTES]
    assert json.loads(tools.resolve(cache, query, 2000))["documents"]


def test_the_context_cli_refuses_a_long_query_on_av0_cache_from(tmp_path: Path) -> None:
    cache = v0_cache_from(tmp_path, {"a.md": "alpha\n"})
    done = run_cli("resolve", "--cache", str(cache), "--query", "w " * 2100, "--budget", "5",
                   module="doc_index.server.context_cli")
    assert done.returncode == 2
    assert done.stdout == b""
    assert done.stderr.decode().startswith("error: ")


# -- e: the response is bounded by the budget ------------------------------------------------

def _distinct_words_query(prefix: str) -> str:
    query = " ".join(f"{prefix}{i}" for i in range(1000))
    return query[:MAX_QUERY_BYTES].rsplit(" ", 1)[0]


def test_a_4_kb_query_answers_within_a_bound_of_the_budget_native(tmp_path: Path) -> None:
    """3,000 small sections that each hold one word of the query. Each document names at
    most WHY_MAX_TERMS query terms (it was every one of the query's 935 terms: 1.4 MB for
    180 sections); now it names the ones it holds, and the whole answer, the echoed 4 KB
    query included, is charged against the budget (search.packing)."""
    text = "".join(f"# Topic {i}\n\nalpha{i} beta{i} shared\n\n" for i in range(3000))
    src = write_tree(tmp_path / "src", {"a.md": text})
    root = tmp_path / "root"
    assert run_cli("build", str(src), "--root", str(root), "--name", "local-m").returncode == 0
    budget = 2000
    answer = tools.resolve(root / "local-m", _distinct_words_query("alpha"), budget)
    result = json.loads(answer)
    assert result["selection"]["documents_selected"] > 0
    for doc in result["documents"]:
        assert 0 < len(doc["why"]["query_terms"]) <= WHY_MAX_TERMS
    assert len(answer.encode()) <= 64 * budget + 2 * MAX_QUERY_BYTES


def test_a_4_kb_query_on_v0_names_every_term_whole(tmp_path: Path) -> None:
    """v0 answers are the reference's bytes for every query within the 4 KB
    cap: every document names every query term, uncut (a URL, a long identifier)."""
    cache = v0_cache_from(tmp_path, {f"d{i}.md": f"alpha{i} text\n" for i in range(400)})
    query = _distinct_words_query("alpha")
    result = json.loads(tools.resolve(cache, query, 2000))
    assert len(result["documents"]) == 400
    for doc in result["documents"]:
        assert doc["why"]["query_terms"] == query.split(" ")
    url = "https://example.com/" + "a" * 100 + "/client"
    cache = v0_cache_from(tmp_path / "url", {"d.md": f"see {url} here\n"})
    done = run_cli("resolve", "--cache", str(cache), "--query", f"{url} here", "--budget",
                   "100", module="doc_index.server.context_cli")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)["documents"][0]
    assert doc["why"] == {"query_terms": [url, "here"], "term_matches": 2, "total_words": 3}


def test_v0_echoes_of_the_query_are_bounded_in_all(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """The bound that keeps the reference's bytes: past MAX_V0_WHY_BYTES of echoed terms
    in one answer the query is refused (invalid_query), never cut."""
    from doc_index.search import query_limits

    cache = v0_cache_from(tmp_path, {f"d{i}.md": f"alpha{i} text\n" for i in range(40)})
    query = "alpha1 alpha2 text"
    echo = len(json.dumps(query.split(" "), separators=(",", ":")))
    monkeypatch.setattr(query_limits, "MAX_V0_WHY_BYTES", echo * 40)
    assert len(json.loads(tools.resolve(cache, query, 2000))["documents"]) == 40
    monkeypatch.setattr(query_limits, "MAX_V0_WHY_BYTES", echo * 40 - 1)
    with pytest.raises(ContextError) as caught:
        tools.resolve(cache, query, 2000)
    assert caught.value.code == "invalid_query"
    assert len(json.loads(tools.resolve(cache, query, 100))["documents"]) < 40  # fewer fit


def test_why_terms_are_cut_to_their_cap() -> None:
    long_term = "x" * 500
    assert why_terms([long_term] * 100) == ["x" * WHY_MAX_TERM_CHARS] * WHY_MAX_TERMS
    assert why_terms(["a", "b"]) == ["a", "b"]


# -- b, c: the size of a cache's manifest ---------------------------------------------------

def test_a_manifest_over_the_limit_is_invalid_without_being_parsed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    cache = tmp_path / "huge"
    cache.mkdir()
    with open(cache / "manifest.json", "wb") as fh:
        fh.write(b'{"index_version":1,"sections":[')
        fh.truncate(MAX_MANIFEST_BYTES + 1)  # sparse: no disk, and no JSON either
    parsed: list[int] = []
    real_parse = search_tools.parse_json
    monkeypatch.setattr(search_tools, "parse_json", lambda data: parsed.append(len(data)) or
                        real_parse(data))
    with pytest.raises(ContextError) as err:
        tools.resolve(cache, "anything", 2000)
    assert err.value.code == "cache_invalid"
    assert parsed == []


def test_a_build_whose_manifest_would_exceed_the_limit_fails_and_keeps_the_live_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    from doc_index.cli import command as cli
    from doc_index.store import manifest as manifest_mod

    def build() -> int:
        return cli.main(["build", str(src), "--root", str(root), "--name", "local-p"])

    src = write_tree(tmp_path / "src", {"a.md": _headings(20)})
    root = tmp_path / "root"
    assert build() == 0
    before = (root / "local-p" / "manifest.json").read_bytes()
    limit = len(before) + 2000
    monkeypatch.setattr(manifest_mod, "MAX_MANIFEST_BYTES", limit)
    write_tree(src, {"b.md": _headings(200)})  # the sections alone pass the limit
    capsys.readouterr()
    assert build() == 1
    err = capsys.readouterr().err
    assert err.startswith("error: the cache would have a manifest over ") and err.count("\n") == 1
    assert (root / "local-p" / "manifest.json").read_bytes() == before
    write_tree(src, {"b.md": _headings(9)})  # the sections fit, the whole manifest does not
    monkeypatch.setattr(manifest_mod, "MAX_MANIFEST_BYTES", len(before) + 1500)
    assert build() == 1
    assert (root / "local-p" / "manifest.json").read_bytes() == before
    left = sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())
    assert [p for p in left if not p.endswith(".lock")  # the parse cache may stay
            and not p.startswith(".doc-index-tmp/")] == ["local-p/a.md",
                                                           "local-p/manifest.json",
                                                           "local-p/search.idx"]
