"""Budget packing of native answers, the rules of ``search.packing``: the budget bounds
what the agent receives and the packing keeps the best answer:
the whole answer's charge stays within the budget; an oversized best section comes back
as a marked excerpt cut at a block boundary; short sections come last; a budget
too small for anything says how many sections matched; same bytes across builds."""

from __future__ import annotations

import builtins
import json
from pathlib import Path

import pytest
from conftest import build, run_cli, write_tree

from doc_index.foundation.strict_json import dumps
from doc_index.indexer.tokens import estimate_tokens
from doc_index.search import packing
from doc_index.search.native_selection import select
from doc_index.search.packing import block_starts, doc_charge, frame_charge, is_navigation
from doc_index.search.ranking import rank
from doc_index.store.native_cache import NativeCache, load_native_cache

FILLER = ("The service reads its settings once at start and keeps them for the whole "
          "run, so a change needs a restart of every process that uses them. ")
LONG = (
    "# Retrying Failed Uploads\n\n"
    + "".join(f"{FILLER}Part {i} of the overview.\n\n" for i in range(6))
    + "```python\nclient = Client(\n\n    retries=3,\n)\n```\n\n"
    + "To retry a failed upload, set `retries` on the client: every failed upload is "
    "retried with a growing backoff, and an upload that fails three times raises.\n\n"
    + "".join(f"{FILLER}Closing part {i}.\n\n" for i in range(6))
)
DOCS = {
    "retry.md": LONG,
    "stub.md": "# Retry Upload\n\nSee retry.\n",
    "nav.rst": ("Guides\n======\n\n.. toctree::\n   :maxdepth: 2\n\n"
                "   retry-failed-upload\n   storage\n   weak\n"),
    "other.md": "# Storage\n\nAn upload goes to the bucket the settings name.\n",
    "weak.md": ("# Notes\n\n" + FILLER * 3 + "A failed job may be retried by hand.\n"),
}
QUERY = "retry a failed upload"


def _whole_charge(result: dict) -> int:
    """What the packer charged: the frame and each document's JSON."""
    sel = result["selection"]
    return frame_charge(sel["query"], sel["budget"], sel["documents_considered"]) + sum(
        doc_charge(d) for d in result["documents"])


def test_oversized_best_section_comes_back_as_a_marked_excerpt(cache: NativeCache) -> None:
    whole = select(cache, QUERY, 100_000)["documents"][0]
    assert whole["id"] == "retry-retrying-failed-uploads" and "excerpt" not in whole["source"]
    budget = 400
    assert doc_charge(whole) > budget
    result = select(cache, QUERY, budget)
    best = result["documents"][0]
    assert best["id"] == whole["id"] and best["version"] == whole["version"]
    excerpt = best["source"].pop("excerpt")
    assert best["source"] == whole["source"]  # the section's own file, path and lines
    first, last = excerpt["lines"]
    assert excerpt["of_tokens"] == whole["tokens"] > best["tokens"]
    assert best["tokens"] == estimate_tokens(best["content"])
    # Whole lines of the section, cut where a block starts: after a blank line, at the
    # left margin, never inside the fenced code block (its blank line included).
    lines = whole["content"].splitlines(True)
    start = first - whole["source"]["lines"][0]
    assert "".join(lines[start:start + last - first + 1]) == best["content"]
    assert start in block_starts(lines, fine=False)
    assert best["content"].count("```") % 2 == 0
    # The window with the most query-term occurrences: the paragraph about retries.
    assert "To retry a failed upload" in best["content"]
    assert best["why"]["term_matches"] >= best["content"].lower().count("upload")
    assert result["selection"]["tokens_used"] == sum(d["tokens"] for d in result["documents"])
    assert _whole_charge(result) <= budget


def test_block_starts_keep_code_blocks_and_indented_text_whole() -> None:
    lines = ["# T\n", "\n", "para one\n", "still one\n", "\n", "```\n", "code\n", "\n",
             "more code\n", "```\n", "\n", "    indented\n", "\n", "last\n"]
    assert block_starts(lines, fine=False) == [0, 2, 5, 13]
    assert block_starts(lines, fine=True) == [0, 2, 3, 5, 13]


def test_tables_of_contents_never_take_budget_and_short_sections_come_last(
        cache: NativeCache) -> None:
    ranked = [sid for _, sid, _ in rank(cache, QUERY)]
    short, toc = "stub-retry-upload", "nav-guides"
    assert short in ranked and toc in ranked  # they match, and rank
    ids = [d["id"] for d in select(cache, QUERY, 100_000)["documents"]]
    assert toc not in ids
    assert ids[-1] == short and "weak-notes" in ids  # after every longer match
    result = select(cache, QUERY, 100_000)
    # Not used is not "excluded by budget": nothing was left out for lack of room.
    assert result["selection"]["documents_excluded_by_budget"] == 0


def test_a_short_section_is_answered_when_it_is_the_only_match(tmp_path: Path) -> None:
    """``# Space Name`` / ``spacenamemarker here`` is short, not a stub: dropped as one,
    the answer would be empty; a section that is only its heading is still never used."""
    build(write_tree(tmp_path / "src", {
        "a.md": "# Space Name\n\nspacenamemarker here\n\n# Timeout\n\n## Other\n\nText.\n",
        "api.md": "# Client\n\n## timeout\n\nSeconds to wait.\n",
    }), tmp_path / "root")
    loaded = load_native_cache(tmp_path / "root" / "local-src")
    got = select(loaded, "spacenamemarker", 2000)["documents"]
    assert [d["id"] for d in got] == ["a-space-name"]
    assert got[0]["content"] == "# Space Name\n\nspacenamemarker here\n\n"
    got = select(loaded, "timeout seconds", 2000)["documents"]
    assert [d["id"] for d in got] == ["api-timeout"]  # not the heading-only "Timeout"


def test_navigation_is_only_toctrees_and_bare_links() -> None:
    assert is_navigation("Notes\n=====\n\n.. toctree::\n   :maxdepth: 2\n\n   design\n",
                         "Notes")
    assert is_navigation("# Guide\n\n- [One](one.md)\n1. [Two](two.md)\n", "Guide")
    assert not is_navigation("# Guide\n\nRead these first:\n\n- [One](one.md)\n", "Guide")
    assert not is_navigation("Notes\n=====\n\n.. toctree::\n\n   design\n\nMore text.\n",
                             "Notes")
    assert is_navigation("# API\n\n```{toctree}\n:maxdepth: 1\n\napi/app\n```\n", "API")
    assert not is_navigation("# API\n\n```{toctree}\napi/app\n```\n\nSee also.\n", "API")


def test_small_budgets_get_an_excerpt_of_the_best_section(cache: NativeCache) -> None:
    """From budget 0 up: nothing until one document's charge fits; the best section comes
    back as an excerpt (it never fits whole in these budgets) from under 300 tokens on;
    the charge never exceeds the budget."""
    best_from = None
    for budget in range(0, 400, 5):
        result = select(cache, QUERY, budget)
        sel = result["selection"]
        if not result["documents"]:
            # retry, weak and the short stub; the table of contents is never counted
            assert sel["documents_excluded_by_budget"] == 3
            continue
        assert _whole_charge(result) <= budget
        best = result["documents"][0]
        if best["id"] == "retry-retrying-failed-uploads":
            assert "excerpt" in best["source"] and best["why"]["term_matches"] > 0
            best_from = best_from or budget
        else:
            assert best_from is None  # once the best section fits, it stays first
    assert best_from is not None and best_from <= 300


def test_budget_50_and_0_say_that_sections_matched(cache: NativeCache) -> None:
    for budget in (0, 50):
        result = select(cache, QUERY, budget)
        assert result["documents"] == []
        assert result["selection"] == {
            "query": QUERY, "budget": budget, "tokens_used": 0,
            "documents_considered": len(cache.sections), "documents_selected": 0,
            "documents_excluded_by_budget": 3}


@pytest.mark.parametrize("query", [QUERY, "settings restart process", "client uploads",
                                   "service"])
def test_whole_answer_stays_within_the_budget(cache: NativeCache, query: str) -> None:
    """Measured with the project's own estimator (the BPE check is bench/answer_tokens.py):
    the rendered answer's estimate, and the packer's charge, never exceed the budget."""
    frame = frame_charge(query, 10_000, len(cache.sections))
    for budget in (frame, 150, 300, 500, 1000, 2000, 8000):
        result = select(cache, query, budget)
        assert _whole_charge(result) <= budget
        assert estimate_tokens(dumps(result)) <= budget
        sel = result["selection"]
        assert sel["tokens_used"] == sum(d["tokens"] for d in result["documents"]) <= budget


def test_same_answer_bytes_across_two_builds(cache_dir: Path, tmp_path: Path) -> None:
    src = write_tree(tmp_path / "again" / "docs", DOCS)
    build(src, tmp_path / "root2", full=True)
    other = load_native_cache(tmp_path / "root2" / "local-docs")
    first = load_native_cache(cache_dir)
    try:
        for budget in (0, 50, 250, 400, 900, 100_000):
            one = dumps(select(first, QUERY, budget))
            assert one == dumps(select(other, QUERY, budget)), budget
            json.loads(one)
    finally:
        other.close()
        first.close()


def test_excerpts_after_the_first_document_carry_more_than_their_metadata(
        tmp_path: Path) -> None:
    """Below the first document, an excerpt whose content is smaller than its own
    metadata's charge is not returned: crumbs do not earn their tokens."""
    para = ("A failed upload is retried after a pause, and the pause grows with every "
            "retry of the upload. ")
    docs = {f"{name}.md": f"# {title}\n\n" + "".join(f"{para}Step {i}.\n\n" for i in range(n))
            for name, title, n in (("a", "Upload Retries", 12), ("b", "Notes", 30))}
    build(write_tree(tmp_path / "src" / "docs", docs), tmp_path / "root", full=True)
    cache = load_native_cache(tmp_path / "root" / "local-docs")
    later = 0
    try:
        for budget in range(300, 2500, 20):
            result = select(cache, "retry upload", budget)
            assert _whole_charge(result) <= budget
            for doc in result["documents"][1:]:
                if "excerpt" not in doc["source"]:
                    continue
                later += 1
                first = doc["source"]["lines"][0]
                empty = {**doc, "content": "", "tokens": 0,
                         "why": {"query_terms": [], "term_matches": 0, "total_words": 0},
                         "source": {**doc["source"],
                                    "excerpt": {"lines": [first, first], "of_tokens": 0}}}
                assert doc["tokens"] >= doc_charge(empty), budget
    finally:
        cache.close()
    assert later  # the rule was exercised


def test_doc_index_resolve_answers_a_short_section(tmp_path: Path) -> None:
    """Through the real command: the only match is a one-line section."""
    src = write_tree(tmp_path / "src", {"a.md": "# Space Name\n\nspacenamemarker here\n"})
    root = tmp_path / "root"
    assert run_cli("build", str(src), "--root", str(root), "--name", "t").returncode == 0
    done = run_cli("resolve", "t", "spacenamemarker", "--budget", "2000", "--root", str(root))
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert [d["id"] for d in answer["documents"]] == ["a-space-name"]


# --------------------------------------------------------------------------- excerpts
# An excerpt of an oversized section: its source.excerpt.lines are the file's lines (only
# \n ends one, as source.lines counts them), and finding the best window is linear in
# the section's blocks.


# Characters str.splitlines ends a line at, but no file line count does.
SEPARATORS = ["\r", "\f", "\x1c", "\x85", "\u2028", "\u2029"]


@pytest.mark.parametrize("sep", SEPARATORS, ids=[f"U+{ord(s):04X}" for s in SEPARATORS])
def test_excerpt_lines_are_the_files_lines(tmp_path: Path, sep: str) -> None:
    text = ("# Title\n\n" + "".join(f"word{i} filler{sep}" for i in range(400)) + "\n"
            + "".join(f"line {i} retry\n" for i in range(5)) + "\n# Next\n\nother\n")
    docs = write_tree(tmp_path / "docs", {"a.md": text})
    build(docs, tmp_path / "root", full=True)
    cache = load_native_cache(tmp_path / "root" / "local-docs")
    try:
        [doc] = select(cache, "retry", 300)["documents"]
    finally:
        cache.close()
    first, last = doc["source"]["excerpt"]["lines"]
    lo, hi = doc["source"]["lines"]
    assert lo <= first <= last <= hi, doc["source"]
    raw = (tmp_path / "root" / "local-docs" / "a.md").read_text()  # (a lone \r reads as \n)
    assert "".join(raw.split("\n")[first - 1:last]) == doc["content"].replace("\n", "")


def test_the_best_window_sums_each_blocks_hits_a_bounded_number_of_times(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocks = 4000
    docs = write_tree(tmp_path / "docs", {"a.md": "# Title\n\n" + "retry x\n\n" * blocks})
    build(docs, tmp_path / "root", full=True)
    summed = 0

    def counting_sum(values: object, *start: int) -> int:
        nonlocal summed
        if isinstance(values, list):
            summed += len(values)
        return builtins.sum(values, *start)  # type: ignore[call-overload]

    monkeypatch.setattr(packing, "sum", counting_sum, raising=False)
    cache = load_native_cache(tmp_path / "root" / "local-docs")
    try:
        [doc] = select(cache, "retry", 8000)["documents"]
    finally:
        cache.close()
    assert "excerpt" in doc["source"]
    assert summed <= 4 * blocks, summed  # summing every run was blocks x run length


def test_an_excerpt_is_looked_for_in_the_sections_first_512_ki_characters_only(
        tmp_path: Path) -> None:
    """A section of 600 KB whose only query term lies past its first 512 Ki characters
    gets no excerpt (an excerpt holds a query term), so a hostile 9 MB section cannot
    cost seconds of CPU on every answer; one whose term is early gets it as before."""
    filler = "".join(f"plain paragraph {i} of filler text here\n\n" for i in range(15000))
    assert 512 * 1024 < len(filler) < 10 * 1024 * 1024
    docs = write_tree(tmp_path / "docs", {
        "late.md": "# Late\n\n" + filler + "the zebrafish paragraph\n",
        "early.md": "# Early\n\nthe zebrafish paragraph\n\n" + filler})
    build(docs, tmp_path / "root", full=True)
    cache = load_native_cache(tmp_path / "root" / "local-docs")
    try:
        answer = select(cache, "zebrafish", 2000)
    finally:
        cache.close()
    assert [d["source"]["file"] for d in answer["documents"]] == ["early.md"]
    [early] = answer["documents"]
    assert early["source"]["excerpt"]["lines"][0] <= 3 and "zebrafish" in early["content"]
    assert answer["selection"]["documents_excluded_by_budget"] == 1
